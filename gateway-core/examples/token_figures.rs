//! Prints the token figures of docs/gateway.md: what a host holds in tool definitions in
//! pass-through and progressive mode, and the size of the progressive answers, counted with
//! o200k_base and cl100k_base on the tool search's evaluation catalog (~2,000 tools).
//!
//! Run: `cargo run -p tool-cli-gateway-core --features tiktoken --example token_figures`

use std::path::PathBuf;

use serde_json::{Value, json};
use tool_cli_gateway_core::meta_tools::render::{
    SEARCH_TOKEN_BUDGET, SearchEntry, description, search_results,
};
use tool_cli_gateway_core::meta_tools::{Access, INSTRUCTIONS, definitions};
use tool_cli_gateway_core::names::gateway_name;
use tool_cli_gateway_core::tokens::{Bpe, Estimate, TokenCounter};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let directory = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../search/eval");
    let mut tools: Vec<(String, Value)> = Vec::new();
    for file in ["peers.json", "catalog.json"] {
        let servers: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(directory.join(file))?)?;
        for server in servers {
            let name = server["name"].as_str().unwrap_or_default().to_owned();
            for tool in server["tools"].as_array().cloned().unwrap_or_default() {
                tools.push((name.clone(), tool));
            }
        }
    }
    let counters = [Bpe::o200k()?, Bpe::cl100k()?];
    println!("| what | o200k_base | cl100k_base |");
    println!("|---|---:|---:|");
    let row = |what: &str, text: &str| {
        let counts: Vec<String> = counters
            .iter()
            .map(|counter| counter.count(text).to_string())
            .collect();
        println!("| {what} | {} | {} |", counts[0], counts[1]);
    };
    for size in [50, 500, tools.len()] {
        let listed: Vec<Value> = tools[..size]
            .iter()
            .map(|(server, tool)| {
                let mut tool = tool.clone();
                tool["name"] = json!(gateway_name(
                    server,
                    tool["name"].as_str().unwrap_or_default()
                ));
                tool
            })
            .collect();
        row(
            &format!("pass-through tools/list, {size} tools"),
            &serde_json::to_string(&json!({"tools": listed}))?,
        );
    }
    row(
        "progressive tools/list (6 meta-tools), any pool size",
        &serde_json::to_string(&json!({"tools": definitions()}))?,
    );
    row("progressive instructions", INSTRUCTIONS);

    let mut longest: Vec<&(String, Value)> = tools.iter().collect();
    longest.sort_by_key(|(_, tool)| {
        std::cmp::Reverse(tool["description"].as_str().unwrap_or("").len())
    });
    let names: Vec<String> = longest[..8]
        .iter()
        .map(|(server, tool)| gateway_name(server, tool["name"].as_str().unwrap_or_default()))
        .collect();
    let entries: Vec<SearchEntry<'_>> = longest[..8]
        .iter()
        .zip(&names)
        .map(|((_, tool), name)| SearchEntry {
            gateway_name: name,
            access: Access::of(tool.get("annotations").unwrap_or(&Value::Null)),
            description: tool["description"].as_str().unwrap_or(""),
        })
        .collect();
    let answer = search_results(
        "find the right tool",
        &entries,
        tools.len(),
        None,
        SEARCH_TOKEN_BUDGET,
        &Estimate,
    );
    row(
        "search_tools top 8, the 8 longest descriptions (fitted with the estimate)",
        &answer.text,
    );
    let mut described: Vec<(usize, String)> = tools
        .iter()
        .map(|(server, tool)| {
            let text = description(
                &gateway_name(server, tool["name"].as_str().unwrap_or_default()),
                tool,
            );
            (counters[0].count(&text), text)
        })
        .collect();
    described.sort_by_key(|(tokens, _)| *tokens);
    row(
        "describe_tool, median tool",
        &described[described.len() / 2].1,
    );
    row(
        "describe_tool, largest schema",
        &described[described.len() - 1].1,
    );
    Ok(())
}
