#!/usr/bin/env bash
# What a user writes today to re-sign a split APK set: apksigner once per APK, one after the other.
# Usage: apksigner-set.sh SET_DIR OUT_DIR KEYSTORE   (password in $BENCH_KS_PASS)
set -euo pipefail
set=$1 out=$2 keystore=$3
mkdir -p "$out"
for apk in "$set"/*.apk; do
    apksigner sign --ks "$keystore" --ks-pass env:BENCH_KS_PASS --out "$out/$(basename "$apk")" "$apk"
done
