#!/usr/bin/env bash
# Builds the split APK set of the set workloads (issue 18) in $2 from the base APK $1 (the corpus's webapp.apk,
# about 20 MB): base.apk plus four configuration splits assembled with aapt from manifests of their own
# (split="config.…"), as Play delivers them: arm64-v8a (a 2 MiB native library), xxhdpi (200 KB of images),
# fr and de (a few KB each). The splits carry the base's package and versionCode. Kept once complete (.done).
# Usage: set.sh BASE.apk SET_DIR
set -euo pipefail
base=$1 set=$2
[ -f "$set/.done" ] && exit 0
FRAMEWORK=/usr/share/android-framework-res/framework-res.apk
rm -rf "$set"; mkdir -p "$set"
badging=$(aapt dump badging "$base" | head -1)
package=$(sed -n "s/^package: name='\([^']*\)'.*/\1/p" <<<"$badging")
version=$(sed -n "s/.*versionCode='\([^']*\)'.*/\1/p" <<<"$badging")
cp "$base" "$set/base.apk"
split() { # split NAME FILE SIZE: a config split holding FILE (SIZE bytes of random data)
    local name=$1 file=$2 size=$3 work
    work=$(mktemp -d)
    cat > "$work/AndroidManifest.xml" <<XML
<manifest xmlns:android="http://schemas.android.com/apk/res/android" package="$package"
    android:versionCode="$version" split="$name"><application android:hasCode="false"/></manifest>
XML
    aapt package -f -M "$work/AndroidManifest.xml" -I "$FRAMEWORK" -F "$set/split_$name.apk" >/dev/null
    mkdir -p "$work/$(dirname "$file")"
    head -c "$size" /dev/urandom > "$work/$file"
    (cd "$work" && aapt add -0 so -0 png "$set/split_$name.apk" "$file" >/dev/null)
    rm -rf "$work"
}
split config.arm64_v8a lib/arm64-v8a/libbench.so 2097152
split config.xxhdpi res/drawable-xxhdpi-v4/bench.png 204800
split config.fr assets/bench-fr.txt 4096
split config.de assets/bench-de.txt 4096
touch "$set/.done"
