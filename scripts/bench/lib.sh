# Shared helpers for the benchmark scripts (sourced, not run).
# Results go to $RESULTS as TSV: workload, input, tool, run, status (ok|FAILED), seconds, peak RSS (KiB).

log() { printf '[bench %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# Human-readable size of a file.
size_of() { stat -c %s "$1"; }

# record_command WORKLOAD TOOL COMMAND-TEXT: the command line shown in BENCHMARKS.md (one per workload and tool).
record_command() {
    local workload=$1 tool=$2; shift 2
    grep -q "^$workload	$tool	" "$COMMANDS" 2>/dev/null || printf '%s\t%s\t%s\n' "$workload" "$tool" "$*" >> "$COMMANDS"
}

# measure WORKLOAD INPUT TOOL RUN COMMAND-STRING: runs the command once under measure.py, appends one result row.
# measure.py times the command alone, from fork to wait4 (a `bash -c` and /usr/bin/time around it were ~5 ms
# of harness in every sample), and reads its peak RSS from wait4 as /usr/bin/time's %M does: the largest of
# the command and every child it waited for (the apktool chain is one script). A command with shell syntax
# still runs under bash -c. A failing command is recorded as FAILED and never stops the harness; its output
# stays in $LOGS.
measure() {
    local workload=$1 input=$2 tool=$3 run=$4 command=$5
    local tag="$workload.$input.$tool.$run" timefile="$LOGS/$workload.$input.$tool.$run.time"
    local status rss seconds
    python3 "$(dirname "${BASH_SOURCE[0]}")/measure.py" "$timefile" "$command" >"$LOGS/$tag.log" 2>&1
    status=$?
    read -r seconds rss < "$timefile" 2>/dev/null || { seconds=0; rss=0; }
    if [ "$status" -eq 0 ]; then
        printf '%s\t%s\t%s\t%s\tok\t%s\t%s\n' "$workload" "$input" "$tool" "$run" "$seconds" "${rss:-0}" >> "$RESULTS"
    else
        printf '%s\t%s\t%s\t%s\tFAILED\t%s\t%s\n' "$workload" "$input" "$tool" "$run" "$seconds" "${rss:-0}" >> "$RESULTS"
        log "FAILED ($status): $workload $input $tool run $run; see $LOGS/$tag.log"
        tail -n 5 "$LOGS/$tag.log" | sed 's/^/    /' >&2
    fi
    return 0
}

# settle: the same machine state at the start of every workload: dirty data written back and, where the
# harness may (root), the page cache and reclaimable slabs dropped. Without it each workload inherited what
# the ones before it left: after the align workload (gigabytes written and deleted) apkpatch sign of
# framework-res measured 100-130 ms in half its runs and 62-71 ms in the rest, 62-71 ms in all of them when
# the sign workload ran alone. The warm-up runs that follow read the inputs back into the page cache.
settle() {
    sync
    if [ -w /proc/sys/vm/drop_caches ]; then echo 3 > /proc/sys/vm/drop_caches; fi
}

# alternate WORKLOAD INPUT RUNS TOOL_A CMD_A TOOL_B CMD_B [PREPARE]: runs the two commands (bash strings)
# alternately RUNS times, with PREPARE (a bash string, e.g. deleting outputs) and then `sync` before each,
# untimed. The sync writes back what earlier runs and workloads left dirty (the align workload alone leaves
# gigabytes): otherwise the kernel's writeback threads take a core from whichever command runs while they
# flush, and on this 2-core machine that showed up as apkpatch sign of framework-res at 65 ms or 120-150 ms
# depending on its place in the sequence. Each command still pays for writing its own output. The order turns
# round every run (A B, B A, A B, …): whichever runs second finds the input freshly read into the page cache
# and the other tool's output still being written back, and on this machine (page cache reclaimed within
# seconds, 400 MB outputs) a fixed order showed up as a bias (apkpatch align of 400 MB: 0.1 s or 0.4-0.8 s).
alternate() {
    local workload=$1 input=$2 runs=$3 tool_a=$4 cmd_a=$5 tool_b=$6 cmd_b=$7 prepare=${8:-true}
    record_command "$workload" "$tool_a" "$cmd_a"
    record_command "$workload" "$tool_b" "$cmd_b"
    log "$workload on $input: $tool_a vs $tool_b, one warm-up and $runs measured runs each"
    # One unmeasured run of each first (as hyperfine --warmup), after `settle`: the first run after another
    # workload pays for cold caches, not for the tool.
    settle
    bash -c "$prepare"; sync; bash -c "$cmd_a" >/dev/null 2>&1
    bash -c "$prepare"; sync; bash -c "$cmd_b" >/dev/null 2>&1
    local run
    for run in $(seq 1 "$runs"); do
        if [ $((run % 2)) -eq 1 ]; then
            bash -c "$prepare"; sync; measure "$workload" "$input" "$tool_a" "$run" "$cmd_a"
            bash -c "$prepare"; sync; measure "$workload" "$input" "$tool_b" "$run" "$cmd_b"
        else
            bash -c "$prepare"; sync; measure "$workload" "$input" "$tool_b" "$run" "$cmd_b"
            bash -c "$prepare"; sync; measure "$workload" "$input" "$tool_a" "$run" "$cmd_a"
        fi
    done
}
