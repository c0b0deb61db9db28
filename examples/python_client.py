#!/usr/bin/env python3
"""Talk to a running tool-cli daemon from Python with nothing but the standard library.

The daemon is found the way `tool-cli` finds it: TOOL_CLI_PORT / TOOL_CLI_TOKEN (and
TOOL_CLI_HOST) from the environment, else the runtime file the daemon writes. The script
performs the getBridgeInfo handshake, lists the servers, and calls the demo server's
`sql_query` tool.

    python3 examples/python_client.py
"""

import json
import os
import sys
import tempfile
import urllib.error
import urllib.request


def find_daemon():
    host = os.environ.get("TOOL_CLI_HOST", "127.0.0.1")
    port, token = os.environ.get("TOOL_CLI_PORT"), os.environ.get("TOOL_CLI_TOKEN")
    if port and token:
        return host, int(port), token
    runtime_dir = os.environ.get("TOOL_CLI_RUNTIME_DIR") or (
        os.path.join(os.environ["XDG_RUNTIME_DIR"], "tool-cli")
        if os.environ.get("XDG_RUNTIME_DIR")
        else os.path.join(tempfile.gettempdir(), f"tool-cli-{os.getuid()}")
    )
    with open(os.path.join(runtime_dir, "daemon.json")) as f:
        runtime = json.load(f)
    return runtime["host"], runtime["port"], runtime["token"]


class Bridge:
    def __init__(self, host, port, token):
        self.url = f"http://{host}:{port}/"
        self.token = token
        self.next_id = 0

    def call(self, method, params=None):
        self.next_id += 1
        request = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            request["params"] = params
        http_request = urllib.request.Request(
            self.url,
            data=json.dumps(request).encode(),
            headers={
                "Authorization": f"Bearer {self.token}",
                "Content-Type": "application/json",
            },
        )
        with urllib.request.urlopen(http_request, timeout=30) as response:
            reply = json.load(response)
        if "error" in reply:
            error = reply["error"]
            raise RuntimeError(f"{method} failed ({error['code']}): {error['message']}")
        return reply["result"]


def main():
    bridge = Bridge(*find_daemon())

    info = bridge.call("getBridgeInfo")
    protocol = info["bridgeProtocol"]
    if protocol["name"] != "tool-cli-bridge" or protocol["major"] != 1:
        sys.exit(f"not a tool-cli bridge v1: {protocol}")
    print(f"connected to {info['serverImplementation']['name']} "
          f"{info['serverImplementation']['version']}")

    for server in bridge.call("listServers")["servers"]:
        print(f"  {server['name']}: {server['toolCount']} tools, e.g. {', '.join(server['examples'])}")

    result = bridge.call("callTool", {
        "server": "demo",
        "tool": "sql_query",
        "arguments": {
            "sql": "SELECT country, count(*) AS customers FROM customers "
                   "GROUP BY country ORDER BY customers DESC",
            "page_size": 3,
        },
    })
    page = result["structuredContent"]
    print(f"top countries ({page['total_rows_matched']} in all, has_more={page['has_more']}):")
    for row in page["rows"]:
        print(f"  {row['country']}: {row['customers']}")

    # Arguments are validated against the tool's schema before anything reaches the server.
    try:
        bridge.call("callTool", {"server": "demo", "tool": "sql_query", "arguments": {"sql": 42}})
        sys.exit("expected the daemon to refuse arguments that fail the schema")
    except RuntimeError as refused:
        print(f"refused as expected: {refused}")


if __name__ == "__main__":
    try:
        main()
    except (OSError, urllib.error.URLError) as err:
        sys.exit(f"cannot reach the tool-cli daemon: {err}")
