//! The labeled routing set (`daemon/tests/data/routing-golden.json`): every case must route to
//! its expected server by its expected rule, through the real resolve stage (a dry-run of the
//! pipeline over in-memory servers with the set's catalogs).
//!
//! Each case gives a call (tool, arguments, optional server and hint) and the session's state
//! (task, and the server most recently used per tool); the catalog is shared: two filesystem
//! servers and a GitHub-like server that all offer `read_file`, two servers offering
//! `read_text`, `list_files`, `echo` and `search_nodes`, with tags and priorities.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::tests::{Behaviour, FakeProvider, FakeServer, owner};
use super::*;
use crate::provider::ServerSettings;

const GOLDEN: &str = include_str!("../../tests/data/routing-golden.json");

fn servers(catalog: &Map<String, Value>) -> Vec<Arc<FakeServer>> {
    catalog
        .iter()
        .map(|(name, server)| {
            let tools = server["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|tool| (tool.clone(), Behaviour::Echo))
                .collect();
            let tags = server["tags"]
                .as_array()
                .map(|tags| {
                    tags.iter()
                        .map(|tag| tag.as_str().unwrap().to_owned())
                        .collect()
                })
                .unwrap_or_default();
            let settings = ServerSettings {
                priority: server["priority"].as_i64().unwrap_or(0),
                ..ServerSettings::default()
            };
            Arc::new(FakeServer::with_settings(name, tools, settings, tags))
        })
        .collect()
}

#[tokio::test]
async fn every_golden_routing_case_routes_as_labeled() {
    let golden: Value = serde_json::from_str(GOLDEN).unwrap();
    let pipeline = Pipeline::new(
        &FakeProvider(servers(golden["catalog"].as_object().unwrap())),
        PipelineOptions::default(),
        Vec::new(),
    );
    let cases = golden["cases"].as_array().unwrap();
    assert!(cases.len() >= 40, "the set has {} cases", cases.len());
    let mut rules_covered = std::collections::BTreeSet::new();
    let mut failures = Vec::new();
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let call = &case["call"];
        let tool = call["tool"].as_str().unwrap();
        let session = &case["session"];
        let request = CallRequest {
            server: call["server"].as_str().map(str::to_owned),
            tool: tool.to_owned(),
            arguments: call["arguments"].as_object().cloned().unwrap_or_default(),
            hint: call["hint"].as_str().map(str::to_owned),
            dry_run: true,
            ..CallRequest::default()
        };
        let extras = CallExtras {
            routing: RoutingFacts {
                mention_text: session["task"].as_str().map(str::to_owned),
                most_recent: session["recent"][tool].as_str().map(str::to_owned),
                instead_of: None,
            },
            guard: None,
            arguments_hash: None,
            corrective_retry: false,
        };
        let answer = match pipeline
            .call_with(&CallContext::new(owner()), request, extras)
            .await
            .unwrap_or_else(|error| panic!("{name}: {error}"))
        {
            CallAnswer::DryRun(verdict) => serde_json::to_value(verdict).unwrap(),
            CallAnswer::Ran(ran) => panic!("{name}: ran, not a dry run: {ran:?}"),
        };
        let expected = &case["expected"];
        let got = (&answer["selection"]["server"], &answer["selection"]["rule"]);
        rules_covered.insert(expected["rule"].as_str().unwrap().to_owned());
        if got != (&expected["server"], &expected["rule"]) {
            failures.push(format!(
                "{name}: expected {}/{} got {}/{} (alternatives {})",
                expected["server"],
                expected["rule"],
                got.0,
                got.1,
                answer["selection"]["alternatives"]
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    for rule in [
        "named",
        "explicit-mention",
        "argument-type",
        "session-recency",
        "similarity",
        "priority",
    ] {
        assert!(rules_covered.contains(rule), "no case covers {rule}");
    }
}
