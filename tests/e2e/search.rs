//! Tool search end to end: `searchTools`, `callTool` with `alternatives: true` and `tool-cli
//! search`, against the real daemon and real peers (server-everything, server-filesystem,
//! server-memory, mcp-server-time, the demo server; the fault-injection fixture where a tool
//! list must change or a tool must fail).
//!
//! - the right tool across servers, result shape, filters, schemas:
//!   `search_finds_the_right_tool_across_real_peers`
//! - a scoped token never sees, counts or filters on tools outside its scope:
//!   `a_scoped_token_never_sees_tools_outside_its_scope`
//! - empty / blank / 1 MB query, limit 0 / -1 / 10,000 / a string, unknown server filter, only
//!   stop words: `bad_search_inputs_get_clear_errors`
//! - `list_changed` and a server restart reach the index:
//!   `the_index_follows_tool_list_changes_and_restarts`
//! - `alternatives: true` on an unknown tool, a tool error, under a scope, and its absence
//!   without the flag: `failed_calls_with_alternatives_name_visible_tools_that_may_do_instead`
//! - `tool-cli search` lines, `--json`, `--limit`, `--server` and its errors:
//!   `tool_cli_search_prints_ranked_lines_and_how_to_call_the_best`

use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_protocol::search::{SearchConfidence, SearchToolsResult};
use tool_cli_protocol::{ErrorData, code};
use tool_cli_tests::{
    Daemon, demo_server, error_data, eventually, everything_stdio, fault_server, filesystem_server,
    memory_server, time_server,
};

/// How long real peers (node, Python) get to connect on a busy machine.
const READY_TIMEOUT: Duration = Duration::from_secs(90);

/// A daemon with five real peers, ready.
fn daemon_with_peers() -> Daemon {
    let daemon = Daemon::start_with_dir(|dir| {
        let root = dir.join("root");
        std::fs::create_dir_all(&root).expect("create the filesystem root");
        json!({"mcpServers": {
            "everything": everything_stdio(),
            "fs": filesystem_server(&root),
            "memory": memory_server(&dir.join("memory.jsonl")),
            "time": time_server(),
            "demo": demo_server(dir),
        }})
    });
    wait_ready(&daemon, &["everything", "fs", "memory", "time", "demo"]);
    daemon
}

/// Waits until every one of `servers` is `ready` with its tools listed.
fn wait_ready(daemon: &Daemon, servers: &[&str]) {
    let mut last = Value::Null;
    let ready = eventually(READY_TIMEOUT, || {
        last = daemon.call("listServers", Value::Null);
        servers.iter().all(|name| {
            last["servers"].as_array().is_some_and(|all| {
                all.iter().any(|server| {
                    server["name"] == *name
                        && server["state"] == "ready"
                        && server["toolCount"].as_u64().is_some_and(|count| count > 0)
                })
            })
        })
    });
    assert!(
        ready,
        "servers not ready: {last:#}\ndaemon stderr:\n{}",
        daemon.stderr()
    );
}

fn search(daemon: &Daemon, params: Value) -> SearchToolsResult {
    serde_json::from_value(daemon.call("searchTools", params)).expect("a searchTools result")
}

fn hits(result: &SearchToolsResult) -> Vec<String> {
    result
        .results
        .iter()
        .map(|hit| format!("{}/{}", hit.server, hit.tool))
        .collect()
}

fn mint(daemon: &Daemon, scope: Value) -> String {
    daemon.call("mintToken", scope)["token"]
        .as_str()
        .expect("a minted token")
        .to_owned()
}

