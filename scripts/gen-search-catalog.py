#!/usr/bin/env python3
"""Generates search/eval/catalog.json: a plausible multi-server MCP catalog for the search evaluation.

Deterministic (no randomness beyond a fixed seed), so the committed output is reproducible:

    python3 scripts/gen-search-catalog.py > search/eval/catalog.json

Servers are modelled on the kinds of MCP servers people run (code hosting, chat, mail, calendars,
storage, databases, cloud, payments, CRM, tickets, weather, maps, finance, office documents, web
search, browsers, media, smart home, HR, commerce, social, travel, ...). Most tools come from
entity × operation templates, because that is how real servers are shaped (CRUD over a few
resources), rendered in each server's naming convention (snake_case, camelCase, kebab-case,
dotted, prefixed) and description voice (terse, standard, verbose, agent-directed); each server
also has hand-written tools that do not fit a template. Similar servers (GitHub / GitLab /
Bitbucket, Slack / Teams / Discord, ...) deliberately overlap, as they do in practice.
"""

import json
import random
import sys

random.seed(10)

# ---------------------------------------------------------------------------------------------
# Description voices. Placeholders: {s} singular, {a} singular with article, {pl} plural,
# {ctx} where the entity lives, {detail} what an object holds, {filters} filter phrase.
VOICES = {
    "terse": {
        "list": ["List {pl}.", "List all {pl}.", "Returns {pl}."],
        "get": ["Get {a}.", "Get {a} by id.", "Returns one {s}."],
        "create": ["Create {a}.", "Creates a new {s}."],
        "update": ["Update {a}.", "Modify {a}."],
        "delete": ["Delete {a}.", "Removes {a}."],
        "search": ["Search {pl}.", "Search {pl} by keyword."],
    },
    "standard": {
        "list": ["List {pl} {ctx}. Supports pagination.", "List the {pl} {ctx}, optionally filtered {filters}.",
                 "Lists {pl} {ctx} with basic fields."],
        "get": ["Get details of {a}, including {detail}.", "Get a single {s} by its ID. Returns {detail}.",
                "Retrieve {a} and its {detail}."],
        "create": ["Create a new {s} {ctx}.", "Create {a} {ctx} and return it.", "Creates {a} with the given fields."],
        "update": ["Update an existing {s}. Only the fields provided are changed.", "Update fields of {a}.",
                   "Modify {a} {ctx}."],
        "delete": ["Delete {a}. This cannot be undone.", "Permanently delete {a} {ctx}.", "Delete {a} by ID."],
        "search": ["Search {pl} {ctx} matching a text query.", "Search for {pl} using a query string, filtered {filters}.",
                   "Full-text search over {pl}."],
    },
    "verbose": {
        "list": ["Retrieves a paginated list of {pl} {ctx}. Results can be filtered {filters} and are returned "
                 "newest first. Use the cursor from a previous response to fetch the next page.",
                 "Returns every {s} {ctx} the authenticated account can access, page by page. Each item contains "
                 "{detail}. Prefer the search tool when looking for specific {pl}."],
        "get": ["Fetches a single {s} by its identifier and returns the full object: {detail}. Use this when you "
                "already know the ID; to find {pl} by text, use the search tool instead.",
                "Returns complete information about one {s}, including {detail}. Fails with a not-found error when "
                "the ID does not exist or the account lacks access."],
        "create": ["Creates a new {s} {ctx}. Required fields must be provided; optional fields fall back to the "
                   "account defaults. Returns the created {s} including its generated ID.",
                   "Adds {a} {ctx}. The caller must have write permission. On success the new {s} is returned "
                   "with {detail}."],
        "update": ["Updates an existing {s}. Only the fields present in the request are modified; omitted fields "
                   "keep their current values. Returns the updated {s}.",
                   "Applies a partial update to {a} {ctx}. Use this to change {detail}."],
        "delete": ["Deletes {a} {ctx}. This action is permanent and cannot be reversed; related data may also be "
                   "removed. Requires admin or owner permission.",
                   "Permanently removes {a}. Consider archiving instead if the data may be needed later."],
        "search": ["Searches {pl} {ctx} using a full-text query. Supports filtering {filters}. Returns matching "
                   "{pl} ranked by relevance, with {detail} for each.",
                   "Runs a search across {pl} and returns the best matches. The query syntax supports quoted phrases "
                   "and field filters {filters}."],
    },
    "agent": {
        "list": ["Use this tool to see all {pl} {ctx}. Returns a JSON array with {detail} for each.",
                 "Call this to enumerate {pl} {ctx} before acting on one of them."],
        "get": ["Use this tool when you need the full details of one {s} ({detail}). Requires the {s} ID.",
                "Call this to look up {a} when you have its ID."],
        "create": ["Use this tool to make a new {s} {ctx}. Ask the user for any required field you do not know.",
                   "Call this when the user asks you to add {a} {ctx}."],
        "update": ["Use this tool to change an existing {s}, e.g. its {detail}.",
                   "Call this when the user wants to edit {a}."],
        "delete": ["Use this tool to remove {a}. Always confirm with the user first: deletion is permanent.",
                   "Call this to delete {a} the user no longer needs."],
        "search": ["Use this tool to find {pl} {ctx} by keywords when you do not know their IDs.",
                   "Call this to look for {pl} matching what the user described."],
    },
}

