#!/usr/bin/env python3
"""Use a running tool-cli daemon from Python with tool_cli_client.py (standard library only).

Finds the daemon like `tool-cli` does, proves its identity before sending the token, lists the
servers, runs SQL on the demo server, shows an error as an exception, searches the tools and
runs the offline agent. Every answer is checked: the script exits non-zero on any wrong one, so
CI (.ci/run) runs it against a live daemon on the bundled default config.

    python3 examples/python/example.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from tool_cli_client import Client, ToolCliError  # noqa: E402


def check(condition, what):
    if not condition:
        sys.exit(f"FAILED: {what}")


def main():
    client = Client.from_env()
    info = client.bridge_info()
    print(f"connected to {info['serverImplementation']['name']} "
          f"{info['serverImplementation']['version']} at {client.address()}")

    servers = client.list_servers()
    for server in servers:
        print(f"  {server['name']}: {server['toolCount']} tools")
    check(any(server["name"] == "demo" for server in servers), "the demo server is listed")
    tools = [tool["name"] for tool in client.list_tools("demo")]
    check("sql_query" in tools, f"demo offers sql_query: {tools}")
    schema = client.describe_tool("demo", "sql_query")["inputSchema"]
    check("sql" in schema["properties"], "sql_query takes sql")

    result = client.call_tool("demo", "sql_query", {
        "sql": "SELECT country, count(*) AS customers FROM customers "
               "GROUP BY country ORDER BY customers DESC, country",
        "page_size": 3,
    })
    check(result.get("isError") is not True, f"sql_query succeeded: {result}")
    page = result["structuredContent"]
    check(len(page["rows"]) == 3, f"three rows: {page['rows']}")
    check(page["has_more"] is True, "more countries than one page")
    counts = [row["customers"] for row in page["rows"]]
    check(counts == sorted(counts, reverse=True) and counts[0] > 0, f"sorted counts: {counts}")
    total = client.call_tool("demo", "sql_query", {"sql": "SELECT count(*) AS n FROM customers"})
    check(total["structuredContent"]["rows"] == [{"n": 50}], f"50 customers: {total}")
    print(f"top countries: {page['rows']}")

    try:
        client.call_tool("demo", "sql_qurey", {"sql": "SELECT 1"})
        check(False, "an unknown tool must raise")
    except ToolCliError as error:
        check(error.kind == "unknownTool", f"kind unknownTool, got {error!r}")
        check(error.code == -32602, f"code -32602, got {error.code}")
        check("sql_query" in error.data["knownTools"], f"known tools: {error.data}")
        print(f"unknown tool refused as expected: {error.kind}: {error.message}")

    try:
        client.call_tool("demo", "sql_query", {"sql": 42})
        check(False, "arguments failing the schema must raise")
    except ToolCliError as error:
        check(error.kind == "invalidArguments", f"kind invalidArguments, got {error!r}")

    found = client.search_tools("run a SQL query on the shop database", limit=5)
    names = [f"{hit['server']}/{hit['tool']}" for hit in found]
    check("demo/sql_query" in names, f"search finds demo/sql_query: {names}")
    print(f"search: {names}")

    run = client.run_agent("Look up customer Ada Okafor's orders, sum their total, and tell me "
                           "if it exceeds $500", backend="offline")
    check(run["status"] == "completed", f"the agent completed: {run.get('status')} "
                                        f"{run.get('error') or run.get('haltReason')}")
    check(run["keyFacts"]["customer_name"] == "Ada Okafor", f"key facts: {run['keyFacts']}")
    check(isinstance(run["keyFacts"]["exceeds_threshold"], bool), "a yes/no answer")
    check(len(run["toolCalls"]) >= 2, "the agent called tools")
    print(f"agent ({run['backend']}): {run['answer']}")
    # A token the daemon does not know is refused at the identity check, before it is sent.
    if client.port:
        stranger = Client("0" * 63 + "7", host=client.host, port=client.port, timeout=10)
        try:
            stranger.list_servers()
            check(False, "an unknown token must be refused")
        except ToolCliError as error:
            check(error.kind == "unknownToken", f"kind unknownToken, got {error!r}")
    print("python example: all checks passed")


if __name__ == "__main__":
    try:
        main()
    except ToolCliError as error:
        sys.exit(f"FAILED: {error.kind}: {error.message}")