#[test]
fn search_finds_the_right_tool_across_real_peers() {
    let daemon = daemon_with_peers();
    let listed = daemon.call("listTools", json!({}));
    let total = listed["tools"].as_array().expect("every tool").len();

    // Requests in a user's words; each right answer is on a different server.
    for (request, acceptable) in [
        (
            "what time is it in Tokyo right now",
            &["time/get_current_time"][..],
        ),
        (
            "read the text of notes.txt in my folder",
            &["fs/read_text_file", "fs/read_file"][..],
        ),
        ("add two numbers together", &["everything/get-sum"][..]),
        (
            "add a person called Alice to the knowledge graph",
            &["memory/create_entities", "memory/add_observations"][..],
        ),
        (
            "run a SQL select on the shop database",
            &["demo/sql_query"][..],
        ),
    ] {
        let found = search(&daemon, json!({"query": request, "limit": 3}));
        let names = hits(&found);
        assert!(
            names.iter().any(|name| acceptable.contains(&name.as_str())),
            "{request:?}: expected one of {acceptable:?} in the top 3, got {names:?}"
        );
        assert!(found.results.len() <= 3);
        assert_eq!(found.catalog_size, total, "catalogSize counts every tool");
        // Best first, and the parts of a score are there.
        for pair in found.results.windows(2) {
            assert!(pair[0].score >= pair[1].score, "{names:?}");
        }
        assert!(found.results[0].why.lexical > 0.0 || found.results[0].why.semantic > 0.0);
        assert!(found.results.iter().all(|hit| hit.input_schema.is_none()));
        // Every answer says how sure it is of its best hit.
        assert!(
            matches!(
                found.confidence,
                Some(
                    SearchConfidence::Confident
                        | SearchConfidence::Ambiguous
                        | SearchConfidence::Weak
                )
            ),
            "{request:?}: {:?}",
            found.confidence
        );
    }
    // Nothing matched is said as such, not as a confident empty answer.
    let nothing = search(&daemon, json!({"query": "who are you"}));
    assert!(nothing.results.is_empty(), "{:?}", hits(&nothing));
    assert_eq!(nothing.confidence, Some(SearchConfidence::NoMatch));
    let best = search(&daemon, json!({"query": "the current time in Tokyo"}));
    assert_eq!(hits(&best)[0], "time/get_current_time", "{:?}", hits(&best));

    // A server filter narrows the hits; includeSchema brings each tool's inputSchema.
    let on_fs = search(
        &daemon,
        json!({"query": "list the entries of a folder", "servers": ["fs"], "includeSchema": true}),
    );
    assert!(!on_fs.results.is_empty());
    assert!(
        on_fs.results.iter().all(|hit| hit.server == "fs"),
        "{:?}",
        hits(&on_fs)
    );
    assert!(
        on_fs.results[0].tool.starts_with("list_directory"),
        "{:?}",
        hits(&on_fs)
    );
    assert!(on_fs.results.iter().all(|hit| {
        hit.input_schema
            .as_ref()
            .is_some_and(|schema| schema["type"] == "object")
    }));

    // searchTools is advertised in the handshake.
    let info = daemon.call("getBridgeInfo", Value::Null);
    assert!(
        info.to_string().contains("searchTools"),
        "getBridgeInfo does not list searchTools: {info:#}"
    );
}

#[test]
fn a_scoped_token_never_sees_tools_outside_its_scope() {
    let daemon = daemon_with_peers();
    let fs_tools = daemon.call("listTools", json!({"server": "fs"}))["tools"]
        .as_array()
        .expect("fs tools")
        .len();

    // A server scope: a request about time finds only filesystem tools, and counts only them.
    let fs_only = mint(&daemon, json!({"servers": ["fs"]}));
    let result: SearchToolsResult = serde_json::from_value(
        daemon
            .rpc_as(
                &fs_only,
                "searchTools",
                Some(json!({"query": "what time is it in Tokyo", "limit": 100})),
            )
            .expect("a scoped search"),
    )
    .expect("a searchTools result");
    assert!(
        result.results.iter().all(|hit| hit.server == "fs"),
        "{:?}",
        hits(&result)
    );
    assert_eq!(result.catalog_size, fs_tools);
    // Filtering on a server outside the scope is refused as not permitted (as every method
    // does for a server outside the scope) whether or not it exists, so the answer does not
    // tell which names exist; neither error names the servers the token cannot see, nor any of
    // their tools. Within the scope, a name that does not exist is unknown.
    let unknown_in_scope = mint(&daemon, json!({"servers": ["fs", "no-such-*"]}));
    for (token, server, expected_code) in [
        (&fs_only, "time", code::FORBIDDEN),
        (&fs_only, "no-such-server", code::FORBIDDEN),
        (&unknown_in_scope, "no-such-server", code::INVALID_PARAMS),
    ] {
        let error = daemon
            .rpc_as(
                token,
                "searchTools",
                Some(json!({"query": "time", "servers": [server]})),
            )
            .expect_err("a filter on a server outside the scope is refused");
        assert_eq!(error.code, expected_code, "{error:?}");
        let text = format!("{} {:?}", error.message, error.data);
        for hidden in ["everything", "memory", "demo", "get_current_time"] {
            assert!(!text.contains(hidden), "the error names {hidden}: {text}");
        }
    }

    // A tool scope: only the tools its globs match, whatever the words.
    let readers = mint(&daemon, json!({"tools": ["fs/read_*"]}));
    for query in [
        "write a file",
        "delete an entity from the graph",
        "read a file",
    ] {
        let result: SearchToolsResult = serde_json::from_value(
            daemon
                .rpc_as(
                    &readers,
                    "searchTools",
                    Some(json!({"query": query, "limit": 100})),
                )
                .expect("a tool-scoped search"),
        )
        .expect("a searchTools result");
        assert!(
            result
                .results
                .iter()
                .all(|hit| hit.server == "fs" && hit.tool.starts_with("read_")),
            "{query:?}: {:?}",
            hits(&result)
        );
        assert!(result.catalog_size <= fs_tools);
    }
}

