//! Tool search with the real sentence-embedding model (all-MiniLM-L6-v2, installed by
//! `scripts/install-minilm.sh`, which `scripts/install-peers.sh` runs), against the real daemon
//! with the demo server and server-everything.
//!
//! - paraphrases with no word of the tool's are answered by the model; answers go from
//!   `pending` to `model` (observed through `health`); a restart embeds nothing (the disk
//!   cache); a corrupt cache is ignored with a warning and rebuilt; a scoped token still sees
//!   only its tools: `the_model_ranks_paraphrases_and_keeps_its_vectors_across_restarts`
//! - a missing and a corrupt model directory each give one warning naming the install command,
//!   and search answers lexically: `a_missing_or_corrupt_model_warns_once_and_search_stays_lexical`
//!
//! The model's directory: `TOOL_CLI_SEARCH_MODEL` of the test run, else the checkout's
//! `target/minilm` (where `scripts/install-peers.sh` installs it).

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use tool_cli_protocol::methods::HealthResult;
use tool_cli_protocol::search::{
    SearchHealth, SearchModelState, SearchToolsResult, SemanticRanking,
};
use tool_cli_tests::{Daemon, DaemonOptions, demo_server, eventually, everything_stdio, scratch};

/// How long the servers get to connect and the model to embed their tools on a busy machine.
const TIMEOUT: Duration = Duration::from_secs(300);

/// Requests in a user's words that share no word with the tool that answers them (neither its
/// name nor its description), with that tool.
const PARAPHRASES: &[(&str, &str)] = &[
    (
        "how many yen do I get for one dollar",
        "demo/rest_exchange_rate",
    ),
    (
        "shrink this file to save space",
        "everything/gzip-file-as-resource",
    ),
    ("show me my shell variables", "everything/get-env"),
];

/// The installed model, or a failure saying how to install it: `TOOL_CLI_SEARCH_MODEL`, else
/// the checkout's `target/minilm`, where `scripts/install-peers.sh` installs it.
fn model_dir() -> PathBuf {
    let dir = std::env::var("TOOL_CLI_SEARCH_MODEL")
        .ok()
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/minilm"));
    assert!(
        dir.join("model.safetensors").is_file() && dir.join("vocab.txt").is_file(),
        "the search model is not installed in {}: run `bash scripts/install-minilm.sh` \
         (or `bash scripts/install-peers.sh`), or set TOOL_CLI_SEARCH_MODEL to its directory",
        dir.display()
    );
    dir
}

fn config(dir: &Path, model: Value) -> Value {
    json!({
        "mcpServers": {"demo": demo_server(dir), "everything": everything_stdio()},
        "search": {"model": model},
    })
}

/// Starts a daemon whose state directory (the vector cache) is `state`.
fn start(model: Value, state: &Path, extra_args: &[&str]) -> Daemon {
    Daemon::start_with_dir_and(
        |dir| config(dir, model),
        DaemonOptions {
            env: vec![("XDG_STATE_HOME".to_owned(), state.display().to_string())],
            args: extra_args.iter().map(|arg| (*arg).to_owned()).collect(),
            ..DaemonOptions::default()
        },
    )
}

fn wait_ready(daemon: &Daemon) {
    let mut last = Value::Null;
    let ready = eventually(TIMEOUT, || {
        last = daemon.call("listServers", Value::Null);
        ["demo", "everything"].iter().all(|name| {
            last["servers"].as_array().is_some_and(|all| {
                all.iter().any(|server| {
                    server["name"] == *name
                        && server["state"] == "ready"
                        && server["toolCount"].as_u64().is_some_and(|count| count > 0)
                })
            })
        })
    });
    assert!(ready, "servers not ready: {last:#}\n{}", daemon.stderr());
}

fn search(daemon: &Daemon, query: &str) -> SearchToolsResult {
    serde_json::from_value(daemon.call("searchTools", json!({"query": query, "limit": 5})))
        .expect("a searchTools result")
}

fn best(result: &SearchToolsResult) -> String {
    result
        .results
        .first()
        .map(|hit| format!("{}/{}", hit.server, hit.tool))
        .unwrap_or_default()
}

fn search_health(daemon: &Daemon) -> SearchHealth {
    let health: HealthResult =
        serde_json::from_value(daemon.call("health", json!({}))).expect("a health result");
    health
        .search
        .expect("health has a search member for the owner")
}

/// The number of tools the owner sees.
fn tool_count(daemon: &Daemon) -> usize {
    daemon.call("listTools", json!({}))["tools"]
        .as_array()
        .expect("tools")
        .len()
}

fn assert_model_answers(daemon: &Daemon) {
    for (request, expected) in PARAPHRASES {
        let result = search(daemon, request);
        assert_eq!(result.semantic, SemanticRanking::Model, "{request}");
        assert_eq!(best(&result), *expected, "{request}: {:?}", result.results);
    }
}

