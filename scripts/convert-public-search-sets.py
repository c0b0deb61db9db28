#!/usr/bin/env python3
"""Converts public tool-retrieval sets into the format search-eval reads, for an independent
check of tool search on data it was never tuned to (docs/search.md, "Public sets").

    python3 scripts/convert-public-search-sets.py metatool SRC OUT
    python3 scripts/convert-public-search-sets.py azure SRC OUT
    target/release/search-eval OUT

metatool: SRC holds dataset/plugin_des.json and dataset/data/all_clean_data.csv of
  github.com/HowieHwong/MetaTool (MIT): 199 tools (ChatGPT plugins, one-sentence descriptions)
  and about 20,600 user requests, of which a fixed random 2,000 are taken.
azure: SRC holds tools.json and prompts.json of github.com/microsoft/mcp,
  eng/tools/ToolDescriptionEvaluator (MIT; tools.json as of commit f00ad3182^, later removed):
  the Azure MCP server's 200 tools with their parameters and 501 test prompts.

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


def write(out, servers, requests):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "peers.json"), "w") as f:
        json.dump([], f)
    with open(os.path.join(out, "catalog.json"), "w") as f:
        json.dump(servers, f, indent=1)
    with open(os.path.join(out, "dev.tsv"), "w") as dev, open(os.path.join(out, "test.tsv"), "w") as test:
        for number, (label, query) in enumerate(requests):
            (dev if number % 2 == 0 else test).write(f"{label}\t{clean(query)}\n")
    tools = sum(len(server["tools"]) for server in servers)
    print(f"{tools} tools, {len(requests)} requests -> {out}")


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


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("metatool", "azure"):
        sys.exit(__doc__)
    {"metatool": metatool, "azure": azure}[sys.argv[1]](sys.argv[2], sys.argv[3])
