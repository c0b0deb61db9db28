#!/usr/bin/env python3
"""Interleaved A/B of tool-cli-daemon variants (issue 26, P2/P3): each variant is a daemon
executable (a build, or a wrapper script that sets an environment and execs one) with optional
environment settings. Every daemon serves its own bundled demo server and a fault server; the
rounds alternate between them (the one going first rotates), each round doing CALLS kept-alive
`callTool`s of `demo.sql_query` per daemon and, in the first BURSTS rounds, one burst of 100
concurrent 10 ms `sleep` calls per daemon (threads of this script: read bursts as a rough
signal, the bench's row (o) is the measure).

Besides latency it reports what a bench row cannot: each daemon's own CPU (user + system, from
/proc/PID/stat) and context switches (all its threads, /proc/PID/task/*/status) per call, over
the kept-alive calls only. The first variant is the base of the per-round ratios; give the same
executable twice to see the noise of an A/A.

usage: ab_variants.py ROUNDS CALLS BURSTS NAME=EXE[:ENV=VAL,...] ...
  e.g. ab_variants.py 12 1000 0 base=target/release/tool-cli-daemon \
           one=target/release/tool-cli-daemon:TOKIO_WORKER_THREADS=1
The fault server is target/release/tool-cli-fault-server next to this checkout, or
TOOL_CLI_AB_FAULT_SERVER. Daemons get their own HOME and runtime dirs in a temp dir, removed at
the end.
"""
import json, os, shutil, socket, statistics, subprocess, sys, tempfile, threading, time

FAULT = os.environ.get("TOOL_CLI_AB_FAULT_SERVER") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "target", "release", "tool-cli-fault-server")


