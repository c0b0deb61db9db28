//! Counts the tokens of text files with the gateway's counters (o200k_base, cl100k_base and the
//! built-in estimate) and prints a markdown table: what `scripts/gateway-token-figures.py`
//! measures of a live gateway.
//!
//! Run: `cargo run -p tool-cli-gateway-core --features tiktoken --example count_tokens --
//! LABEL=PATH…`

use tool_cli_gateway_core::tokens::{Bpe, Estimate, TokenCounter};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let counters = [Bpe::o200k()?, Bpe::cl100k()?];
    println!("| what | bytes | o200k_base | cl100k_base | estimate |");
    println!("|---|---:|---:|---:|---:|");
    for argument in std::env::args().skip(1) {
        let (label, path) = argument
            .split_once('=')
            .ok_or("each argument is LABEL=PATH")?;
        let text = std::fs::read_to_string(path)?;
        println!(
            "| {label} | {} | {} | {} | {} |",
            text.len(),
            counters[0].count(&text),
            counters[1].count(&text),
            Estimate.count(&text)
        );
    }
    Ok(())
}
