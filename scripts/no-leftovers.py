#!/usr/bin/env python3
"""Run a command and fail if it leaves anything behind: a process or a temporary file.

    python3 scripts/no-leftovers.py -- COMMAND [ARGS...]

The command runs with this process as its *child subreaper* (prctl PR_SET_CHILD_SUBREAPER), so
every process it starts that outlives its parent, including ones that started a new session or
process group, is re-parented here instead of to init, and can be found. It also runs with
TMPDIR set to a private directory, which must be empty when it ends.

When the command has ended, processes still running under us get a grace period to finish on
their own (a daemon in its orderly shutdown), then each is listed with its command line, killed
with its process group, and the run fails (exit 70 when the command itself succeeded). Files left
in the private TMPDIR are listed, removed, and fail the run the same way.
"""

import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

PR_SET_CHILD_SUBREAPER = 36
LEFTOVER_EXIT = 70
# How long processes left running may take to end on their own once the command has ended.
GRACE_SECONDS = 15


def set_child_subreaper():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        errno = ctypes.get_errno()
        sys.exit(f"no-leftovers: cannot become a child subreaper: {os.strerror(errno)}")


def parent_of(pid):
    """The parent pid of `pid`, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            text = stat.read()
    except OSError:
        return None
    # The command name is in parentheses and may hold spaces or parentheses itself.
    fields = text[text.rindex(b")") + 2 :].split()
    state, parent = fields[0], int(fields[1])
    return None if state == b"Z" else parent


def descendants():
    """Every live process whose chain of parents reaches this one."""
    me = os.getpid()
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            parent = parent_of(int(entry))
            if parent is not None:
                parents[int(entry)] = parent
    found = []
    for pid in parents:
        seen = set()
        current = pid
        while current in parents and current not in seen:
            seen.add(current)
            current = parents[current]
            if current == me:
                found.append(pid)
                break
    return sorted(found)


def reap():
    """Collects every exited child, so none lingers as a zombie."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def command_line(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def main():
    args = sys.argv[1:]
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        sys.exit(__doc__)
    set_child_subreaper()
    private_tmp = tempfile.mkdtemp(prefix="tool-cli-test-tmp.")
    environment = dict(os.environ, TMPDIR=private_tmp)
    # A signal to the wrapper (Ctrl-C, CI's timeout) goes to the command too, through the
    # terminal's process group; the wrapper keeps going to clean up after it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    status = subprocess.call(args, env=environment)

    deadline = time.monotonic() + GRACE_SECONDS
    left = descendants()
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        reap()
        left = descendants()
    failed = False
    if left:
        failed = True
        print(f"no-leftovers: {len(left)} process(es) outlived the run:", file=sys.stderr)
        for pid in left:
            print(f"  pid {pid}: {command_line(pid)}", file=sys.stderr)
        for pid in left:
            try:
                group = os.getpgid(pid)
                # A process left in our own group (a shell's `cmd &`) is killed alone: the
                # group is this wrapper's and its caller's too.
                if group != os.getpgrp():
                    os.killpg(group, signal.SIGKILL)
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.2)
        reap()

    files = []
    for directory, subdirectories, names in os.walk(private_tmp):
        files.extend(os.path.join(directory, name) for name in subdirectories + names)
    if files:
        failed = True
        print(f"no-leftovers: {len(files)} path(s) left in the run's TMPDIR:", file=sys.stderr)
        for path in sorted(files)[:50]:
            print(f"  {path}", file=sys.stderr)
    shutil.rmtree(private_tmp, ignore_errors=True)

    if status != 0:
        sys.exit(status if status > 0 else 128 - status)
    if failed:
        sys.exit(LEFTOVER_EXIT)
    print("no-leftovers: nothing outlived the run", file=sys.stderr)


if __name__ == "__main__":
    main()
