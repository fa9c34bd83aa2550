#!/usr/bin/env bash
# The seed tool chain for one patch cycle, as a user runs it by hand:
#   apktool d → copy the patch files in → apktool b → zipalign -p 4 → apksigner sign → apksigner verify
# Usage: apktool-chain.sh IN.apk PATCH_DIR WORK_PREFIX KEYSTORE   (password in $BENCH_KS_PASS)
# `apktool d -s` keeps classes.dex as is (baksmali/smali round trips of the dex would only make the chain slower).
set -euo pipefail
in=$1 patch=$2 prefix=$3 keystore=$4
apktool d -f -s -o "$prefix-decoded" "$in" >/dev/null
cp -R "$patch"/. "$prefix-decoded"/
apktool b -o "$prefix-unsigned.apk" "$prefix-decoded" >/dev/null
zipalign -f -p 4 "$prefix-unsigned.apk" "$prefix-aligned.apk"
apksigner sign --ks "$keystore" --ks-pass env:BENCH_KS_PASS --out "$prefix-signed.apk" "$prefix-aligned.apk"
apksigner verify "$prefix-signed.apk"