VERBS = {"list": "list", "get": "get", "create": "create", "update": "update", "delete": "delete", "search": "search"}


def article(word):
    return ("an " if word[0] in "aeiou" else "a ") + word


def words(text):
    return text.replace("-", " ").split()


def render_name(style, verb, noun_words, server):
    """Renders an operation name in a server's naming convention."""
    parts = verb.split() + noun_words
    if style == "snake":
        return "_".join(parts)
    if style == "camel":
        return parts[0] + "".join(p.capitalize() for p in parts[1:])
    if style == "kebab":
        return "-".join(parts)
    if style == "dotted":
        return "_".join(noun_words) + "." + "_".join(verb.split())
    if style == "prefixed":
        return server.replace("-", "_") + "_" + "_".join(parts)
    if style == "pascal":
        return "".join(p.capitalize() for p in parts)
    raise ValueError(style)


class Entity:
    def __init__(self, singular, plural, ctx, detail, filters, params, ops=("list", "get", "create", "update", "delete", "search"),
                 extra=()):
        self.singular, self.plural, self.ctx, self.detail, self.filters = singular, plural, ctx, detail, filters
        self.params, self.ops, self.extra = params, ops, extra


def entity_tools(server, entity, ops=None):
    tools = []
    style, voice = server["style"], server["voice"]
    for op in (ops or entity.ops):
        noun = entity.plural if op in ("list", "search") else entity.singular
        name = render_name(style, VERBS[op], words(noun), server["name"])
        template = random.choice(VOICES[voice][op])
        description = template.format(s=entity.singular, a=article(entity.singular), pl=entity.plural,
                                      ctx=entity.ctx, detail=entity.detail, filters=entity.filters)
        properties = {}
        id_name = "_".join(words(entity.singular)) + "_id"
        if op in ("get", "update", "delete"):
            properties[id_name] = {"type": "string", "description": f"ID of the {entity.singular}"}
        if op in ("list", "search", "create", "update"):
            for pname, pdesc in entity.params:
                if op in ("list", "search") and pname not in entity.params[0][0]:
                    continue
                properties[pname] = {"type": "string", "description": pdesc}
        if op == "search":
            properties["query"] = {"type": "string", "description": "Search text"}
        if op in ("list", "search"):
            properties["limit"] = {"type": "integer", "description": "Maximum number of results"}
        tools.append(tool(name, description, properties))
    for verb, noun_override, description, params in entity.extra:
        noun = noun_override if noun_override is not None else entity.singular
        name = render_name(style, verb, words(noun), server["name"])
        tools.append(tool(name, description, {p: {"type": "string", "description": d} for p, d in params}))
    return tools


def tool(name, description, properties):
    item = {"name": name}
    if description is not None:
        item["description"] = description
    item["inputSchema"] = {"type": "object", "properties": properties}
    return item


def custom(server, specs):
    """Hand-written tools: (verb, noun, description, [(param, description)])."""
    out = []
    for verb, noun, description, params in specs:
        name = render_name(server["style"], verb, words(noun), server["name"])
        out.append(tool(name, description, {p: {"type": "string", "description": d} for p, d in params}))
    return out


def server(name, description, tags, style, voice):
    return {"name": name, "description": description, "tags": tags, "style": style, "voice": voice, "tools": []}


SERVERS = []


def add(srv, *tool_lists):
    seen = set()
    for tools in tool_lists:
        for t in tools:
            if t["name"] not in seen:
                seen.add(t["name"])
                srv["tools"].append(t)
    SERVERS.append(srv)


from catalog_domains import build  # noqa: E402  (the domain tables live beside this script)

build(globals())

out = [{"name": s["name"], "description": s["description"], "tags": s["tags"], "tools": s["tools"]} for s in SERVERS]
print(f"{len(out)} servers, {sum(len(s['tools']) for s in out)} tools", file=sys.stderr)
json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
sys.stdout.write("\n")
