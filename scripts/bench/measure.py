#!/usr/bin/env python3
"""Runs one benchmark command and records its wall time and peak memory.

usage: measure.py TIMEFILE COMMAND-STRING

The clock runs from just before fork to wait4's return, so what is timed is the command itself, not the
harness: a `bash -c` and `/usr/bin/time` around it cost ~5 ms of process start-up, a large share of a 30 ms
command. A command string without shell syntax is split with shlex and exec'd directly, and `a && b` runs the two
in turn (the floor); anything else with shell syntax runs under `bash -c`, for every tool alike. Leading
`NAME=value` words set the command's environment, as in a shell, without a shell or `env` in between.
Peak memory is wait4's ru_maxrss: the command's own peak, or that of the largest process it waited for,
as /usr/bin/time's %M reports it. Writes "SECONDS RSS_KIB" to TIMEFILE and exits with the command's status.
"""
import os
import re
import shlex
import sys
import time

SHELL_SYNTAX = set("|&;<>()$`*?[]{}~\n")


def commands(command: str) -> list[list[str]]:
    """The argv lists to run in turn: `a && b` without other shell syntax is two commands run one after the
    other (stopping at the first failure); anything else with shell syntax is one `bash -c`."""
    if not any(c in SHELL_SYNTAX for c in command):
        return [shlex.split(command)]
    tokens = shlex.split(command)
    if any(any(c in SHELL_SYNTAX for c in t) and t != "&&" for t in tokens) or any(c in command for c in "|;<>$`"):
        return [["bash", "-c", command]]
    argvs, current = [], []
    for token in tokens:
        if token == "&&":
            argvs.append(current)
            current = []
        else:
            current.append(token)
    return argvs + [current]


def main() -> int:
    timefile, command = sys.argv[1], sys.argv[2]
    peak, code = 0, 0
    start = time.perf_counter_ns()
    for argv in commands(command):
        environment = dict(os.environ)
        while argv and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", argv[0]):
            name, value = argv[0].split("=", 1)
            environment[name] = value
            argv = argv[1:]
        pid = os.fork()
        if pid == 0:
            try:
                os.execvpe(argv[0], argv, environment)
            finally:
                os._exit(127)
        _, status, usage = os.wait4(pid, 0)
        peak = max(peak, usage.ru_maxrss)
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            break
    elapsed = (time.perf_counter_ns() - start) / 1e9
    with open(timefile, "w") as out:
        out.write(f"{elapsed:.4f} {peak}\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
