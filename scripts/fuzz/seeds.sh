#!/usr/bin/env bash
# Builds the seed corpora for the fuzz targets in Tests/Fuzz from real tools (aapt, apksigner, keytool, zip,
# framework-res.apk) into $FUZZ_WORK/seeds/<Target>/ (default .build-fuzz/work). Nothing here is committed:
# the corpora are regenerated on demand by scripts/fuzz/run.sh.
#
#   scripts/fuzz/seeds.sh [APKPATCH_BINARY]   # with a built apkpatch, also adds apkpatch-signed APKs
set -euo pipefail
cd "$(dirname "$0")/../.."
WORK=$(realpath -m "${FUZZ_WORK:-.build-fuzz/work}")
FRAMEWORK=${FRAMEWORK_RES:-/usr/share/android-framework-res/framework-res.apk}
APKPATCH=${1:-}
SEEDS=$WORK/seeds
TMP=$WORK/tmp
rm -rf "$SEEDS" "$TMP"
mkdir -p "$TMP" "$SEEDS"/{FuzzZip,FuzzSigningBlock,FuzzBinaryXML,FuzzResourceTable,FuzzKeyStore,FuzzVerify,FuzzTextXML,FuzzJARSignature}

# 1. An aapt-built app: manifest, strings in two locales, an XML resource, a layout, assets, a stored .so.
app=$TMP/app
mkdir -p "$app"/res/values "$app"/res/values-fr "$app"/res/xml "$app"/res/layout "$app"/assets/www "$app"/lib/arm64-v8a
cat > "$app/AndroidManifest.xml" <<'XML'
<?xml version="1.0" encoding="utf-8"?>
<manifest xmlns:android="http://schemas.android.com/apk/res/android"
    package="com.example.fuzz" android:versionCode="7" android:versionName="1.7">
    <uses-sdk android:minSdkVersion="21" android:targetSdkVersion="33" />
    <uses-permission android:name="android.permission.INTERNET" />
    <application android:label="@string/app_name" android:debuggable="true" android:extractNativeLibs="false">
        <activity android:name=".MainActivity" android:exported="true">
            <intent-filter>
                <action android:name="android.intent.action.MAIN" />
                <category android:name="android.intent.category.LAUNCHER" />
            </intent-filter>
        </activity>
        <meta-data android:name="answer" android:value="42" />
    </application>
</manifest>
XML
cat > "$app/res/values/strings.xml" <<'XML'
<?xml version="1.0" encoding="utf-8"?>
<resources>
    <string name="app_name">Fuzz</string>
    <string name="greeting">Hello, <b>world</b></string>
    <string-array name="planets"><item>Mercury</item><item>Venus</item></string-array>
    <color name="accent">#ff336699</color>
    <dimen name="margin">16dp</dimen>
    <bool name="flag">true</bool>
    <integer name="count">3</integer>
    <style name="AppTheme" parent="android:Theme.Material"><item name="android:colorAccent">@color/accent</item></style>
</resources>
XML
cat > "$app/res/values-fr/strings.xml" <<'XML'
<?xml version="1.0" encoding="utf-8"?>
<resources><string name="app_name">Fuzz (fr)</string><string name="greeting">Bonjour</string></resources>
XML
cat > "$app/res/xml/config.xml" <<'XML'
<?xml version="1.0" encoding="utf-8"?>
<widget xmlns:cdv="http://cordova.apache.org/ns/1.0" id="com.example.fuzz" version="1.0">
    <content src="index.html" />
    <preference name="loglevel" value="DEBUG" />
    text &amp; <![CDATA[cdata]]>
</widget>
XML
cat > "$app/res/layout/main.xml" <<'XML'
<?xml version="1.0" encoding="utf-8"?>
<LinearLayout xmlns:android="http://schemas.android.com/apk/res/android"
    android:layout_width="match_parent" android:layout_height="match_parent" android:orientation="vertical">
    <TextView android:id="@+id/text" android:layout_width="wrap_content" android:layout_height="wrap_content"
        android:text="@string/greeting" android:textColor="@color/accent" android:padding="@dimen/margin" />
</LinearLayout>
XML
printf '<!doctype html><html><body>fuzz</body></html>\n' > "$app/assets/www/index.html"
head -c 3000 /dev/urandom > "$app/assets/www/blob.bin"
head -c 2000 /dev/urandom > "$app/lib/arm64-v8a/libnative.so"
(cd "$app" && aapt package -f -M AndroidManifest.xml -S res -A assets -I "$FRAMEWORK" -F ../app.apk >/dev/null \
    && aapt add -0 so ../app.apk lib/arm64-v8a/libnative.so >/dev/null)
