#!/usr/bin/env bash
# apkpatch benchmarks against the tool chain it replaces (issue 7); writes BENCHMARKS.md.
#
#   scripts/bench/run.sh                 full run (corpus up to 400 MB, 9 runs per workload after a warm-up)
#   BENCH_QUICK=1 scripts/bench/run.sh   small corpus, 3 runs: checks the harness in a minute or two
#
# Environment:
#   APKPATCH       the binary to measure (default: build it as `make build` does and use .build/release/apkpatch)
#   BENCH_RUNS     measured runs per tool and workload (default 9; 3 with BENCH_QUICK=1)
#   BENCH_WORK     scratch folder (default bench-work/, git-ignored); the corpus is kept there between runs
#   BENCH_OUTPUT   the report (default BENCHMARKS.md in the repository root)
#   BENCH_ONLY     space-separated subset of: cycle manifest netsec align sign sign-v4 entry-checks verify watch live floor
#                  set-sign merge (sign also runs sign-v4 and entry-checks)
#   BENCH_LIVE_EDITS  saves per APK in the live-reload workload (default 20)
#   BENCH_INPUTS   space-separated subset of the corpus (default: all of it)
#
# Each workload runs apkpatch and its anchor alternately in the same run, and reports medians, the ratio and
# peak memory (measure.py: fork-to-exit wall time and wait4's ru_maxrss, what /usr/bin/time -f %M reports). A failing command is reported as
# FAILED in the table; the harness carries on. Benchmarks are not tests: nothing here runs in CI.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/scripts/bench
source "$HERE/lib.sh"

QUICK=${BENCH_QUICK:-0}
if [ "$QUICK" = 1 ]; then RUNS=${BENCH_RUNS:-3}; else RUNS=${BENCH_RUNS:-9}; fi
WORK=${BENCH_WORK:-$ROOT/bench-work}
OUTPUT=${BENCH_OUTPUT:-$ROOT/BENCHMARKS.md}
ONLY=${BENCH_ONLY:-cycle manifest netsec align sign sign-v4 entry-checks verify watch live floor set-sign merge}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
CORPUS=$WORK/corpus
OUT=$WORK/out
LOGS=$WORK/logs
RESULTS=$WORK/results.tsv
COMMANDS=$WORK/commands.tsv
rm -rf "$OUT" "$LOGS"; mkdir -p "$OUT" "$LOGS"
: > "$RESULTS"; : > "$COMMANDS"
cut -d' ' -f1-3 /proc/loadavg > "$WORK/loadavg.start"   # other work on the machine skews timings: the report says so
export RESULTS COMMANDS LOGS

wants() { case " $ONLY " in *" $1 "*) return 0;; *) return 1;; esac; }

# --- Tools ------------------------------------------------------------------------------------------------------
if [ ! -x /usr/bin/time ]; then
    log "installing GNU time (apt-get install time)"
    if [ "$(id -u)" = 0 ]; then apt-get install -y -qq time >/dev/null; else sudo apt-get install -y -qq time >/dev/null; fi
fi
for tool in aapt zipalign apksigner apktool keytool openssl unzip /usr/bin/time; do
    command -v "$tool" >/dev/null || { log "missing $tool: run make deps"; exit 1; }
done
if [ -z "${APKPATCH:-}" ]; then
    # `make build`'s flags and build info: a plain `swift build -c release` into the same .build would relink
    # the binary without them, and the report could not name the commit it measured.
    log "building apkpatch (release, make build)"
    make -C "$ROOT" --no-print-directory build >&2 || { log "release build failed"; exit 1; }
    APKPATCH=$ROOT/.build/release/apkpatch
fi
[ -x "$APKPATCH" ] || { log "APKPATCH=$APKPATCH is not executable"; exit 1; }
APKPATCH=$(cd "$(dirname "$APKPATCH")" && pwd)/$(basename "$APKPATCH")
export APKPATCH

# --- Corpus and key ---------------------------------------------------------------------------------------------
BENCH_QUICK=$QUICK "$HERE/corpus.sh" "$CORPUS" || { log "corpus generation failed"; exit 1; }
if [ "$QUICK" = 1 ]; then INPUTS="webapp framework-res synthetic-20m"; else INPUTS="webapp framework-res synthetic-100m synthetic-400m"; fi
INPUTS=${BENCH_INPUTS:-$INPUTS}

# One PKCS#12 key from keytool for both signers; the password only ever travels in the environment.
export BENCH_KS_PASS=bench-store-password
KS=$WORK/bench-key.p12
if [ ! -f "$KS" ]; then
    keytool -genkeypair -keystore "$KS" -storetype PKCS12 -storepass:env BENCH_KS_PASS -alias bench -keyalg RSA -keysize 2048 \
        -validity 3650 -dname "CN=apkpatch bench, O=Example, C=US" >/dev/null 2>&1 || { log "keytool failed"; exit 1; }
fi
KEY_OPTIONS="--ks \"$KS\" --ks-pass env:BENCH_KS_PASS"

