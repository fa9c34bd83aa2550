#!/usr/bin/env bash
# apk-mitm's chain for trusting an interception proxy (issue 23's benchmark):
#   apktool d → write res/xml/network_security_config.xml (system + user CAs) → point the manifest at it
#   → apktool b → zipalign -p 4 → apksigner sign
# Usage: apktool-netsec.sh IN.apk WORK_PREFIX KEYSTORE   (password in $BENCH_KS_PASS)
set -euo pipefail
in=$1 prefix=$2 keystore=$3
apktool d -f -s -o "$prefix-decoded" "$in" >/dev/null
mkdir -p "$prefix-decoded/res/xml"
cat > "$prefix-decoded/res/xml/network_security_config.xml" <<'XML'
<?xml version="1.0" encoding="utf-8"?>
<network-security-config>
    <base-config>
        <trust-anchors>
            <certificates src="system" />
            <certificates src="user" />
        </trust-anchors>
    </base-config>
</network-security-config>
XML
sed -i 's/<application /<application android:networkSecurityConfig="@xml\/network_security_config" /' "$prefix-decoded/AndroidManifest.xml"
grep -q 'android:networkSecurityConfig=' "$prefix-decoded/AndroidManifest.xml"
apktool b -o "$prefix-unsigned.apk" "$prefix-decoded" >/dev/null
zipalign -f -p 4 "$prefix-unsigned.apk" "$prefix-aligned.apk"
apksigner sign --ks "$keystore" --ks-pass env:BENCH_KS_PASS --out "$prefix-signed.apk" "$prefix-aligned.apk"
