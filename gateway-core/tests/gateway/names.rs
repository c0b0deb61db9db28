//! Gateway names on a 10,000-tool catalog: real tool names, adversarial near-identical ones,
//! names that differ only in characters that get mapped, names that imitate hashed names, and
//! random ones. Zero collisions, every name valid, every name resolving back, names unchanged
//! by the order tools arrive in and by adding tools.

use std::collections::{BTreeSet, HashSet};

use tool_cli_gateway_core::names::{
    GatewayNames, MAX_GATEWAY_NAME_LEN, UnknownGatewayName, gateway_name, is_valid_gateway_name,
    is_verbatim,
};

use crate::util::{Random, evaluation_catalog};

const CORPUS_SIZE: usize = 10_000;

/// Servers chosen to break naive schemes: separators in the name, near-identical names, names
/// that run into the separator, long ones, non-ASCII ones.
const ADVERSARIAL_SERVERS: &[&str] = &[
    "github",
    "git-hub",
    "git_hub",
    "git.hub",
    "GitHub",
    "github_",
    "github__x",
    "a",
    "a_",
    "a__b",
    "my.server",
    "my_server",
    "my-server",
    "analytics-production-eu-west-1",
    "analytics-production-eu-west-2",
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxy",
    "日本",
    "-lead",
    "s",
];

/// What replaces `_` in the base names: every one of these but `_` and `-` gets mapped.
const SEPARATORS: &[&str] = &[
    "_", "-", "__", ".", "/", " ", ":", "\u{200b}", "\u{a0}", "ü", "\t", "@", "+", "|", "..", "_.",
    "._", "~",
];

fn adversarial_tools(server: &str) -> Vec<String> {
    let mut tools = Vec::new();
    for base in ["get_user", "create_issue", "read_file_contents"] {
        for separator in SEPARATORS {
            tools.push(base.replace('_', separator));
        }
    }
    for variant in [
        "Search", "search", "SEARCH", "sEarch", "search_", "_search", "search-",
    ] {
        tools.push(variant.to_owned());
    }
    let long = "get_quarterly_revenue_breakdown_by_region_and_product";
    for index in 0..40 {
        tools.push(format!("{long}_{index}"));
        tools.push(format!("{long}.{index}"));
    }
    // Tools named like the hashed names of their neighbours.
    for base in ["get.user", "create.issue", "x"] {
        let hashed = gateway_name(server, base);
        let (_, tail) = hashed.split_once("__").unwrap();
        tools.push(tail.to_owned());
    }
    tools.push("report--abcdefghij".to_owned());
    tools.push("b__c".to_owned());
    tools.push("_b".to_owned());
    tools.push("b".to_owned());
    tools.push("c".to_owned());
    tools.push("検索".to_owned());
    tools.push("поиск".to_owned());
    tools.push("🔍search".to_owned());
    tools.push(String::new());
    tools.push("x".repeat(300));
    tools.push(format!("{}y", "x".repeat(299)));
    tools
}

/// The corpus: real tools, then adversarial ones, then random ones up to 10,000 pairs.
fn corpus() -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = Vec::with_capacity(CORPUS_SIZE);
    let mut seen: HashSet<(String, String)> = HashSet::new();
    let mut add = |pairs: &mut Vec<(String, String)>, server: &str, tool: &str| {
        let pair = (server.to_owned(), tool.to_owned());
        if pairs.len() < CORPUS_SIZE && seen.insert(pair.clone()) {
            pairs.push(pair);
        }
    };
    for server in evaluation_catalog() {
        for tool in &server.tools {
            add(&mut pairs, &server.name, tool["name"].as_str().unwrap());
        }
    }
    let real = pairs.len();
    assert!(real > 2_000, "the evaluation catalog has {real} tools");
    for server in ADVERSARIAL_SERVERS {
        for tool in adversarial_tools(server) {
            add(&mut pairs, server, &tool);
        }
    }
    let mut random = Random::new(27);
    let alphabet: Vec<char> =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-_-_.. /:é\u{200b}"
            .chars()
            .collect();
    while pairs.len() < CORPUS_SIZE {
        let server = random.pick(ADVERSARIAL_SERVERS).to_string();
        let length = 1 + random.below(80);
        let tool: String = (0..length).map(|_| *random.pick(&alphabet)).collect();
        add(&mut pairs, &server, &tool);
    }
    pairs
}

