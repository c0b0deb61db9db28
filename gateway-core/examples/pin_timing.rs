//! Times pinning, verification, the detectors and the gateway names on 10,000 tools (copies of
//! the tool search's evaluation catalog under distinct names): what a daemon spends when a
//! large server's `list_changed` arrives.
//!
//! Run: `cargo run --release -p tool-cli-gateway-core --example pin_timing`

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;
use tool_cli_gateway_core::names::GatewayNames;
use tool_cli_gateway_core::pin::verify::verify;
use tool_cli_gateway_core::pin::{ServerListing, ServerPins, detect};

const TOOLS: usize = 10_000;
const RUNS: usize = 5;

/// The median of `RUNS` runs of `work`.
fn median(mut work: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            work();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[RUNS / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../search/eval/catalog.json");
    let servers: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    let catalog: Vec<Value> = servers
        .iter()
        .flat_map(|server| server["tools"].as_array().cloned().unwrap_or_default())
        .collect();
    let tools: Vec<Value> = (0..TOOLS)
        .map(|index| {
            let mut tool = catalog[index % catalog.len()].clone();
            let name = format!("{}_{index}", tool["name"].as_str().unwrap_or("tool"));
            tool["name"] = Value::String(name);
            tool
        })
        .collect();
    let listing = ServerListing {
        server: "big".to_owned(),
        tools: tools.clone(),
        ..ServerListing::default()
    };
    let (pinned, _) = ServerPins::from_listing(&listing);
    let pin = median(|| {
        ServerPins::from_listing(&listing);
    });
    let check = median(|| {
        let (current, _) = ServerPins::from_listing(&listing);
        verify("big", &pinned, &current);
    });
    let scan = median(|| {
        detect::scan(&[("big", &pinned)]);
    });
    let names = median(|| {
        GatewayNames::build(tools.iter().map(|tool| {
            (
                "big".to_owned(),
                tool["name"].as_str().unwrap_or_default().to_owned(),
            )
        }));
    });
    println!("{TOOLS} tools, median of {RUNS} runs:");
    println!("  pin (normalize, canonicalize, hash every field): {pin:?}");
    println!("  pin the current listing and verify it:          {check:?}");
    println!("  hidden-instruction and shadowing detectors:     {scan:?}");
    println!("  gateway names and the reverse map:              {names:?}");
    Ok(())
}