# The command lines that recur across workloads (text: `alternate` runs it under bash and BENCHMARKS.md shows it).
# apkpatch_run PATCH OUTPUT [OPTION...]: patch the web app.
apkpatch_run() {
    local patch=$1 output=$2; shift 2
    echo "\"$APKPATCH\" run \"$CORPUS/webapp.apk\" --patch \"$patch\" --out \"$output\"${*:+ $*}"
}
# apkpatch_sign OUTPUT INPUT [OPTION...]: sign with the bench key, as (3) does; the options go before --out.
apkpatch_sign() {
    local output=$1 input=$2; shift 2
    echo "\"$APKPATCH\" sign $KEY_OPTIONS${*:+ $*} --out \"$output\" \"$input\""
}

# Aligned inputs for sign (both signers get the same zipaligned file) and an apksigner-signed one for verify.
for input in $INPUTS; do
    if [ ! -f "$CORPUS/$input.aligned.apk" ]; then zipalign -p -f 4 "$CORPUS/$input.apk" "$CORPUS/$input.aligned.apk" || log "zipalign of $input failed"; fi
    if [ ! -f "$CORPUS/$input.signed.apk" ]; then
        apksigner sign --ks "$KS" --ks-pass env:BENCH_KS_PASS --out "$CORPUS/$input.signed.apk" "$CORPUS/$input.aligned.apk" || log "apksigner sign of $input failed"
    fi
done

# The patch for the full cycle: index.html and one JS file changed.
PATCH=$WORK/patch
rm -rf "$PATCH"; mkdir -p "$PATCH/assets/www/js"
unzip -p "$CORPUS/webapp.apk" assets/www/index.html | sed 's|<h1>Bench web app</h1>|<h1>Patched by the benchmark</h1>|' > "$PATCH/assets/www/index.html"
{ unzip -p "$CORPUS/webapp.apk" assets/www/js/module007.js; printf '\nconsole.log("patched");\n'; } > "$PATCH/assets/www/js/module007.js"

# --- (1) Full patch cycle ---------------------------------------------------------------------------------------
if wants cycle; then
    alternate cycle webapp "$RUNS" \
        apkpatch "$(apkpatch_run "$PATCH" "$OUT/cycle-apkpatch.apk" "$KEY_OPTIONS")" \
        apktool-chain "\"$HERE/apktool-chain.sh\" \"$CORPUS/webapp.apk\" \"$PATCH\" \"$OUT/cycle-chain\" \"$KS\"" \
        "rm -rf \"$OUT\"/cycle-*"
fi

# --- (1b) Manifest edit: binary XML decode + debuggable edit + re-encode, against apktool d + apktool b ------------
if wants manifest; then
    MANIFEST_PATCH=$WORK/manifest-patch
    rm -rf "$MANIFEST_PATCH"; mkdir -p "$MANIFEST_PATCH"
    printf 'manifest:\n  debuggable: true\n' > "$MANIFEST_PATCH/apkpatch.yml"
    alternate manifest webapp "$RUNS" \
        apkpatch "$(apkpatch_run "$MANIFEST_PATCH" "$OUT/manifest-apkpatch.apk" --no-sign)" \
        apktool "\"$HERE/apktool-manifest.sh\" \"$CORPUS/webapp.apk\" \"$OUT/manifest-apktool\"" \
        "rm -rf \"$OUT\"/manifest-*"
fi

# --- (1c) Network-security preset: trust user CAs, signed output, against apk-mitm's apktool chain -------------
if wants netsec; then
    NETSEC_PATCH=$WORK/netsec-patch
    rm -rf "$NETSEC_PATCH"; mkdir -p "$NETSEC_PATCH"
    printf 'networkSecurity: trustUserCertificates\n' > "$NETSEC_PATCH/apkpatch.yml"
    alternate netsec webapp "$RUNS" \
        apkpatch "$(apkpatch_run "$NETSEC_PATCH" "$OUT/netsec-apkpatch.apk" "$KEY_OPTIONS" --no-verify)" \
        apk-mitm-chain "\"$HERE/apktool-netsec.sh\" \"$CORPUS/webapp.apk\" \"$OUT/netsec-chain\" \"$KS\"" \
        "rm -rf \"$OUT\"/netsec-*"
fi

# --- (2) align --------------------------------------------------------------------------------------------------
if wants align; then
    for input in $INPUTS; do
        alternate align "$input" "$RUNS" \
            apkpatch "\"$APKPATCH\" align -f -p 4 \"$CORPUS/$input.apk\" \"$OUT/align-apkpatch.apk\"" \
            zipalign "zipalign -f -p 4 \"$CORPUS/$input.apk\" \"$OUT/align-zipalign.apk\"" \
            "rm -f \"$OUT\"/align-*.apk"
    done
fi

# --- (3) sign, with (6) the physical floor for the same bytes ---------------------------------------------------
if wants sign; then
    for input in $INPUTS; do
        alternate sign "$input" "$RUNS" \
            apkpatch "$(apkpatch_sign "$OUT/sign-apkpatch.apk" "$CORPUS/$input.aligned.apk")" \
            apksigner "apksigner sign $KEY_OPTIONS --out \"$OUT/sign-apksigner.apk\" \"$CORPUS/$input.aligned.apk\"" \
            "rm -f \"$OUT\"/sign-*.apk \"$OUT\"/sign-*.apk.idsig"
    done
