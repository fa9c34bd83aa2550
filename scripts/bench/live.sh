#!/usr/bin/env bash
# (9) Live reload: save -> reload event, one 100 KB JavaScript file, as the APK grows (it never touches the APK).
# Usage: live.sh INPUT_LABEL IN.apk KEYSTORE EDITS   ($RESULTS/$LOGS/$COMMANDS/$APKPATCH from run.sh's environment)
#
# `watch --live` serves Cordova and Capacitor apps only, so the input gets what a Cordova app has: a
# res/xml/config.xml (text, compiled by apkpatch's own overlay) and a start page, in an unsigned copy made with
# `apkpatch run --no-sign`. live.py then measures EDITS saves (see there).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib.sh"
input=$1 apk=$2 keystore=$3 edits=$4
work=$(dirname "$LOGS")/live-$input
rm -rf "$work"; mkdir -p "$work/cordova/res/xml" "$work/cordova/assets/www" "$work/patch"
cat > "$work/cordova/res/xml/config.xml" <<'XML'
<?xml version='1.0' encoding='utf-8'?>
<widget id="com.example.bench" version="1.0.0" xmlns="http://www.w3.org/ns/widgets">
    <content src="index.html" />
    <access origin="*" />
</widget>
XML
if ! unzip -l "$apk" assets/www/index.html >/dev/null 2>&1; then
    printf '<!doctype html><html><head><script src="js/bench-live.js"></script></head><body>bench</body></html>\n' > "$work/cordova/assets/www/index.html"
fi
if ! "$APKPATCH" run "$apk" --patch "$work/cordova" --no-sign --no-verify --out "$work/input.apk" > "$LOGS/live.$input.prepare.log" 2>&1; then
    log "live on $input: preparing the Cordova input failed (see $LOGS/live.$input.prepare.log)"
    for run in $(seq 1 "$edits"); do
        printf 'live\t%s\tsave-to-event\t%s\tFAILED\t0\t0\n' "$input" "$run" >> "$RESULTS"
        printf 'live\t%s\tapkpatch\t%s\tFAILED\t0\t0\n' "$input" "$run" >> "$RESULTS"
    done
    exit 0
fi
record_command live apkpatch "\"$APKPATCH\" watch \"$work/input.apk\" --patch \"$work/patch\" --out \"$work/out.apk\" --live --live-port 0 --json --ks \"$keystore\" --ks-pass env:BENCH_KS_PASS"
log "live on $input: $edits saves"
python3 "$HERE/live.py" "$APKPATCH" "$work/input.apk" "$work/patch" "$work/out.apk" "$keystore" "$input" "$edits" "$RESULTS" "$LOGS/live.$input.log"
exit 0
