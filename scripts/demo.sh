#!/usr/bin/env bash
# `make demo`: build the bundled sample APK with aapt, patch it with the sample patch directory, and show
# what happened, checking the result with the real tools (zipalign, apksigner).
set -euo pipefail
cd "$(dirname "$0")/.."
APKPATCH=${APKPATCH:-.build/release/apkpatch}
out=demo-out
rm -rf "$out"; mkdir -p "$out/build"
cp -R Templates/sample/app/. "$out/build/"
(cd "$out/build" && aapt package -f -M AndroidManifest.xml -S res -A assets \
    -I /usr/share/android-framework-res/framework-res.apk -F ../sample.apk >/dev/null)
echo "== Built the sample APK with aapt: $out/sample.apk"
unzip -l "$out/sample.apk" | sed 's/^/   /'
echo
# Signs with a demo keystore made by apkpatch itself (not your ~/.android/debug.keystore).
keystore="$out/demo-debug.keystore"
echo "== apkpatch run $out/sample.apk --patch Templates/sample/patch --out $out/sample-patched.apk --debug-keystore $keystore"
"$APKPATCH" run "$out/sample.apk" --patch Templates/sample/patch --out "$out/sample-patched.apk" --debug-keystore "$keystore"
echo
echo "== The patched index.html inside the output (unzip -p):"
unzip -p "$out/sample-patched.apk" assets/www/index.html | sed 's/^/   /'
echo
echo "== aapt dump badging (the manifest and string edits):"
aapt dump badging "$out/sample-patched.apk" | grep -E "^(package|application-label|application-debuggable)" | sed 's/^/   /'
echo
echo "== zipalign -c -p 4:"
zipalign -c -p 4 "$out/sample-patched.apk" && echo "   aligned"
echo "== apksigner verify -v --print-certs (Google's verifier):"
apksigner verify -v --print-certs "$out/sample-patched.apk" | sed 's/^/   /'
echo
echo "Done: $out/sample-patched.apk"
