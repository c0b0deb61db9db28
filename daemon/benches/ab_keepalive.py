#!/usr/bin/env python3
# Interleaved A/B of two running daemons' `callTool` latency over kept-alive HTTP/1.1 connections
# (issue 13, P2): one call to A, one to B, alternating, so both see the same load; medians of all
# calls and of each round's ratio. Both daemons must serve a server named `demo` (the bundled demo
# server: `{"mcpServers":{"demo":{"command":"<daemon exe>","args":["demo-server","--db","<file>"]}}}`),
# started with `--port 0 --print-env --no-traces`, each with its own TOOL_CLI_RUNTIME_DIR and HOME.
# Usage: ab_keepalive.py ROUNDS CALLS PORT_A TOKEN_A PORT_B TOKEN_B
# The bench's TOOL_CLI_BENCH_DAEMON_G row also changes the log level; this compares builds alone.
import socket, sys, json, time, statistics
rounds, calls = int(sys.argv[1]), int(sys.argv[2])
def conn(port, token):
    s = socket.create_connection(("127.0.0.1", port)); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return [s, f"POST / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nAccept: application/json\r\n".encode(), b""]
def call(c, i):
    s, head, buf = c
    body = json.dumps({"jsonrpc": "2.0", "id": i, "method": "callTool", "params": {"server": "demo", "tool": "sql_query", "arguments": {"sql": "select 1"}}}).encode()
    s.sendall(head + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    while b"\r\n\r\n" not in buf: buf += s.recv(65536)
    h, _, rest = buf.partition(b"\r\n\r\n")
    ln = int([l for l in h.split(b"\r\n") if l.lower().startswith(b"content-length")][0].split(b":")[1])
    while len(rest) < ln: rest += s.recv(65536)
    c[2] = rest[ln:]
    assert b'"result"' in rest[:ln]
a = conn(int(sys.argv[3]), sys.argv[4]); b = conn(int(sys.argv[5]), sys.argv[6])
for i in range(300): call(a, i); call(b, i)
ta, tb, ratios = [], [], []
for r in range(rounds):
    ra, rb = [], []
    for i in range(calls):
        t = time.perf_counter(); call(a, i); ra.append(time.perf_counter() - t)
        t = time.perf_counter(); call(b, i); rb.append(time.perf_counter() - t)
    ta += ra; tb += rb; ratios.append(statistics.median(ra) / statistics.median(rb))
ma, mb = statistics.median(ta), statistics.median(tb)
print(f"A median {ma*1e6:.1f} us, B median {mb*1e6:.1f} us, A/B {ma/mb:.3f}; per round median {statistics.median(ratios):.3f} range {min(ratios):.3f}-{max(ratios):.3f} over {rounds} rounds of {calls} calls each")
