#!/usr/bin/env python3
"""The tokens an MCP host holds in tool definitions through tool-cli's gateway, in both modes,
on a live daemon serving a real catalog (docs/gateway.md, "Token figures"; README).

    cargo build -p tool-cli-daemon
    python3 scripts/gateway-token-figures.py [--tools 600] [--daemon target/debug/tool-cli-daemon]

It serves the first N tools of the tool search's evaluation catalog (search/eval/catalog.json:
real servers' tool definitions) from this same script acting as MCP stdio servers, one per
catalog server, starts tool-cli-daemon on a port it picks, opens a gateway session in each mode
(`POST /mcp`), and saves what the host receives: the `tools` array of `tools/list` and the
`instructions` of `initialize`. The counts are made by the gateway's own counters
(`cargo run -p tool-cli-gateway-core --features tiktoken --example count_tokens`): o200k_base,
cl100k_base and the built-in estimate. It also times 200 pass-through `tools/list` round trips
(p50, p99) while one more server hangs in its handshake and one cannot start. Everything stays on
loopback; the daemon is stopped at the end. A measurement, not a test.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from local_daemon import started_daemon

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CATALOG = os.path.join(ROOT, "search", "eval", "catalog.json")


def catalog_tools(count):
    with open(CATALOG) as f:
        servers = json.load(f)
    tools = []
    for server in servers:
        for tool in server["tools"]:
            tools.append((server["name"], tool))
    return tools[:count]


def serve(server_name, count):
    """The MCP stdio server: answers initialize and tools/list with the catalog's tools."""
    tools = [tool for name, tool in catalog_tools(count) if name == server_name]
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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=int, default=600)
    parser.add_argument("--daemon", default=os.path.join(ROOT, "target", "debug", "tool-cli-daemon"))
    parser.add_argument("--serve")
    arguments = parser.parse_args()
    if arguments.serve:
        serve(arguments.serve, arguments.tools)
        return
    expected = len(catalog_tools(arguments.tools))
    names = sorted({name for name, _ in catalog_tools(arguments.tools)})
    work = tempfile.mkdtemp(prefix="gateway-tokens-")
    config = {"mcpServers": {
        name: {"command": sys.executable,
               "args": [os.path.abspath(__file__), "--tools", str(arguments.tools), "--serve", name]}
        for name in names}}
    # One server that hangs in its handshake for ten minutes and one that cannot start: the
    # gateway's list must not wait for either.
    config["mcpServers"]["zz-hanging"] = {
        "command": os.path.join(os.path.dirname(arguments.daemon), "tool-cli-fault-server"),
        "args": ["--slow-start", "600000"]}
    config["mcpServers"]["zz-dead"] = {"command": "/nonexistent/gateway-figures-server"}
    with started_daemon(arguments.daemon, config, work) as daemon:
        def post(body, mode, session=None):
            headers = {"Tool-Cli-Gateway-Mode": mode}
            if session:
                headers["Mcp-Session-Id"] = session
            answer, response_headers = daemon.post("/mcp", body, headers)
            return answer, response_headers.get("Mcp-Session-Id")

        files = []
        for mode in ("pass-through", "progressive"):
            opened, session = post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "figures", "version": "1"}}}, mode)
            # Wait until every server's tools are listed (a server still starting lists none).
            deadline = time.monotonic() + 120
            while True:
                listed, _ = post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, mode, session)
                tools = listed["result"]["tools"]
                if mode == "progressive" or len(tools) >= expected or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            if mode == "pass-through":
                trips = []
                for _ in range(200):
                    started = time.perf_counter()
                    post({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, mode, session)
                    trips.append((time.perf_counter() - started) * 1000)
                trips.sort()
                print(f"pass-through tools/list of {len(tools)} tools, 200 round trips with one "
                      f"server hanging and one dead: p50 {trips[100]:.1f} ms, p99 {trips[197]:.1f} ms "
                      f"({os.path.basename(os.path.dirname(arguments.daemon))} build)")
            path = os.path.join(work, f"{mode}-tools.json")
            with open(path, "w") as f:
                json.dump(tools, f, separators=(",", ":"), ensure_ascii=False)
            files.append((f"{mode} tools/list: {len(tools)} tools", path))
            instructions = opened["result"].get("instructions")
            if instructions:
                path = os.path.join(work, f"{mode}-instructions.txt")
                with open(path, "w") as f:
                    f.write(instructions)
                files.append((f"{mode} instructions", path))
    subprocess.run(["cargo", "run", "-q", "-p", "tool-cli-gateway-core", "--features", "tiktoken",
                    "--example", "count_tokens", "--"] + [f"{label}={path}" for label, path in files],
                   cwd=ROOT, check=True)


if __name__ == "__main__":
    main()