#[test]
fn bad_search_inputs_get_clear_errors() {
    let daemon = Daemon::start_with_dir(|dir| json!({"mcpServers": {"demo": demo_server(dir)}}));
    wait_ready(&daemon, &["demo"]);
    let invalid = |params: Value, expected: &str| {
        let error = daemon.call_err("searchTools", params.clone());
        assert_eq!(error.code, code::INVALID_PARAMS, "{params}: {error:?}");
        assert!(
            error.message.contains(expected),
            "{params}: expected {expected:?} in {:?}",
            error.message
        );
        error
    };
    invalid(json!({"query": ""}), "the query is empty");
    invalid(json!({"query": "  \n\t "}), "the query is empty");
    invalid(json!({}), "query");
    let huge = "a".repeat(1_000_000);
    invalid(
        json!({"query": huge}),
        "the query is 1000000 bytes; at most 4096",
    );
    for limit in [0, -1, 10_000] {
        invalid(
            json!({"query": "sql", "limit": limit}),
            &format!("limit {limit} is out of range; expected 1 to 100"),
        );
    }
    invalid(json!({"query": "sql", "limit": "ten"}), "limit");
    let unknown = invalid(json!({"query": "sql", "servers": ["nope"]}), "nope");
    match error_data(&unknown) {
        ErrorData::UnknownServer { known_servers, .. } => assert_eq!(known_servers, ["demo"]),
        other => panic!("expected unknownServer, got {other:?}"),
    }
    // Only stop words, or only emoji: nothing honest matches, which is not an error.
    for query in ["who are you", "🙂🙂"] {
        let found = search(&daemon, json!({"query": query}));
        assert!(found.results.is_empty(), "{query:?}: {:?}", hits(&found));
        assert!(found.catalog_size > 0);
    }
    // Limits at the edges are accepted.
    assert!(
        search(&daemon, json!({"query": "sql", "limit": 1}))
            .results
            .len()
            <= 1
    );
    assert!(
        !search(&daemon, json!({"query": "sql", "limit": 100}))
            .results
            .is_empty()
    );
}

#[test]
fn the_index_follows_tool_list_changes_and_restarts() {
    let daemon = Daemon::start(json!({"mcpServers": {"flaky": fault_server(&[])}}));
    wait_ready(&daemon, &["flaky"]);
    let found = |query: &str| hits(&search(&daemon, json!({"query": query, "limit": 100})));
    assert!(found("fail").contains(&"flaky/fail".to_owned()));
    assert!(!found("zebra crossing").contains(&"flaky/zebra_crossing".to_owned()));

    // list_changed: a new tool is found and a removed one is not, without restarting anything.
    let changed = daemon.call_tool(
        "flaky",
        "change_tools",
        json!({"add": "zebra_crossing", "remove": "fail"}),
    );
    assert_eq!(
        tool_cli_tests::text_content(&changed),
        "changed",
        "{changed:#}"
    );
    let mut last = Vec::new();
    assert!(
        eventually(Duration::from_secs(10), || {
            last = found("zebra crossing");
            last.contains(&"flaky/zebra_crossing".to_owned())
                && !found("fail").contains(&"flaky/fail".to_owned())
        }),
        "the index did not follow the change: {last:?}"
    );

    // A restart brings the server's original tools back, and the index follows.
    daemon.call("restartServer", json!({"server": "flaky"}));
    assert!(
        eventually(READY_TIMEOUT, || {
            found("fail").contains(&"flaky/fail".to_owned())
                && !found("zebra crossing").contains(&"flaky/zebra_crossing".to_owned())
        }),
        "the index did not follow the restart: {:?}",
        found("zebra crossing")
    );
}

