#!/usr/bin/env bash
# Builds the benchmark corpus in $1 (default bench-work/corpus) with real tools:
#   webapp.apk          a Cordova-like web app built by aapt against framework-res.apk: index.html, 300 JS files,
#                       120 images of incompressible random bytes, a native library and a dex (about 20 MB)
#   framework-res.apk   Debian's android-framework-res (45 MB, about 7,600 entries), copied as is
#   synthetic-100m.apk  aapt-built, about 100 MB: 1 MiB incompressible assets (stored) and JS text (deflated)
#   synthetic-400m.apk  the same at 400 MB
# BENCH_QUICK=1 makes a small web app (30 JS, 12 images), a 20 MB synthetic APK and no 400 MB one.
# Existing files are kept (delete the folder to rebuild); a .done marker says a file is complete.
set -euo pipefail
CORPUS=${1:-bench-work/corpus}
FRAMEWORK=/usr/share/android-framework-res/framework-res.apk
mkdir -p "$CORPUS"
CORPUS=$(cd "$CORPUS" && pwd)
log() { printf '[corpus %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

if [ "${BENCH_QUICK:-0}" = 1 ]; then
    JS_FILES=30; IMAGES=12; SYNTHETIC_SIZES="20"
else
    JS_FILES=300; IMAGES=120; SYNTHETIC_SIZES="100 400"
fi

manifest() { # manifest PACKAGE LABEL
    cat <<XML
<?xml version="1.0" encoding="utf-8"?>
<manifest xmlns:android="http://schemas.android.com/apk/res/android"
    package="$1" android:versionCode="1" android:versionName="1.0">
    <uses-sdk android:minSdkVersion="24" android:targetSdkVersion="33" />
    <uses-permission android:name="android.permission.INTERNET" />
    <application android:label="@string/app_name" android:hardwareAccelerated="true">
        <activity android:name="org.apache.cordova.MainActivity" android:exported="true"
            android:configChanges="orientation|keyboardHidden|screenSize">
            <intent-filter>
                <action android:name="android.intent.action.MAIN" />
                <category android:name="android.intent.category.LAUNCHER" />
            </intent-filter>
        </activity>
    </application>
</manifest>
XML
}

# js_text N: about 20 KB of plausible, compressible JavaScript, different for each N.
js_text() {
    local n=$1 i
    printf '/* module %d, generated for the apkpatch benchmark */\n(function (exports) {\n  "use strict";\n' "$n"
    for i in $(seq 1 160); do
        printf '  exports.handler%d_%d = function (event, state) { if (!state) { return null; } return state.items.filter(function (x) { return x.id === %d && x.kind !== "%s"; }).length + %d; };\n' "$n" "$i" "$((n * 1000 + i))" "k$((i % 7))" "$i"
    done
    printf '})(window.cordovaModule%d = {});\n' "$n"
}

# aapt_package DIR OUT: the res/ + assets/ + AndroidManifest.xml in DIR into OUT, then `aapt add` of lib/ and classes.dex.
aapt_package() {
    local dir=$1 out=$2
    ( cd "$dir"
      aapt package -f -M AndroidManifest.xml -S res -A assets -I "$FRAMEWORK" -0 bin -0 png -F "$out.tmp" >/dev/null
      extra=$(find lib classes.dex -type f 2>/dev/null | sort || true)
      if [ -n "$extra" ]; then aapt add "$out.tmp" $extra >/dev/null; fi )
    mv "$out.tmp" "$out"
}

build_webapp() {
    local out=$CORPUS/webapp.apk
    [ -f "$out.done" ] && return 0
    log "webapp.apk: $JS_FILES JS files, $IMAGES images, a .so and a dex"
    local dir; dir=$(mktemp -d "$CORPUS/webapp-src.XXXX")
    mkdir -p "$dir/res/values" "$dir/assets/www/js" "$dir/assets/www/img" "$dir/assets/www/css" "$dir/lib/arm64-v8a"
    manifest com.example.benchweb "Bench Web" > "$dir/AndroidManifest.xml"
    printf '<?xml version="1.0" encoding="utf-8"?>\n<resources><string name="app_name">Bench Web</string></resources>\n' > "$dir/res/values/strings.xml"
    { printf '<!doctype html>\n<html><head><meta charset="utf-8"><title>Bench</title><link rel="stylesheet" href="css/app.css">\n'
      for i in $(seq 0 $((JS_FILES - 1))); do printf '<script src="js/module%03d.js"></script>\n' "$i"; done
      printf '</head><body><h1>Bench web app</h1></body></html>\n'; } > "$dir/assets/www/index.html"
    for i in $(seq 0 $((JS_FILES - 1))); do js_text "$i" > "$dir/assets/www/js/$(printf 'module%03d.js' "$i")"; done
    printf 'body { font-family: sans-serif; margin: 0; }\n%.0s' $(seq 1 200) > "$dir/assets/www/css/app.css"
    # Images: incompressible random bytes (as photos are), 100-130 KiB each.
    for i in $(seq 0 $((IMAGES - 1))); do
        head -c $(( (100 + (i * 7) % 31) * 1024 )) /dev/urandom > "$dir/assets/www/img/$(printf 'photo%03d.png' "$i")"
    done
    head -c $((2 * 1024 * 1024)) /dev/urandom > "$dir/lib/arm64-v8a/libcordova.so"
    { printf 'dex\n035\0'; head -c $((3 * 1024 * 1024)) /dev/urandom; } > "$dir/classes.dex"
    aapt_package "$dir" "$out"
    rm -rf "$dir"
    touch "$out.done"
}

build_synthetic() {
    local megabytes=$1 out=$CORPUS/synthetic-${1}m.apk
    [ -f "$out.done" ] && return 0
    log "synthetic-${megabytes}m.apk"
    local dir; dir=$(mktemp -d "$CORPUS/synthetic-src.XXXX")
    mkdir -p "$dir/res/values" "$dir/assets/blobs" "$dir/assets/www/js"
    manifest "com.example.bench$megabytes" "Bench $megabytes" > "$dir/AndroidManifest.xml"
    printf '<?xml version="1.0" encoding="utf-8"?>\n<resources><string name="app_name">Bench</string></resources>\n' > "$dir/res/values/strings.xml"
    # JS text deflates about 3.5:1, so 93% blobs plus 25% (raw) JS gives about the nominal file size.
    local blobs=$(( megabytes * 93 / 100 )) scripts=$(( megabytes * 1024 / 4 / 20 )) i
    for i in $(seq 1 "$blobs"); do head -c $((1024 * 1024)) /dev/urandom > "$dir/assets/blobs/blob$i.bin"; done
    js_text 0 > "$dir/js.template"
    for i in $(seq 1 "$scripts"); do { printf '// file %d\n' "$i"; cat "$dir/js.template"; } > "$dir/assets/www/js/s$i.js"; done
    rm "$dir/js.template"
    aapt_package "$dir" "$out"
    rm -rf "$dir"
    touch "$out.done"
}

build_webapp
if [ ! -f "$CORPUS/framework-res.apk.done" ]; then
    cp "$FRAMEWORK" "$CORPUS/framework-res.apk" && touch "$CORPUS/framework-res.apk.done"
fi
for size in $SYNTHETIC_SIZES; do build_synthetic "$size"; done
ls -l "$CORPUS"/*.apk >&2