#[test]
fn ten_thousand_tools_get_ten_thousand_valid_names() {
    let pairs = corpus();
    assert_eq!(pairs.len(), CORPUS_SIZE);
    let names: Vec<String> = pairs
        .iter()
        .map(|(server, tool)| gateway_name(server, tool))
        .collect();
    for name in &names {
        assert!(is_valid_gateway_name(name), "{name:?}");
        assert!(name.len() <= MAX_GATEWAY_NAME_LEN);
    }
    let distinct: BTreeSet<&String> = names.iter().collect();
    assert_eq!(
        distinct.len(),
        CORPUS_SIZE,
        "collisions: {}",
        CORPUS_SIZE - distinct.len()
    );

    let table = GatewayNames::build(pairs.iter().cloned());
    assert!(table.collisions().is_empty(), "{:?}", table.collisions());
    assert_eq!(table.len(), CORPUS_SIZE);
    for ((server, tool), name) in pairs.iter().zip(&names) {
        let address = table.resolve(name).unwrap();
        assert_eq!((&address.server, &address.tool), (server, tool));
        assert_eq!(table.name_of(server, tool).as_ref(), Some(name));
    }
    let verbatim = pairs
        .iter()
        .filter(|(server, tool)| is_verbatim(server, tool))
        .count();
    let longest = names.iter().map(String::len).max().unwrap();
    eprintln!(
        "gateway names: {CORPUS_SIZE} tools, {} distinct names, 0 collisions; {verbatim} \
         verbatim, {} hashed; longest {longest} characters",
        distinct.len(),
        CORPUS_SIZE - verbatim
    );
}

#[test]
fn names_that_differ_only_in_mapped_characters_stay_apart() {
    let mut names = BTreeSet::new();
    for separator in SEPARATORS {
        let tool = "get_user".replace('_', separator);
        let name = gateway_name("github", &tool);
        assert!(names.insert(name.clone()), "{tool:?} collided as {name}");
    }
    // Only `_`, `-` and `__` are name characters: those keep their names verbatim.
    assert!(names.contains("github__get_user"));
    assert!(names.contains("github__get-user"));
    assert!(names.contains("github__get__user"));
    assert_eq!(
        names.iter().filter(|name| name.contains("--")).count(),
        SEPARATORS.len() - 3
    );
}

#[test]
fn the_order_tools_arrive_in_changes_nothing() {
    let pairs = corpus();
    let forward = GatewayNames::build(pairs.iter().cloned());
    let mut shuffled = pairs.clone();
    let mut random = Random::new(99);
    for index in (1..shuffled.len()).rev() {
        shuffled.swap(index, random.below(index + 1));
    }
    let backward = GatewayNames::build(shuffled);
    let listing = |table: &GatewayNames| -> Vec<(String, String, String)> {
        table
            .iter()
            .map(|(name, address)| {
                (
                    name.to_owned(),
                    address.server.clone(),
                    address.tool.clone(),
                )
            })
            .collect()
    };
    assert_eq!(listing(&forward), listing(&backward));
}

#[test]
fn adding_servers_and_tools_leaves_every_existing_name_alone() {
    let pairs = corpus();
    let before = GatewayNames::build(pairs.iter().cloned());
    let mut more = pairs.clone();
    let mut random = Random::new(7);
    for index in 0..1_000 {
        let server = format!("added-{}", index % 37);
        more.push((server, format!("tool.{}.{}", index, random.next() % 1000)));
    }
    // And tools on existing servers whose readable parts equal existing ones.
    more.push(("github".to_owned(), "get user".to_owned()));
    more.push(("my.server".to_owned(), "search!".to_owned()));
    let after = GatewayNames::build(more);
    assert!(after.collisions().is_empty());
    for (server, tool) in &pairs {
        assert_eq!(before.name_of(server, tool), after.name_of(server, tool));
    }
}

#[test]
fn names_that_are_not_ours_are_refused() {
    let table = GatewayNames::build(corpus());
    for (name, malformed) in [
        ("", true),
        ("github", true),
        ("github.create_issue", true),
        ("github__create issue", true),
        (
            "mcp__toolcli__github__create_issue_and_more_than_48_characters",
            true,
        ),
        ("github__no_such_tool", false),
        ("nosuchserver__search", false),
        ("github__get.user", true),
    ] {
        let error = table.resolve(name).unwrap_err();
        assert_eq!(
            matches!(error, UnknownGatewayName::Malformed { .. }),
            malformed,
            "{name:?}: {error}"
        );
    }
}