#[test]
fn failed_calls_with_alternatives_name_visible_tools_that_may_do_instead() {
    let daemon = Daemon::start_with_dir(|dir| {
        json!({"mcpServers": {
            "time": time_server(),
            "flaky": fault_server(&[]),
            "demo": demo_server(dir),
        }})
    });
    wait_ready(&daemon, &["time", "flaky", "demo"]);

    // An unknown tool: the usual unknownTool error, with the tools that may do the job.
    let error = daemon.call_err(
        "callTool",
        json!({"server": "time", "tool": "current_time", "alternatives": true}),
    );
    assert_eq!(error.code, code::INVALID_PARAMS, "{error:?}");
    let data = error.data.clone().expect("error data");
    assert_eq!(data["kind"], "unknownTool", "{data:#}");
    let alternatives = data["alternatives"].as_array().expect("alternatives");
    assert!(
        !alternatives.is_empty() && alternatives.len() <= 5,
        "{data:#}"
    );
    assert_eq!(alternatives[0]["server"], "time", "{data:#}");
    assert_eq!(alternatives[0]["tool"], "get_current_time", "{data:#}");
    assert!(alternatives[0]["score"].as_f64().is_some_and(|s| s > 0.0));
    assert!(alternatives[0]["description"].as_str().is_some());

    // Without the flag the same error has no alternatives member.
    let plain = daemon.call_err(
        "callTool",
        json!({"server": "time", "tool": "current_time"}),
    );
    assert!(plain.data.expect("data").get("alternatives").is_none());

    // A tool that reports an error: the result is unchanged but for _meta, and the failed tool
    // itself is never its own alternative.
    let result = daemon.call(
        "callTool",
        json!({"server": "flaky", "tool": "fail", "arguments": {}, "alternatives": true}),
    );
    assert_eq!(result["isError"], json!(true), "{result:#}");
    let offered = result["_meta"]["tool-cli/alternatives"]
        .as_array()
        .expect("_meta alternatives");
    assert!(
        !offered
            .iter()
            .any(|a| a["server"] == "flaky" && a["tool"] == "fail"),
        "{result:#}"
    );
    // A successful call is left exactly as it is.
    let fine = daemon.call(
        "callTool",
        json!({"server": "time", "tool": "get_current_time",
               "arguments": {"timezone": "UTC"}, "alternatives": true}),
    );
    assert!(
        fine.get("_meta")
            .and_then(|m| m.get("tool-cli/alternatives"))
            .is_none()
    );

    // Under a scope, alternatives come only from what the token can see.
    let demo_only = mint(&daemon, json!({"servers": ["demo"]}));
    let error = daemon
        .rpc_as(
            &demo_only,
            "callTool",
            Some(json!({"server": "demo", "tool": "current_time", "alternatives": true})),
        )
        .expect_err("an unknown tool");
    let data = error.data.expect("error data");
    let alternatives = data["alternatives"].as_array().expect("alternatives");
    assert!(
        alternatives.iter().all(|a| a["server"] == "demo"),
        "a scoped token was offered hidden tools: {data:#}"
    );

    // Failures the caller must fix in the call itself get no alternatives.
    let invalid = daemon.call_err(
        "callTool",
        json!({"server": "time", "tool": "get_current_time",
               "arguments": {"timezone": 7}, "alternatives": true}),
    );
    assert!(invalid.data.expect("data").get("alternatives").is_none());
}

#[test]
fn tool_cli_search_prints_ranked_lines_and_how_to_call_the_best() {
    let daemon = Daemon::start_with_dir(
        |dir| json!({"mcpServers": {"time": time_server(), "demo": demo_server(dir)}}),
    );
    wait_ready(&daemon, &["time", "demo"]);
    let output = daemon.run_client(&["search", "convert 3pm New York time to Berlin"], &[]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // The first line is the call to make, with the tool's required parameters; then the hits.
    let mut lines = stdout.lines();
    let call = lines.next().expect("a line");
    assert!(call.starts_with("tool-cli time convert_time "), "{stdout}");
    assert!(call.contains("source_timezone=…"), "{stdout}");
    let first = lines.next().expect("a hit");
    assert!(first.contains("time convert_time"), "{stdout}");
    assert!(first.trim_start().starts_with("1 "), "{stdout}");
    let explained = daemon.run_client(&["search", "--explain", "current time"], &[]);
    let explained = String::from_utf8_lossy(&explained.stdout);
    assert!(explained.contains("why: lexical "), "{explained}");

    // Unquoted words, --limit and --server, --json.
    let output = daemon.run_client(
        &[
            "search", "--json", "--limit", "1", "--server", "demo", "query", "the", "database",
        ],
        &[],
    );
    assert!(output.status.success(), "{output:?}");
    let result: SearchToolsResult =
        serde_json::from_slice(&output.stdout).expect("--json prints the searchTools result");
    assert_eq!(result.results.len(), 1);
    assert_eq!(result.results[0].server, "demo");

    // Bad input: the daemon's own messages, and a usage error for a blank query.
    for (args, expected) in [
        (
            &["search", "--limit", "0", "time"][..],
            "limit 0 is out of range",
        ),
        (
            &["search", "--limit", "-1", "time"][..],
            "limit -1 is out of range",
        ),
        (&["search", "--server", "nope", "time"][..], "nope"),
    ] {
        let output = daemon.run_client(args, &[]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?} succeeded");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
    let blank = daemon.run_client(&["search", " "], &[]);
    assert_eq!(blank.status.code(), Some(2), "{blank:?}");
    assert!(String::from_utf8_lossy(&blank.stderr).contains("query is empty"));
}

#[test]
fn a_daemon_without_servers_searches_an_empty_catalog() {
    let daemon = Daemon::start(json!({"mcpServers": {}}));
    let found = search(&daemon, json!({"query": "read a file"}));
    assert!(found.results.is_empty());
    assert_eq!(found.catalog_size, 0);
}