unsigned=$TMP/app.apk

# 2. Keystores from keytool: JKS and PKCS#12, RSA/EC/DSA, plus a trusted-certificate entry.
ks() { keytool -genkeypair -keystore "$1" -storetype "$2" -storepass android -keypass android -alias "$3" \
        -keyalg "$4" -keysize "$5" -dname "CN=Fuzz $4, O=apkpatch, C=US" -validity 3650 >/dev/null 2>&1; }
ks "$TMP/rsa.jks" JKS key RSA 2048
ks "$TMP/ec.jks" JKS key EC 256
ks "$TMP/dsa.jks" JKS key DSA 2048
ks "$TMP/rsa.p12" PKCS12 key RSA 2048
ks "$TMP/ec.p12" PKCS12 key EC 256
keytool -exportcert -keystore "$TMP/ec.jks" -storepass android -alias key -file "$TMP/ec.cer" >/dev/null 2>&1
cp "$TMP/rsa.jks" "$TMP/two.jks"
keytool -importcert -noprompt -keystore "$TMP/two.jks" -storepass android -alias trusted -file "$TMP/ec.cer" >/dev/null 2>&1
# JCEKS (Java's lowest iteration count, so that mutants are quick to try) with a secret-key entry (a serialized
# Java object) before the key, and a PKCS#12 store in Java 8's algorithms (RC2-40, 3DES, SHA-1 MAC).
keytool -J-Djdk.jceks.iterationCount=10000 -genseckey -keystore "$TMP/mixed.jceks" -storetype JCEKS -storepass android \
    -keypass android -alias secret -keyalg AES -keysize 128 >/dev/null 2>&1
keytool -J-Djdk.jceks.iterationCount=10000 -genkeypair -keystore "$TMP/mixed.jceks" -storetype JCEKS -storepass android \
    -keypass android -alias key -keyalg EC -dname "CN=Fuzz JCEKS, O=apkpatch, C=US" -validity 3650 >/dev/null 2>&1
keytool -J-Dkeystore.pkcs12.legacy -genkeypair -keystore "$TMP/legacy.p12" -storetype PKCS12 -storepass android \
    -keypass android -alias key -keyalg RSA -keysize 2048 -dname "CN=Fuzz legacy, O=apkpatch, C=US" -validity 3650 >/dev/null 2>&1
