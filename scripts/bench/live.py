#!/usr/bin/env python3
"""(9) Live reload latency: save of a 100 KB JavaScript file -> reload event received by a page.

usage: live.py APKPATCH INPUT_APK PATCH_DIR OUT_APK KEYSTORE LABEL RUNS RESULTS LOG

Starts `apkpatch watch --live --json` (a fake adb on PATH records and succeeds: there is no device), waits for
the development build to be "installed", subscribes to the server-sent-events stream as a page would, then RUNS
times saves assets/www/js/bench-live.js the way editors do (write a temp file, rename it over) and waits for
the `reload` event naming it. Two rows per save in RESULTS:
  live / save-to-event   measured here: from just before the rename to the event's bytes read from the socket
  live / apkpatch        what apkpatch reports (`reloaded` line: first inotify event -> event written)
Peak memory is the watcher's VmHWM (/proc/PID/status) after the save.
"""
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time

apkpatch, apk, patch, out, keystore, label, runs, results, log_path = sys.argv[1:10]
runs = int(runs)
edit_name = "assets/www/js/bench-live.js"
edit = os.path.join(patch, edit_name)


def js(run):
    lines = [f"// live benchmark edit {run}\n"]
    lines += [f"window.benchLive{i} = function (a) {{ return a * {i} + {run}; }};  // padding padding padding\n" for i in range(1, 801)]
    return "".join(lines).encode()


def save(run):
    """Writes the file beside, then renames it over; returns the monotonic time just before the rename."""
    data = js(run)
    fd, tmp = tempfile.mkstemp(prefix=".bench-live.", suffix=".tmp", dir=os.path.dirname(edit))
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    start = time.monotonic_ns()
    os.rename(tmp, edit)
    return start


recorded = 0  # saves with rows in RESULTS


def record(tool, run, ok, seconds, rss):
    global recorded
    recorded = max(recorded, run)
    with open(results, "a") as f:
        f.write(f"live\t{label}\t{tool}\t{run}\t{'ok' if ok else 'FAILED'}\t{seconds:.6f}\t{rss}\n")


def fail_all(reason):
    print(f"[live] {label} FAILED: {reason} (see {log_path})", file=sys.stderr)
    for run in range(recorded + 1, runs + 1):
        record("save-to-event", run, False, 0, 0)
        record("apkpatch", run, False, 0, 0)


def peak_rss(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


os.makedirs(os.path.dirname(edit), exist_ok=True)
with open(edit, "wb") as f:
    f.write(js(0))
fake_adb = tempfile.mkdtemp(prefix="bench-fake-adb.")
with open(os.path.join(fake_adb, "adb"), "w") as f:
    f.write("#!/bin/sh\nexit 0\n")
os.chmod(os.path.join(fake_adb, "adb"), 0o755)
env = dict(os.environ, PATH=fake_adb + ":" + os.environ.get("PATH", "/usr/bin:/bin"))
log = open(log_path, "w")
process = subprocess.Popen([apkpatch, "watch", apk, "--patch", patch, "--out", out, "--live", "--live-port", "0", "--json",
                            "--ks", keystore, "--ks-pass", "env:BENCH_KS_PASS"],
                           stdout=subprocess.PIPE, stderr=log, env=env, bufsize=0)
events = []  # apkpatch's JSON lines
pending = b""  # bytes read from apkpatch's stdout, not yet a whole line (select sees the pipe, not a reader's buffer)


def read_line(deadline):
    global pending
    while True:
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            log.write(line.decode(errors="replace") + "\n")
            log.flush()
            try:
                events.append(json.loads(line))
                return events[-1]
            except ValueError:
                continue
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        ready, _, _ = select.select([process.stdout], [], [], remaining)
        if not ready:
            return None
        chunk = os.read(process.stdout.fileno(), 65536)
        if not chunk:
            return None
        pending += chunk


def wait_for(kind, seconds):
    deadline = time.monotonic() + seconds
    while True:
        event = read_line(deadline)
        if event is None:
            return None
        if event.get("event") == kind:
            return event


try:
    started = wait_for("liveStarted", 120)
    installed = started and wait_for("installed", 300)  # the first build reads and signs the whole APK
    if not installed:
        fail_all("no development build installed")
        sys.exit(0)
    port = started["port"]
    stream = socket.create_connection(("127.0.0.1", port), timeout=10)
    stream.sendall(f"GET /__apkpatch/events HTTP/1.1\r\nHost: localhost:{port}\r\nAccept: text/event-stream\r\n\r\n".encode())
    received = b""
    while b"retry:" not in received:
        received += stream.recv(4096)
    for run in range(1, runs + 1):
        time.sleep(0.2)  # editors do not save faster than this
        received = b""
        needle = b'"changed":["js/bench-live.js"]'
        start = save(run)
        ok = True
        deadline = time.monotonic() + 10
        while needle not in received:
            if time.monotonic() > deadline:
                ok = False
                break
            ready, _, _ = select.select([stream], [], [], 0.5)
            if ready:
                chunk = stream.recv(65536)
                if not chunk:
                    ok = False
                    break
                received += chunk
        end = time.monotonic_ns()
        reported = wait_for("reloaded", 10) if ok else None
        # The served file must be this run's, or the reload would show the wrong code.
        if ok:
            page = socket.create_connection(("127.0.0.1", port), timeout=10)
            page.sendall(f"GET /js/bench-live.js HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".encode())
            body = b""
            while True:
                chunk = page.recv(65536)
                if not chunk:
                    break
                body += chunk
            page.close()
            if f"// live benchmark edit {run}\n".encode() not in body:
                ok = False
                print(f"[live] {label} run {run}: the server did not serve this run's edit", file=sys.stderr)
        rss = peak_rss(process.pid)
        record("save-to-event", run, ok, (end - start) / 1e9, rss)
        if ok and reported and "milliseconds" in reported:
            record("apkpatch", run, True, reported["milliseconds"] / 1000, rss)
        else:
            record("apkpatch", run, False, 0, rss)
    stream.close()
except Exception as error:  # a failed workload is reported as FAILED rows, never stops the harness
    fail_all(repr(error))
finally:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    log.close()
