#!/usr/bin/env python3
"""Instructions the daemon itself executes per request (issue 26, P2), counted by callgrind: a
figure that does not move with the machine's load, where wall time and CPU time on a shared
two-core machine do (read those with ab_variants.py and its A/A).

Each variant is a daemon executable run under `valgrind --tool=callgrind` (its demo server and
the fault server run natively: only the daemon's own instructions are counted), set up as
ab_variants.py sets it up. After WARMUP requests the counters are zeroed (`callgrind_control
-z`), CALLS requests of METHOD are sent over one kept-alive connection, and the counters are
dumped (`callgrind_control -d`); the dump's total divided by CALLS is the figure. Valgrind runs
the daemon's threads one at a time, so the figure counts work, not waiting.

usage: callgrind_per_call.py CALLS METHOD NAME=EXE ...    (METHOD: callTool or getBridgeInfo)
  e.g. callgrind_per_call.py 2000 callTool base=/tmp/base-daemon ours=target/release/tool-cli-daemon
The dumps stay in a temp dir printed at the end (`callgrind_annotate --inclusive=yes FILE`).
"""
import glob, os, shutil, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
source = open(os.path.join(HERE, "ab_variants.py")).read().rsplit("\nmain()", 1)[0]
ab = {"__name__": "ab_variants", "__file__": os.path.join(HERE, "ab_variants.py")}
exec(compile(source, "ab_variants.py", "exec"), ab)

WARMUP = 300
PARAMS = {
    "callTool": {"server": "demo", "tool": "sql_query", "arguments": {"sql": "select 1"}},
    "getBridgeInfo": {},
}


def main():
    calls, method = int(sys.argv[1]), sys.argv[2]
    params = PARAMS[method]
    work = tempfile.mkdtemp(prefix="callgrind-per-call-")
    dumps = os.path.join(work, "dumps")
    os.makedirs(dumps)
    for spec in sys.argv[3:]:
        name, exe = spec.split("=", 1)
        exe = os.path.abspath(exe)
        # The daemon under callgrind; `demo-server` (the same executable) natively.
        wrapper = os.path.join(work, f"{name}.sh")
        with open(wrapper, "w") as f:
            f.write(f'#!/bin/sh\n[ "$1" = demo-server ] && exec "{exe}" "$@"\n'
                    f'exec valgrind --tool=callgrind --callgrind-out-file={dumps}/{name}.%p "{exe}" "$@"\n')
        os.chmod(wrapper, 0o755)
        daemon = ab["Daemon"](name, wrapper, {}, work)
        try:
            for _ in range(WARMUP):
                daemon.conn.call(method, params)
            subprocess.run(["callgrind_control", "-z", str(daemon.proc.pid)], check=True, capture_output=True)
            before = set(glob.glob(f"{dumps}/{name}.{daemon.proc.pid}*"))
            for _ in range(calls):
                daemon.conn.call(method, params)
            subprocess.run(["callgrind_control", "-d", str(daemon.proc.pid)], check=True, capture_output=True)
            total = 0
            for dump in set(glob.glob(f"{dumps}/{name}.{daemon.proc.pid}*")) - before:
                with open(dump) as f:
                    for line in f:
                        if line.startswith(("summary:", "totals:")):
                            total += int(line.split()[1])
                            break
            print(f"{name:>12}: {method} {total / calls:,.0f} instructions per request in the daemon "
                  f"({calls} requests)", flush=True)
        finally:
            daemon.stop()
    for spec in sys.argv[3:]:
        name = spec.split("=", 1)[0]
        shutil.rmtree(os.path.join(work, name), ignore_errors=True)
        os.remove(os.path.join(work, f"{name}.sh"))
    print(f"dumps: {dumps}")


main()
