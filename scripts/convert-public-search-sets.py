#!/usr/bin/env python3
"""Converts public tool-retrieval sets into the format search-eval reads, for an independent
check of tool search on data it was never tuned to (docs/search.md, "Public sets").

    python3 scripts/convert-public-search-sets.py metatool SRC OUT
    python3 scripts/convert-public-search-sets.py azure SRC OUT
    python3 scripts/convert-public-search-sets.py livemcp SRC OUT
    python3 scripts/convert-public-search-sets.py seal SRC OUT
    target/release/search-eval OUT

metatool: SRC holds dataset/plugin_des.json and dataset/data/all_clean_data.csv of
  github.com/HowieHwong/MetaTool (MIT): 199 tools (ChatGPT plugins, one-sentence descriptions)
  and about 20,600 user requests, of which a fixed random 2,000 are taken.
azure: SRC holds tools.json and prompts.json of github.com/microsoft/mcp,
  eng/tools/ToolDescriptionEvaluator (MIT; tools.json as of commit f00ad3182^, later removed):
  the Azure MCP server's 200 tools with their parameters and 501 test prompts.

livemcp: SRC holds tools/LiveMCPTool/tools.json and annotated_data/all_annotations.json of
  github.com/icip-cas/LiveMCPBench (Apache-2.0): 70 real MCP servers with their 527 tools, and
  95 annotated tasks whose steps name the tool used for each; a task whose steps and tools are
  as many is taken step by step (the step's text is the request, its tool the answer; a tool
  name several servers share is acceptable on each), 98 requests.
seal: SRC holds tool.jsonl, dev.jsonl and test_in_domain.jsonl of github.com/fairyshine/Seal-Tools
  (Seal-Tools_Dataset/, Apache-2.0): 4,076 generated API tools with parameters over 146 fields
  (one server per field's first part) and the queries that call exactly one tool: its own dev
  split is the dev half, its in-domain test split the test half (200 each).

OUT receives peers.json (empty), catalog.json (one server), dev.tsv and test.tsv (alternate
requests). The data stays outside the repository; only this script is kept.
"""
import csv
import json
import os
import random
import re
import sys


def clean(text):
    return re.sub(r"\s+", " ", text).strip()


def find(src, *names):
    for name in names:
        path = os.path.join(src, name)
        if os.path.exists(path):
            return path
    sys.exit(f"none of {', '.join(names)} in {src}")


def write(out, servers, requests, test_requests=None):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "peers.json"), "w") as f:
        json.dump([], f)
    with open(os.path.join(out, "catalog.json"), "w") as f:
        json.dump(servers, f, indent=1)
    with open(os.path.join(out, "dev.tsv"), "w") as dev, open(os.path.join(out, "test.tsv"), "w") as test:
        if test_requests is None:
            for number, (label, query) in enumerate(requests):
                (dev if number % 2 == 0 else test).write(f"{label}\t{clean(query)}\n")
        else:
            for label, query in requests:
                dev.write(f"{label}\t{clean(query)}\n")
            for label, query in test_requests:
                test.write(f"{label}\t{clean(query)}\n")
    tools = sum(len(server["tools"]) for server in servers)
    total = len(requests) + len(test_requests or [])
    print(f"{tools} tools, {total} requests -> {out}")


def metatool(src, out):
    with open(find(src, "dataset/plugin_des.json", "plugin_des.json")) as f:
        descriptions = json.load(f)
    tools = [
        {"name": name, "description": text, "inputSchema": {"type": "object", "properties": {}}}
        for name, text in descriptions.items()
    ]
    with open(find(src, "dataset/data/all_clean_data.csv", "all_clean_data.csv")) as f:
        rows = [row for row in csv.DictReader(f) if clean(row["Query"])]
    rows = random.Random(10).sample(rows, 2000)
    requests = [(f"metatool/{row['Tool']}", row["Query"]) for row in rows]
    write(out, [{"name": "metatool", "tools": tools}], requests)


def azure(src, out):
    with open(find(src, "tools.json")) as f:
        listed = json.load(f)["results"]
    with open(find(src, "prompts.json")) as f:
        prompts = json.load(f)
    tools = []
    for tool in listed:
        properties, required = {}, []
        for option in tool.get("option") or []:
            name = option["name"].lstrip("-")
            properties[name] = {
                "type": option.get("type") or "string",
                "description": option.get("description") or "",
            }
            if option.get("required"):
                required.append(name)
        tools.append({
            "name": tool["command"].replace(" ", "_"),
            "description": tool["description"],
            "inputSchema": {"type": "object", "properties": properties, "required": required},
        })
    names = {tool["name"] for tool in tools}
    requests = [(f"azure/{name}", prompt) for name, texts in prompts.items() if name in names for prompt in texts]
    write(out, [{"name": "azure", "description": "Azure MCP Server", "tools": tools}], requests)


def livemcp(src, out):
    with open(find(src, "tools/LiveMCPTool/tools.json", "tools.json")) as f:
        listed = json.load(f)
    with open(find(src, "annotated_data/all_annotations.json", "all_annotations.json")) as f:
        tasks = json.load(f)
    servers, where = [], {}
    for entry in listed:
        for name, server in entry["tools"].items():
            tools = [
                {key: tool[key] for key in ("name", "description", "inputSchema") if tool.get(key) is not None}
                for tool in server["tools"]
            ]
            servers.append({"name": name, "description": clean(entry.get("description") or ""), "tools": tools})
            for tool in tools:
                where.setdefault(tool["name"], []).append(name)
    numbered = lambda text: [re.sub(r"^\d+\.\s*", "", line).strip() for line in text.split("\n") if line.strip()]
    requests = []
    for task in tasks:
        metadata = task["Annotator Metadata"]
        steps, used = numbered(metadata["Steps"]), numbered(metadata["Tools"])
        if len(steps) != len(used):
            continue
        for step, tool in zip(steps, used):
            if tool in where:
                requests.append(("|".join(f"{server}/{tool}" for server in where[tool]), step))
    write(out, servers, requests)


def seal(src, out):
    servers = {}
    with open(find(src, "tool.jsonl", "Seal-Tools_Dataset/tool.jsonl")) as f:
        for line in f:
            tool = json.loads(line)
            field = tool["field"].split("/")[0].strip()
            properties = {
                name: {"type": spec.get("type") or "string", "description": spec.get("description") or ""}
                for name, spec in (tool.get("parameters") or {}).items()
            }
            server = servers.setdefault(field, {"name": re.sub(r"[^a-z0-9]+", "-", field.lower()).strip("-"), "tools": []})
            server["tools"].append({
                "name": tool["api_name"],
                "description": tool["api_description"],
                "inputSchema": {"type": "object", "properties": properties, "required": tool.get("required") or []},
            })
    server_of = {tool["name"]: server["name"] for server in servers.values() for tool in server["tools"]}

    def single_tool(name):
        with open(find(src, name, "Seal-Tools_Dataset/" + name)) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        return [
            (f"{server_of[row['calling'][0]['api']]}/{row['calling'][0]['api']}", row["query"])
            for row in rows
            if len(row["calling"]) == 1 and row["calling"][0]["api"] in server_of
        ]

    write(out, list(servers.values()), single_tool("dev.jsonl"), single_tool("test_in_domain.jsonl"))


if __name__ == "__main__":
    converters = {"metatool": metatool, "azure": azure, "livemcp": livemcp, "seal": seal}
    if len(sys.argv) != 4 or sys.argv[1] not in converters:
        sys.exit(__doc__)
    converters[sys.argv[1]](sys.argv[2], sys.argv[3])