#[test]
fn the_model_ranks_paraphrases_and_keeps_its_vectors_across_restarts() {
    let model = json!(model_dir());
    let state = scratch();
    let cache = state.path().join("tool-cli/search-vectors.bin");

    // Announced at once (`--ready-when none`): until the model has embedded every tool, answers
    // say `pending`; once health says `ready`, they come from the model.
    let daemon = start(model.clone(), state.path(), &["--ready-when", "none"]);
    wait_ready(&daemon);
    let before = search_health(&daemon);
    let early = search(&daemon, PARAPHRASES[0].0);
    assert_ne!(early.semantic, SemanticRanking::Hashing);
    if before.model != SearchModelState::Ready {
        // Health was taken first: a pass not over then may have ended since, never the reverse.
        assert!(
            matches!(
                early.semantic,
                SemanticRanking::Pending | SemanticRanking::Model
            ),
            "{early:?}"
        );
    }
    let mut health = before;
    assert!(
        eventually(TIMEOUT, || {
            health = search_health(&daemon);
            health.model == SearchModelState::Ready
        }),
        "the model never embedded the catalog: {health:?}\n{}",
        daemon.stderr()
    );
    let tools = tool_count(&daemon);
    assert_eq!(health.tools, tools);
    assert_eq!(health.with_vectors, tools);
    assert_eq!((health.embedded, health.cached), (tools, 0), "{health:?}");
    assert_model_answers(&daemon);

    // A token scoped to the demo server: the model ranks its tools only, and counts only them.
    let scoped = daemon.call("mintToken", json!({"servers": ["demo"]}))["token"]
        .as_str()
        .expect("a minted token")
        .to_owned();
    let answer: SearchToolsResult = serde_json::from_value(
        daemon
            .rpc_as(
                &scoped,
                "searchTools",
                Some(json!({"query": "shrink this file to save space", "limit": 100})),
            )
            .expect("a scoped search"),
    )
    .expect("a searchTools result");
    assert_eq!(answer.semantic, SemanticRanking::Model);
    assert!(
        answer.results.iter().all(|hit| hit.server == "demo"),
        "{:?}",
        answer.results
    );
    let demo_tools = daemon.call("listTools", json!({"server": "demo"}))["tools"]
        .as_array()
        .expect("demo tools")
        .len();
    assert_eq!(answer.catalog_size, demo_tools);
    drop(daemon);

    // The vectors are on disk, private to the user.
    let mode = std::fs::metadata(&cache)
        .expect("the vector cache was written")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    // A restart embeds nothing, and with the default readiness (`all`) its first answer is the
    // model's.
    let daemon = start(model.clone(), state.path(), &[]);
    let first = search(&daemon, PARAPHRASES[0].0);
    assert_eq!(
        first.semantic,
        SemanticRanking::Model,
        "{}",
        daemon.stderr()
    );
    let health = search_health(&daemon);
    assert_eq!((health.embedded, health.cached), (0, tools), "{health:?}");
    assert_model_answers(&daemon);
    drop(daemon);

    // A corrupt cache is ignored with one warning, the tools are embedded again, and the file is
    // rewritten whole.
    std::fs::write(&cache, b"tcsvec01 and then not a cache at all").expect("corrupt the cache");
    let daemon = start(model, state.path(), &[]);
    let health = search_health(&daemon);
    assert_eq!(health.model, SearchModelState::Ready);
    assert_eq!((health.embedded, health.cached), (tools, 0), "{health:?}");
    assert_model_answers(&daemon);
    let stderr = daemon.stderr();
    assert_eq!(
        stderr
            .matches("the search vector cache is ignored and will be rebuilt")
            .count(),
        1,
        "{stderr}"
    );
    drop(daemon);
    let rewritten = std::fs::read(&cache).expect("the cache was rewritten");
    assert!(rewritten.starts_with(b"tcsvec01") && rewritten.len() > 1000);
}

#[test]
fn a_missing_or_corrupt_model_warns_once_and_search_stays_lexical() {
    let broken = scratch();
    std::fs::write(broken.path().join("model.safetensors"), b"not weights").expect("write");
    std::fs::write(broken.path().join("vocab.txt"), "[PAD]\n").expect("write");
    for model in [broken.path().join("nowhere"), broken.path().to_owned()] {
        let state = scratch();
        let daemon = start(json!(model), state.path(), &[]);
        wait_ready(&daemon);
        // The daemon serves; search answers by words and says so.
        let result = search(&daemon, "add two numbers");
        assert_eq!(result.semantic, SemanticRanking::Hashing, "{model:?}");
        assert_eq!(best(&result), "everything/get-sum");
        let health = search_health(&daemon);
        assert_eq!(health.model, SearchModelState::Failed, "{health:?}");
        let reason = health.last_error.expect("why the model is not used");
        assert!(reason.contains("install-minilm.sh"), "{reason}");
        let stderr = daemon.stderr();
        let warnings: Vec<&str> = stderr
            .lines()
            .filter(|line| line.contains("WARN") && line.contains("no tool search model"))
            .collect();
        assert_eq!(warnings.len(), 1, "{stderr}");
        assert!(warnings[0].contains("install-minilm.sh"), "{}", warnings[0]);
        assert!(
            warnings[0].contains(&model.display().to_string()),
            "{}",
            warnings[0]
        );
    }
}
