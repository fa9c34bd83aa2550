#!/usr/bin/env bash
# (5) Watch-mode rebuild latency: edit → signed APK for one changed 100 KB JavaScript file, as the APK grows.
# Usage: watch.sh INPUT_LABEL IN.apk KEYSTORE RUNS   (sourced lib.sh's $RESULTS/$LOGS/$COMMANDS from the env)
#
# Starts `apkpatch watch` once per APK, waits for the first build, then RUNS times rewrites the JS file the way
# editors save (write a temp file, rename it over) and waits for the watcher's "rebuilt in N ms" line. Two rows:
#   watch / apkpatch      the latency apkpatch reports (change noticed → signed APK renamed into place)
#   watch / edit-to-apk   measured here, from the rename to the line appearing (adds the 50 ms debounce)
# Peak memory is the watcher's VmHWM (/proc/PID/status) after the last rebuild.
#
# ---- HOOK: the watcher's output format. If `apkpatch watch` changes its lines, adjust these two patterns. ----
FIRST_BUILD_PATTERN='] built '
REBUILD_PATTERN='] rebuilt in '
# ---------------------------------------------------------------------------------------------------------------
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib.sh"
input=$1 apk=$2 keystore=$3 runs=$4
work=$(dirname "$LOGS")/watch-$input
rm -rf "$work"; mkdir -p "$work/patch/assets/www/js"
edit=$work/patch/assets/www/js/bench-edit.js
out=$work/out.apk
log_file=$LOGS/watch.$input.log

# ~100 KB of JavaScript whose content depends on the run number.
write_js() { # write_js RUN
    local tmp="$work/patch/assets/www/js/.bench-edit.js.tmp" i
    { printf '// benchmark edit %s\n' "$1"
      for i in $(seq 1 800); do printf 'window.benchEdit%d = function (a) { return a * %d + %s; };  // padding padding padding\n' "$i" "$i" "$1"; done
    } > "$tmp"
    mv "$tmp" "$edit"
}
write_js 0
command="\"$APKPATCH\" watch \"$apk\" --patch \"$work/patch\" --out \"$out\" --ks \"$keystore\" --ks-pass env:BENCH_KS_PASS"
record_command watch apkpatch "$command"
log "watch on $input: $runs edits"

"$APKPATCH" watch "$apk" --patch "$work/patch" --out "$out" --ks "$keystore" --ks-pass env:BENCH_KS_PASS > "$log_file" 2>&1 &
pid=$!
stop() { kill -INT "$pid" 2>/dev/null; for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done; kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }
trap stop EXIT

fail_all() {
    local run
    log "watch on $input FAILED: $1 (see $log_file)"
    tail -n 5 "$log_file" | sed 's/^/    /' >&2
    for run in $(seq 1 "$runs"); do
        printf 'watch\t%s\tapkpatch\t%s\tFAILED\t0\t0\n' "$input" "$run" >> "$RESULTS"
        printf 'watch\t%s\tedit-to-apk\t%s\tFAILED\t0\t0\n' "$input" "$run" >> "$RESULTS"
    done
    exit 0
}

# The first build reads and signs the whole APK: allow it several minutes at 400 MB on a slow machine.
for _ in $(seq 1 6000); do
    grep -q -- "$FIRST_BUILD_PATTERN" "$log_file" && break
    kill -0 "$pid" 2>/dev/null || fail_all "apkpatch watch exited"
    sleep 0.05
done
grep -q -- "$FIRST_BUILD_PATTERN" "$log_file" || fail_all "no first build within 300 s"

for run in $(seq 1 "$runs"); do
    sleep 0.3  # let the watcher settle; editors do not save faster than this
    before=$(grep -c -- "$REBUILD_PATTERN" "$log_file")
    start=$(date +%s%N)
    write_js "$run"
    status=FAILED
    for _ in $(seq 1 12000); do
        if [ "$(grep -c -- "$REBUILD_PATTERN" "$log_file")" -gt "$before" ]; then status=ok; break; fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.005
    done
    end=$(date +%s%N)
    wall=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.4f", (e - s) / 1e9 }')
    reported=$(grep -- "$REBUILD_PATTERN" "$log_file" | tail -n 1 | sed -n 's/.*rebuilt in \([0-9.]*\) ms.*/\1/p')
    # The rebuilt APK must hold this run's edit, or the measurement is of nothing.
    # (sed reads to the end: `head` would SIGPIPE unzip and fail the pipeline under pipefail.)
    first_line=$(unzip -p "$out" assets/www/js/bench-edit.js 2>/dev/null | sed -n 1p)
    if [ "$status" = ok ] && [ "$first_line" != "// benchmark edit $run" ]; then
        status=FAILED; log "watch on $input run $run: the output does not contain the edit"
    fi
    rss=$(awk '/VmHWM/ { print $2 }' "/proc/$pid/status" 2>/dev/null)
    if [ "$status" = ok ] && [ -n "$reported" ]; then
        printf 'watch\t%s\tapkpatch\t%s\tok\t%s\t%s\n' "$input" "$run" "$(awk -v m="$reported" 'BEGIN { printf "%.4f", m / 1000 }')" "${rss:-0}" >> "$RESULTS"
    else
        printf 'watch\t%s\tapkpatch\t%s\tFAILED\t0\t%s\n' "$input" "$run" "${rss:-0}" >> "$RESULTS"
    fi
    printf 'watch\t%s\tedit-to-apk\t%s\t%s\t%s\t%s\n' "$input" "$run" "$status" "$wall" "${rss:-0}" >> "$RESULTS"
done
exit 0
