#!/usr/bin/env bash
# Builds the libFuzzer targets in Tests/Fuzz (scratch path .build-fuzz) and runs each for FUZZ_SECONDS.
#
#   scripts/fuzz/run.sh                       # every target, 60 s each
#   FUZZ_SECONDS=600 scripts/fuzz/run.sh FuzzZip FuzzVerify
#   FUZZ_JOBS=2 ...                           # parallel libFuzzer workers per target
#
# Corpora grow in .build-fuzz/work/corpus/<Target> (seeded by scripts/fuzz/seeds.sh); a crash, hang (-timeout)
# or out-of-memory input lands in .build-fuzz/work/artifacts/<Target>/ and the script exits 1. Replay one with
# `.build-fuzz/release/<Target> FILE`, or without the sanitizer toolchain: `swift run <Target> FILE`. Keep it as a
# regression test under Tests/HardeningTests/Inputs/<Target>/.
set -uo pipefail
cd "$(dirname "$0")/../.."
SECONDS_PER_TARGET=${FUZZ_SECONDS:-60}
JOBS=${FUZZ_JOBS:-1}
WORK=$(realpath -m "${FUZZ_WORK:-.build-fuzz/work}")
ALL=(FuzzZip FuzzSigningBlock FuzzBinaryXML FuzzResourceTable FuzzKeyStore FuzzVerify FuzzTextXML FuzzJARSignature)
TARGETS=("$@"); [ ${#TARGETS[@]} -eq 0 ] && TARGETS=("${ALL[@]}")

if [ ! -d "$WORK/seeds" ] || [ -n "${FUZZ_RESEED:-}" ]; then
    FUZZ_WORK=$WORK scripts/fuzz/seeds.sh "${APKPATCH:-}" || { echo "fuzz: seed generation failed" >&2; exit 1; }
fi

# -DFUZZING makes FuzzSupport hand main() to libFuzzer; without it the targets only replay files.
BUILD=(swift build -c release --scratch-path .build-fuzz -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING)
failed=()
for target in "${TARGETS[@]}"; do
    echo "== $target: building"
    # Other work in the tree may edit a source mid-build ("modified during the build"): retry a few times.
    for attempt in 1 2 3; do
        log=$("${BUILD[@]}" --product "$target" 2>&1); status=$?
        echo "$log" | grep -E "error:|Build" | grep -v "^\[" | tail -5
        [ $status -eq 0 ] && break
        echo "$log" | grep -q "modified during the build" || break
    done
    binary=$PWD/.build-fuzz/release/$target
    if [ $status -ne 0 ] || [ ! -x "$binary" ]; then echo "fuzz: $target did not build" >&2; failed+=("$target(build)"); continue; fi
    corpus=$WORK/corpus/$target artifacts=$WORK/artifacts/$target
    mkdir -p "$corpus" "$artifacts"
    echo "== $target: fuzzing for ${SECONDS_PER_TARGET}s"
    # Swift's own crash backtracer would hold the process (and this script's pipes) after a trap; libFuzzer's
    # deadly-signal handler must see it instead. -timeout: an input taking over 10 s is a hang; -rss_limit_mb: OOM.
    # With -jobs, libFuzzer writes fuzz-N.log to the current directory: run from $WORK.
    parallel=(); [ "$JOBS" -gt 1 ] && parallel=(-jobs="$JOBS" -workers="$JOBS")
    (cd "$WORK" && SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1} \
        "$binary" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        "${parallel[@]}" -print_final_stats=1 -artifact_prefix="$artifacts/" \
        "$corpus" "$WORK/seeds/$target" > "$WORK/$target.log" 2>&1)
    status=$?
    tail -n 12 "$WORK/$target.log" | grep -E "stat::|ERROR|SUMMARY|Done|==" || true
    found=$(find "$artifacts" -type f | wc -l)
    if [ "$status" -ne 0 ] || [ "$found" -gt 0 ]; then
        echo "fuzz: $target FAILED (exit $status, $found artifact(s) in $artifacts; log $WORK/$target.log)" >&2
        failed+=("$target")
    else
        echo "fuzz: $target ok ($(ls "$corpus" | wc -l) corpus inputs)"
    fi
done
[ ${#failed[@]} -eq 0 ] || { echo "fuzz: failures: ${failed[*]}" >&2; exit 1; }