class Conn:
    def __init__(self, port, token):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.token = token
        self.port = port
        self.buf = b""
        self.id = 0

    def call(self, method, params):
        self.id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params}).encode()
        head = (f"POST / HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nAuthorization: Bearer {self.token}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
        self.sock.sendall(head + body)
        while b"\r\n\r\n" not in self.buf:
            self.buf += self.sock.recv(65536)
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        while len(rest) < length:
            rest += self.sock.recv(65536)
        self.buf = rest[length:]
        answer = json.loads(rest[:length])
        if "error" in answer:
            raise RuntimeError(answer)
        return answer


def cpu_and_switches(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    switches = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/status") as f:
                for line in f:
                    if "ctxt_switches" in line:
                        switches += int(line.split()[1])
        except FileNotFoundError:
            pass
    return ticks, switches


class Daemon:
    def __init__(self, name, exe, env, dir):
        self.name = name
        d = os.path.join(dir, name)
        os.makedirs(os.path.join(d, "rt"))
        config = {"mcpServers": {
            "demo": {"command": exe, "args": ["demo-server", "--db", os.path.join(d, "demo.sqlite")]},
            "fault": {"command": FAULT, "args": []},
        }}
        path = os.path.join(d, "servers.json")
        with open(path, "w") as f:
            json.dump(config, f)
        environment = dict(os.environ, HOME=d, TOOL_CLI_RUNTIME_DIR=os.path.join(d, "rt"))
        environment.pop("RUST_LOG", None)
        environment.update(env)
        self.log = open(os.path.join(d, "daemon.log"), "w")
        self.proc = subprocess.Popen([exe, "--config", path, "--port", "0", "--print-env"],
                                     stdout=subprocess.PIPE, stderr=self.log, env=environment, text=True)
        self.port = self.token = None
        for line in self.proc.stdout:
            if line.startswith("export TOOL_CLI_PORT="):
                self.port = int(line.split("=")[1])
            elif line.startswith("export TOOL_CLI_TOKEN="):
                self.token = line.split("=")[1].strip()
        self.conn = None
        if self.port is None or self.token is None:
            self.stop()
            raise RuntimeError(f"{exe} printed no port and token; see {self.log.name}")
        self.conn = Conn(self.port, self.token)
        # Both servers answer once they are connected: wait for that (at most a minute).
        for attempt in range(600):
            try:
                self.conn.call("callTool", {"server": "demo", "tool": "sql_query", "arguments": {"sql": "select 1"}})
                self.conn.call("callTool", {"server": "fault", "tool": "sleep", "arguments": {"ms": 1}})
                break
            except RuntimeError:
                if attempt == 599:
                    self.stop()
                    raise
                time.sleep(0.1)
        self.latencies = []
        self.bursts = []
        self.cpu = 0
        self.switches = 0
        self.calls = 0

    def run_calls(self, n):
        params = {"server": "demo", "tool": "sql_query", "arguments": {"sql": "select 1"}}
        before = cpu_and_switches(self.proc.pid)
        out = []
        for _ in range(n):
            t = time.perf_counter_ns()
            self.conn.call("callTool", params)
            out.append(time.perf_counter_ns() - t)
        after = cpu_and_switches(self.proc.pid)
        self.cpu += after[0] - before[0]
        self.switches += after[1] - before[1]
        self.calls += n
        self.latencies.extend(out)
        return statistics.median(out)

    def burst(self, conns):
        start = threading.Barrier(len(conns) + 1)
        errors = []

        def one(conn):
            start.wait()
            try:
                conn.call("callTool", {"server": "fault", "tool": "sleep", "arguments": {"ms": 10}})
            except Exception as e:
                errors.append(e)
        threads = [threading.Thread(target=one, args=(c,)) for c in conns]
        for t in threads:
            t.start()
        start.wait()
        t0 = time.perf_counter_ns()
        for t in threads:
            t.join()
        took = time.perf_counter_ns() - t0
        if errors:
            raise RuntimeError(errors[0])
        self.bursts.append(took)

    def stop(self):
        if self.conn is not None:
            self.conn.sock.close()
        self.proc.terminate()
        self.proc.wait()
        self.log.close()


def main():
    rounds, calls, bursts = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    specs = []
    for arg in sys.argv[4:]:
        name, rest = arg.split("=", 1)
        exe, _, envs = rest.partition(":")
        env = dict(e.split("=", 1) for e in envs.split(",") if e)
        specs.append((name, exe, env))
    dir = tempfile.mkdtemp(prefix="tool-cli-ab-")
    daemons, burst_conns = [], {}
    try:
        for name, exe, env in specs:
            daemons.append(Daemon(name, exe, env, dir))
        for d in daemons:
            burst_conns[d.name] = [Conn(d.port, d.token) for _ in range(100)] if bursts else []
        load0 = os.getloadavg()
        # Untimed warm-up, then the counters start from zero.
        for d in daemons:
            d.run_calls(max(50, calls // 10))
            if bursts:
                d.burst(burst_conns[d.name])
            d.latencies, d.bursts, d.cpu, d.switches, d.calls = [], [], 0, 0, 0
        per_round = {d.name: [] for d in daemons}
        for r in range(rounds):
            order = daemons[r % len(daemons):] + daemons[:r % len(daemons)]
            for d in order:
                per_round[d.name].append(d.run_calls(calls))
            if r < bursts:
                for d in order:
                    d.burst(burst_conns[d.name])
    finally:
        for conns in burst_conns.values():
            for c in conns:
                c.sock.close()
        for d in daemons:
            d.stop()
        shutil.rmtree(dir, ignore_errors=True)
    load1 = os.getloadavg()
    hz = os.sysconf("SC_CLK_TCK")
    base = daemons[0]
    print(f"load average before {load0[0]:.2f}, after {load1[0]:.2f}; {rounds} rounds x {calls} calls, {bursts} bursts")
    for d in daemons:
        ratios = [a / b for a, b in zip(per_round[d.name], per_round[base.name])]
        lat = sorted(d.latencies)
        line = (f"{d.name:>12}: callTool median {statistics.median(lat)/1000:.1f} us p90 {lat[int(len(lat)*0.9)]/1000:.1f} us; "
                f"per-round median ratio to {base.name} {statistics.median(ratios):.3f} (range {min(ratios):.2f}-{max(ratios):.2f}); "
                f"daemon CPU {d.cpu / hz / d.calls * 1e6:.1f} us/call, {d.switches / d.calls:.2f} ctx switches/call")
        if d.bursts:
            line += f"; burst median {statistics.median(d.bursts)/1e6:.2f} ms"
        print(line)


main()