cp "$TMP"/*.jks "$TMP"/*.jceks "$TMP"/*.p12 "$SEEDS/FuzzKeyStore/"
# JKS and JCEKS seeds without their trailing SHA-1: FuzzKeyStore appends a fresh one, so mutations get past the check.
for f in "$TMP"/*.jks "$TMP"/*.jceks; do head -c -20 "$f" > "$SEEDS/FuzzKeyStore/$(basename "$f").body"; done

# 3. Signed APKs: apksigner with each scheme mix and key type; apkpatch if given.
sign() { # out keystore scheme-flags...
    local out=$1 store=$2; shift 2
    apksigner sign --ks "$store" --ks-pass pass:android --ks-key-alias key --out "$out" "$@" "$unsigned" >/dev/null 2>&1
}
zipalign -f -p 4 "$unsigned" "$TMP/aligned.apk"
unsigned=$TMP/aligned.apk
sign "$TMP/v1.apk" "$TMP/rsa.jks" --v1-signing-enabled true --v2-signing-enabled false --v3-signing-enabled false --min-sdk-version 21
sign "$TMP/v2.apk" "$TMP/rsa.jks" --v1-signing-enabled false --v2-signing-enabled true --v3-signing-enabled false
sign "$TMP/v3.apk" "$TMP/ec.jks" --v1-signing-enabled false --v2-signing-enabled false --v3-signing-enabled true
sign "$TMP/v123.apk" "$TMP/rsa.jks" --v1-signing-enabled true --v2-signing-enabled true --v3-signing-enabled true
sign "$TMP/dsa.apk" "$TMP/dsa.jks" --v1-signing-enabled true --v2-signing-enabled true --min-sdk-version 21
if [ -n "$APKPATCH" ] && [ -x "$APKPATCH" ]; then
    "$APKPATCH" sign --ks "$TMP/rsa.p12" --ks-pass pass:android --ks-key-alias key --out "$TMP/apkpatch.apk" "$unsigned" >/dev/null 2>&1 \
        || echo "seeds.sh: apkpatch sign failed; continuing without its APK" >&2
fi
# Key rotation and stamps: lineage files (`rotate`, two and three certificates), APKs signed with a lineage
# (v3.1 + v3.0 at the default rotation min SDK 33; the new key in v3.0 at 28) and a source-stamped APK, from
# apksigner 35 (v3.1 and stamps are newer than Debian's apksigner) and from apkpatch if given.
APKSIGNER_NEW=${APKSIGNER_NEW:-.build/oracles/apksigner-new/apksigner.jar}
ks "$TMP/rot3.p12" PKCS12 key RSA 2048
old=(--ks "$TMP/rsa.p12" --ks-pass pass:android --ks-key-alias key) new=(--ks "$TMP/ec.p12" --ks-pass pass:android --ks-key-alias key)
third=(--ks "$TMP/rot3.p12" --ks-pass pass:android --ks-key-alias key)
if [ -f "$APKSIGNER_NEW" ]; then
    new_apksigner() { java -jar "$APKSIGNER_NEW" "$@" >/dev/null 2>&1; }
    new_apksigner rotate --out "$TMP/apksigner.lineage" --old-signer "${old[@]}" --new-signer "${new[@]}"
    new_apksigner rotate --in "$TMP/apksigner.lineage" --out "$TMP/apksigner3.lineage" --old-signer "${new[@]}" --new-signer "${third[@]}"
    new_apksigner sign "${old[@]}" --next-signer "${new[@]}" --lineage "$TMP/apksigner.lineage" --out "$TMP/rotated.apk" "$unsigned"
    new_apksigner sign "${old[@]}" --next-signer "${new[@]}" --lineage "$TMP/apksigner.lineage" --rotation-min-sdk-version 28 \
        --out "$TMP/rotated28.apk" "$unsigned"
    new_apksigner sign "${old[@]}" --stamp-signer "${third[@]}" --out "$TMP/stamped.apk" "$unsigned"
else
    echo "seeds.sh: no apksigner 35 at $APKSIGNER_NEW; no v3.1, rotated or stamped seeds from it" >&2
fi
if [ -n "$APKPATCH" ] && [ -x "$APKPATCH" ]; then
    "$APKPATCH" rotate --out "$TMP/apkpatch.lineage" --old-signer "${old[@]}" --new-signer "${new[@]}" >/dev/null 2>&1
    "$APKPATCH" sign "${old[@]}" --next-signer "${new[@]}" --lineage "$TMP/apkpatch.lineage" --out "$TMP/apkpatch-rotated.apk" "$unsigned" \
        >/dev/null 2>&1 || echo "seeds.sh: apkpatch sign --lineage failed; continuing without its APK" >&2
fi
signed=$(ls "$TMP"/v1.apk "$TMP"/v2.apk "$TMP"/v3.apk "$TMP"/v123.apk "$TMP"/dsa.apk "$TMP"/apkpatch.apk "$TMP"/rotated.apk \
    "$TMP"/rotated28.apk "$TMP"/stamped.apk "$TMP"/apkpatch-rotated.apk 2>/dev/null || true)
cp $signed "$unsigned" "$SEEDS/FuzzVerify/"
cp $signed "$unsigned" "$SEEDS/FuzzZip/"
# The files read beside an APK: lineage files and the v4 signatures every signer above wrote.
cp "$TMP"/*.lineage "$TMP"/*.idsig "$SEEDS/FuzzSigningBlock/" 2>/dev/null || true

# Plain zips the APK tools never make: data descriptors (streamed), empty, comment, directory entries.
(cd "$app" && printf 'streamed\n' | zip -q - - > "$SEEDS/FuzzZip/streamed.zip")
(cd "$app" && zip -q -r -z "$SEEDS/FuzzZip/comment.zip" assets < <(echo "a zip comment"))
(cd "$app" && zip -q -0 "$SEEDS/FuzzZip/stored.zip" AndroidManifest.xml res/values/strings.xml)

# 4. Signing blocks (from the block's size field up to the central directory) and v2/v3/v3.1/stamp pair values.
python3 - "$SEEDS/FuzzSigningBlock" $signed <<'PY'
import struct, sys, os
out = sys.argv[1]
for path in sys.argv[2:]:
    data = open(path, 'rb').read()
    eocd = data.rfind(b'PK\x05\x06')
    cd = struct.unpack_from('<I', data, eocd + 16)[0]
    if data[cd - 16:cd] != b'APK Sig Block 42':
        continue
    size = struct.unpack_from('<Q', data, cd - 24)[0]
    start = cd - size - 8
    block = data[start:cd]
    name = os.path.basename(path)
    open(os.path.join(out, name + '.block'), 'wb').write(block)
    pos, end = 8, len(block) - 24
    while pos + 12 <= end:
        length, pid = struct.unpack_from('<QI', block, pos)
        value = block[pos + 12:pos + 8 + length]
        if pid in (0x7109871a, 0xf05368c0, 0x1b93ad61, 0x6dff800d):
            open(os.path.join(out, '%s.%08x' % (name, pid)), 'wb').write(value)
        pos += 8 + length
PY

# 5. Binary XML and resource tables: from the app and from framework-res.apk (small files only; the fuzzer
#    works best on inputs of a few KB).
unzip -q -o "$unsigned" AndroidManifest.xml 'res/*' resources.arsc -d "$TMP/appx"
find "$TMP/appx" -name '*.xml' -exec sh -c 'cp "$1" "$2/app-$(echo "$1" | tr / _)"' _ {} "$SEEDS/FuzzBinaryXML" \;
cp "$TMP/appx/resources.arsc" "$SEEDS/FuzzResourceTable/app.arsc"
mkdir -p "$TMP/fw"
unzip -q -o "$FRAMEWORK" AndroidManifest.xml 'res/xml/*' 'res/layout/*' -d "$TMP/fw" 2>/dev/null || true
cp "$TMP/fw/AndroidManifest.xml" "$SEEDS/FuzzBinaryXML/framework-AndroidManifest.xml"
find "$TMP/fw/res" -name '*.xml' -size -4k | sort | head -40 | while read -r f; do
    cp "$f" "$SEEDS/FuzzBinaryXML/fw-$(echo "${f#$TMP/fw/}" | tr / _)"
done
# A second, small table from aapt with many configurations.
mkdir -p "$TMP/cfg/res"
for q in values values-fr values-de-rDE values-land values-sw600dp values-v21 values-night values-b+sr+Latn; do
    mkdir -p "$TMP/cfg/res/$q"
    printf '<resources><string name="s">%s</string><plurals name="p"><item quantity="one">1</item><item quantity="other">n</item></plurals></resources>\n' "$q" > "$TMP/cfg/res/$q/strings.xml"
done
printf '<manifest xmlns:android="http://schemas.android.com/apk/res/android" package="com.example.cfg"/>\n' > "$TMP/cfg/AndroidManifest.xml"
(cd "$TMP/cfg" && aapt package -f -M AndroidManifest.xml -S res -I "$FRAMEWORK" -F cfg.apk >/dev/null && unzip -q -o cfg.apk resources.arsc)
cp "$TMP/cfg/resources.arsc" "$SEEDS/FuzzResourceTable/configs.arsc"

# 6. JAR signature files: MANIFEST.MF, .SF and the PKCS #7 blocks (RSA, EC, DSA signers).
for f in $signed; do
    rm -rf "$TMP/meta" && mkdir -p "$TMP/meta" && unzip -q -o "$f" 'META-INF/*' -d "$TMP/meta" 2>/dev/null || continue
    for m in "$TMP"/meta/META-INF/*; do cp "$m" "$SEEDS/FuzzJARSignature/$(basename "$f" .apk)-$(basename "$m")"; done
done

# 7. Text XML as a patch directory holds it: the app's sources, plus a manifest using every shortcut attribute.
find "$app" -name '*.xml' | sort | while read -r f; do cp "$f" "$SEEDS/FuzzTextXML/$(echo "${f#$app/}" | tr / _)"; done
cat > "$SEEDS/FuzzTextXML/shortcuts.xml" <<'XML'
<?xml version="1.0" encoding="utf-8"?>
<manifest xmlns:android="http://schemas.android.com/apk/res/android" xmlns:tools="http://schemas.android.com/tools"
    package="com.example.shortcuts" android:versionCode="0x10" android:versionName="2.0-&quot;beta&quot;"
    android:installLocation="preferExternal">
    <uses-sdk android:minSdkVersion="Tiramisu" android:targetSdkVersion="34" />
    <application android:label="@android:string/ok" android:debuggable="false" android:usesCleartextTraffic="true"
        android:extractNativeLibs="true" android:theme="@android:style/Theme.Material" android:configChanges="orientation|keyboardHidden">
        <activity android:name="a.B" android:screenOrientation="landscape" android:windowSoftInputMode="adjustResize|stateHidden"/>
        <!-- a comment --><meta-data android:name="x" android:value="1.5dip"/><meta-data android:name="y" android:value="#80ff0000"/>
    </application>
</manifest>
XML

for d in "$SEEDS"/*; do echo "$(basename "$d"): $(ls "$d" | wc -l) seeds, $(du -sh "$d" | cut -f1)"; done