fi
# --- (3b) what v4 costs: sign as in (3), whose default writes the .idsig, against --v4-signing-enabled false -------
if wants sign || wants sign-v4; then
    for input in $INPUTS; do
        alternate sign-v4 "$input" "$RUNS" \
            apkpatch "$(apkpatch_sign "$OUT/v4-on.apk" "$CORPUS/$input.aligned.apk")" \
            v4-off "$(apkpatch_sign "$OUT/v4-off.apk" "$CORPUS/$input.aligned.apk" --v4-signing-enabled false)" \
            "rm -f \"$OUT\"/v4-*.apk \"$OUT\"/v4-*.apk.idsig"
    done
fi
# --- (3c) what the entry checks cost (CRC-32 of every copied entry, deflate streams ending where their data does):
# sign as in (3) against the same with them skipped. APKPATCH_BENCH_SKIP_ENTRY_CHECKS is read for this row only
# (Sign's EntryIntegrity.isEnabled); it is not a user option.
if wants sign || wants entry-checks; then
    for input in $INPUTS; do
        alternate entry-checks "$input" "$RUNS" \
            apkpatch "$(apkpatch_sign "$OUT/checks-on.apk" "$CORPUS/$input.aligned.apk")" \
            checks-off "APKPATCH_BENCH_SKIP_ENTRY_CHECKS=1 $(apkpatch_sign "$OUT/checks-off.apk" "$CORPUS/$input.aligned.apk")" \
            "rm -f \"$OUT\"/checks-*.apk \"$OUT\"/checks-*.apk.idsig"
    done
fi
if wants floor; then
    for input in $INPUTS; do
        command="openssl dgst -sha256 \"$CORPUS/$input.aligned.apk\" && cp \"$CORPUS/$input.aligned.apk\" \"$OUT/floor.apk\""
        record_command floor floor "$command"
        log "floor on $input, $RUNS runs"
        settle; rm -f "$OUT/floor.apk"; bash -c "$command" >/dev/null 2>&1   # warm-up, as for the tools
        for run in $(seq 1 "$RUNS"); do rm -f "$OUT/floor.apk"; sync; measure floor "$input" floor "$run" "$command"; done
    done
fi

# --- (4) verify -------------------------------------------------------------------------------------------------
if wants verify; then
    for input in $INPUTS; do
        alternate verify "$input" "$RUNS" \
            apkpatch "\"$APKPATCH\" verify \"$CORPUS/$input.signed.apk\"" \
            apksigner "apksigner verify \"$CORPUS/$input.signed.apk\""
    done
fi

# --- (5) watch-mode rebuild latency -----------------------------------------------------------------------------
if wants watch; then
    for input in $INPUTS; do "$HERE/watch.sh" "$input" "$CORPUS/$input.apk" "$KS" "$RUNS" || log "watch on $input failed"; done
fi

# --- (7) split APK sets: re-sign a set (the web app as base + 4 config splits), merge it into one APK ----------
if wants set-sign || wants merge; then
    SET=$CORPUS/webapp-set
    "$HERE/set.sh" "$CORPUS/webapp.apk" "$SET" || log "building the split APK set failed"
fi
if wants set-sign; then
    alternate set-sign webapp-set "$RUNS" \
        apkpatch "$(apkpatch_sign "$OUT/set-apkpatch" "$SET")" \
        apksigner-loop "\"$HERE/apksigner-set.sh\" \"$SET\" \"$OUT/set-apksigner\" \"$KS\"" \
        "rm -rf \"$OUT\"/set-*"
fi
if wants merge; then
    # The anchor signs the merged APK alone: merging should cost little beyond that.
    "$APKPATCH" merge "$SET" --out "$CORPUS/webapp-set.merged.apk" --ks "$KS" --ks-pass env:BENCH_KS_PASS -q || log "merge for the anchor failed"
    alternate merge webapp-set "$RUNS" \
        apkpatch "\"$APKPATCH\" merge \"$SET\" --out \"$OUT/merge-apkpatch.apk\" $KEY_OPTIONS -q" \
        sign-merged "$(apkpatch_sign "$OUT/merge-sign.apk" "$CORPUS/webapp-set.merged.apk")" \
        "rm -f \"$OUT\"/merge-*.apk"
fi

# --- (9) live reload: save -> reload event ----------------------------------------------------------------------
if wants live; then
    for input in $INPUTS; do "$HERE/live.sh" "$input" "$CORPUS/$input.apk" "$KS" "${BENCH_LIVE_EDITS:-20}" || log "live on $input failed"; done
fi

# --- Report -----------------------------------------------------------------------------------------------------
python3 "$HERE/report.py" --results "$RESULTS" --commands "$COMMANDS" --corpus "$CORPUS" --inputs "$INPUTS" \
    --work "$WORK" --runs "$RUNS" --quick "$QUICK" --apkpatch "$APKPATCH" --output "$OUTPUT" || { log "report failed"; exit 1; }
log "wrote $OUTPUT"
