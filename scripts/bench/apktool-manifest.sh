#!/usr/bin/env bash
# The seed tool chain for a manifest edit (issue 5's benchmark): apktool d → set android:debuggable="true" on
# <application> in the decoded AndroidManifest.xml → apktool b (unsigned, as apktool leaves it).
# Usage: apktool-manifest.sh IN.apk WORK_PREFIX
set -euo pipefail
in=$1 prefix=$2
apktool d -f -s -o "$prefix-decoded" "$in" >/dev/null
sed -i 's/<application /<application android:debuggable="true" /' "$prefix-decoded/AndroidManifest.xml"
grep -q 'android:debuggable="true"' "$prefix-decoded/AndroidManifest.xml"
apktool b -o "$prefix-unsigned.apk" "$prefix-decoded" >/dev/null
