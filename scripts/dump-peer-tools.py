#!/usr/bin/env python3
"""Regenerates search/eval/peers.json: the tools of the real MCP peers, for the search evaluation.

Speaks MCP over stdio to each installed peer (initialize, notifications/initialized, tools/list,
following nextCursor) and writes one JSON object per server: name, description, tags, tools (as
the server listed them). Run from the repository root after scripts/install-peers.sh and a debug
build (the demo server is `target/debug/tool-cli-daemon demo-server`):

    python3 scripts/dump-peer-tools.py > search/eval/peers.json
"""

import json
import subprocess
import sys
import tempfile

ROOT_DIR = tempfile.mkdtemp(prefix="tool-cli-dump-")

# (server name, description, tags, command). Descriptions and tags are what a user would put in
# the servers config; they are part of what the search indexes.
PEERS = [
    ("everything", "Reference MCP server exercising every protocol feature", ["test", "reference"],
     ["node_modules/.bin/mcp-server-everything", "stdio"]),
    ("filesystem", "Local files and directories under an allowed root", ["files"],
     ["node_modules/.bin/mcp-server-filesystem", ROOT_DIR]),
    ("memory", "Knowledge-graph memory: entities, relations and observations", ["memory"],
     ["node_modules/.bin/mcp-server-memory"]),
    ("time", "Current time and time-zone conversion", ["time"],
     [".peers/venv/bin/mcp-server-time"]),
    ("demo", "Sample shop database, read-only SQL", ["demo", "sql"],
     ["target/debug/tool-cli-daemon", "demo-server"]),
]


def rpc(child, message_id, method, params):
    """Sends one request and returns its result, skipping notifications and log lines."""
    request = {"jsonrpc": "2.0", "id": message_id, "method": method, "params": params}
    child.stdin.write(json.dumps(request) + "\n")
    child.stdin.flush()
    while True:
        line = child.stdout.readline()
        if not line:
            raise RuntimeError(f"server closed its stdout while we waited for {method}")
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        if message.get("id") == message_id:
            if "error" in message:
                raise RuntimeError(f"{method} failed: {message['error']}")
            return message["result"]


def dump(command):
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
    try:
        rpc(child, 1, "initialize", {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "tool-cli-dump", "version": "0"},
        })
        child.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        child.stdin.flush()
        tools, cursor, message_id = [], None, 2
        while True:
            result = rpc(child, message_id, "tools/list", {"cursor": cursor} if cursor else {})
            tools.extend(result.get("tools", []))
            cursor = result.get("nextCursor")
            message_id += 1
            if not cursor:
                return tools
    finally:
        child.stdin.close()
        child.terminate()
        child.wait(timeout=10)


def main():
    servers = []
    for name, description, tags, command in PEERS:
        tools = dump(command)
        print(f"{name}: {len(tools)} tools", file=sys.stderr)
        servers.append({"name": name, "description": description, "tags": tags, "tools": tools})
    json.dump(servers, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
