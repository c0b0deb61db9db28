#!/usr/bin/env python3
"""searchTools round trips through a real daemon with the search model, on 1,000 real-looking
tools (docs/search.md, "Latency with a model").

    cargo build --release -p tool-cli-daemon
    bash scripts/install-minilm.sh target/minilm
    python3 scripts/bench-search-daemon.py [--tools 1000] [--model target/minilm] [--daemon PATH]

It serves the first N tools of search/eval/catalog.json from this same script acting as an MCP
stdio server (one server per catalog server, as the catalog groups them), starts
tool-cli-daemon on a port it picks (--print-env, --ready-when none) with a fresh state directory
(no vector cache), then:

1. while the daemon's background pass embeds the tools: sends distinct requests one after
   another and reports their round trips (they rank lexically, "pending", and must not queue
   behind the pass);
2. once health says the model is ready: the time the pass took, then 300 distinct requests,
   one after another, p50 / p99 of the round trip and of the daemon's own tookUs;
3. the same requests again from 8 concurrent clients (memoised vectors: the index's own cost
   and the HTTP path).

Everything stays on loopback; the daemon is stopped at the end. This is a measurement, not a
test: it asserts nothing.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time

from local_daemon import started_daemon

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def serve(catalog_path, server_name, count):
    """The MCP stdio server: answers initialize and tools/list with the catalog's tools."""
    with open(catalog_path) as f:
        servers = json.load(f)
    tools = []
    for server in servers:
        for tool in server["tools"]:
            tools.append((server["name"], tool))
    tools = [tool for name, tool in tools[:count] if name == server_name]
    for line in sys.stdin:
        message = json.loads(line)
        method, ident = message.get("method"), message.get("id")
        if ident is None:
            continue
        if method == "initialize":
            result = {
                "protocolVersion": message["params"].get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": server_name, "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": tools}
        else:
            print(json.dumps({"jsonrpc": "2.0", "id": ident,
                              "error": {"code": -32601, "message": "not here"}}), flush=True)
            continue
        print(json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}), flush=True)


def percentile(values, share):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=int, default=1000)
    parser.add_argument("--model", default=os.path.join(ROOT, "target", "minilm"))
    parser.add_argument("--daemon", default=os.path.join(ROOT, "target", "release", "tool-cli-daemon"))
    parser.add_argument("--serve", nargs=2, metavar=("CATALOG", "SERVER"))
    arguments = parser.parse_args()
    catalog = os.path.join(ROOT, "search", "eval", "catalog.json")
    if arguments.serve:
        serve(arguments.serve[0], arguments.serve[1], arguments.tools)
        return

    with open(catalog) as f:
        servers = json.load(f)
    names, seen = [], 0
    for server in servers:
        if seen >= arguments.tools:
            break
        names.append(server["name"])
        seen += len(server["tools"])
    requests = []
    for half in ("dev.tsv", "test.tsv"):
        with open(os.path.join(ROOT, "search", "eval", half)) as f:
            requests += [line.split("\t", 1)[1].strip() for line in f
                         if "\t" in line and not line.startswith("#")]

    work = tempfile.mkdtemp(prefix="bench-search-")
    config = {
        "mcpServers": {
            name: {
                "command": sys.executable,
                "args": [os.path.abspath(__file__), "--tools", str(arguments.tools),
                         "--serve", catalog, name],
            }
            for name in names
        },
        "search": {"model": os.path.abspath(arguments.model)},
    }
    with started_daemon(arguments.daemon, config, work) as daemon:
        def call(method, params):
            started = time.perf_counter()
            answer, _ = daemon.post("/", {"jsonrpc": "2.0", "id": 1, "method": method,
                                          "params": params})
            return answer, (time.perf_counter() - started) * 1000

        def search_model():
            answer, _ = call("health", {})
            return (answer.get("result") or {}).get("search") or {}

        started = time.monotonic()
        while True:
            status = search_model()
            if status.get("tools", 0) >= min(arguments.tools, 900) or time.monotonic() - started > 60:
                break
            time.sleep(0.05)
        indexed_at = time.monotonic()
        print(f"{status.get('tools')} tools indexed in {indexed_at - started:.1f} s; model {status.get('model')}")

        during, pending = [], 0
        index = 0
        while search_model().get("model") != "ready":
            answer, took = call("searchTools", {"query": requests[index % len(requests)] + f" ({index})"})
            during.append(took)
            pending += answer["result"].get("semantic") == "pending"
            index += 1
            if time.monotonic() - indexed_at > 300:
                break
        ready_at = time.monotonic()
        status = search_model()
        print(f"background pass: {status.get('withVectors')} of {status.get('tools')} tools embedded "
              f"in {ready_at - indexed_at:.1f} s ({status.get('model')})")
        if during:
            print(f"during the pass: {len(during)} requests ({pending} pending), round trip p50 "
                  f"{percentile(during, 0.5):.1f} ms, p99 {percentile(during, 0.99):.1f} ms")

        trips, took_us, kinds = [], [], {}
        for query in requests[:300]:
            answer, took = call("searchTools", {"query": query})
            trips.append(took)
            took_us.append(answer["result"]["tookUs"] / 1000)
            kind = answer["result"].get("semantic")
            kinds[kind] = kinds.get(kind, 0) + 1
        print(f"300 distinct requests, one at a time ({kinds}): round trip p50 {percentile(trips, 0.5):.1f} ms, "
              f"p99 {percentile(trips, 0.99):.1f} ms; tookUs p50 {percentile(took_us, 0.5):.1f} ms, "
              f"p99 {percentile(took_us, 0.99):.1f} ms")

        concurrent, lock = [], threading.Lock()

        def client(offset):
            for query in requests[offset:300:8]:
                _, took = call("searchTools", {"query": query})
                with lock:
                    concurrent.append(took)
        threads = [threading.Thread(target=client, args=(offset,)) for offset in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        print(f"the same 300 again from 8 clients at once (memoised): round trip p50 "
              f"{percentile(concurrent, 0.5):.1f} ms, p99 {percentile(concurrent, 0.99):.1f} ms, "
              f"mean {statistics.mean(concurrent):.1f} ms")


if __name__ == "__main__":
    main()
