#!/usr/bin/env python3
"""Interleaved A/B of whole `tool-cli` processes (issue 26, P1; docs/benchmarks.md, "P1: the
default build").

Starts one release daemon serving the demo server (`--print-env`, so `TOOL_CLI_DAEMON_ID` makes
a call one request), then runs every command line given, one process at a time, in rounds:
A B C … then C B A …, so drift in the machine's load falls on all of them alike. Each process is
spawned and reaped with `os.wait4`, which gives its own CPU time (user + system) beside the wall
time from spawn to exit. Prints the medians (and p10/p90) per command and each one's ratio to
the first command's medians, which should be the empty binary (row (j)).

    scripts/p1-ab.py --daemon target/release/tool-cli-daemon --runs 500 \
        'noop=target/release/examples/noop' \
        'before=/tmp/tool-cli-before demo sql_query {"sql":"select 1"}' \
        'after=target/release/tool-cli demo sql_query {"sql":"select 1"}'

A command is NAME=PROGRAM ARG…, split on spaces; the last word may contain spaces only if it is
the JSON argument (everything after the second word of a `demo` call is kept whole). Nothing is
left running: the daemon is stopped (SIGTERM, then waited for) on every way out.
"""

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time


def parse_command(text):
    name, _, line = text.partition("=")
    words = line.split(" ", 3)
    # `PROGRAM server tool JSON`: the JSON argument is kept whole, spaces and all.
    return name, words


def start_daemon(daemon, runtime_dir):
    env = dict(os.environ, XDG_RUNTIME_DIR=runtime_dir)
    process = subprocess.Popen(
        [daemon, "--print-env"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    exports = {}
    for line in process.stdout:
        line = line.strip()
        if line.startswith("export ") and "=" in line:
            key, _, value = line[len("export "):].partition("=")
            exports[key] = value.strip("'\"")
    # --print-env releases stdout once every server has settled: the loop above ends there.
    if "TOOL_CLI_PORT" not in exports:
        process.terminate()
        process.wait()
        sys.exit("the daemon printed no TOOL_CLI_PORT")
    return process, exports


def run_once(words, env):
    start = time.perf_counter_ns()
    pid = os.posix_spawn(words[0], words, env, file_actions=[
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
    ])
    _, status, usage = os.wait4(pid, 0)
    wall = (time.perf_counter_ns() - start) / 1000.0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(words)} exited with {os.waitstatus_to_exitcode(status)}")
    cpu = (usage.ru_utime + usage.ru_stime) * 1e6
    return wall, cpu, usage.ru_minflt


def quantile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--daemon", required=True)
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("commands", nargs="+")
    options = parser.parse_args()
    commands = [parse_command(text) for text in options.commands]

    with tempfile.TemporaryDirectory(prefix="p1-ab-") as runtime_dir:
        daemon, exports = start_daemon(options.daemon, runtime_dir)
        try:
            env = dict(os.environ, XDG_RUNTIME_DIR=runtime_dir, **exports)
            results = {name: [] for name, _ in commands}
            order = list(commands)
            for round_index in range(options.warmup + options.runs):
                for name, words in order:
                    sample = run_once(words, env)
                    if round_index >= options.warmup:
                        results[name].append(sample)
                order.reverse()
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait()

    load = os.getloadavg()
    print(f"{options.runs} runs each after {options.warmup} untimed, load average "
          f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print("| command | wall median (p10–p90) | ÷ first | CPU median (p10–p90) | ÷ first | minor faults |")
    print("|---|--:|--:|--:|--:|--:|")
    first_wall = first_cpu = None
    for name, _ in commands:
        walls = [s[0] for s in results[name]]
        cpus = [s[1] for s in results[name]]
        faults = [s[2] for s in results[name]]
        wall, cpu = statistics.median(walls), statistics.median(cpus)
        if first_wall is None:
            first_wall, first_cpu = wall, cpu
        print(f"| {name} | {wall:.1f} µs ({quantile(walls, 0.1):.0f}–{quantile(walls, 0.9):.0f}) "
              f"| {wall / first_wall:.2f}× | {cpu:.1f} µs ({quantile(cpus, 0.1):.0f}–"
              f"{quantile(cpus, 0.9):.0f}) | {cpu / first_cpu:.2f}× | {statistics.median(faults):.0f} |")


if __name__ == "__main__":
    main()
