//! What an LLM call costs, and the ceiling that keeps a run's bill bounded.
//!
//! Pure arithmetic, no I/O: a price table (USD per million tokens, per model, with the date the
//! price took effect), the cost of a call from its usage, and the check the loop makes before
//! every LLM call. The check prices the *worst case* of the next call (every input token at the
//! dearest input rate, the full `max_tokens` of output) and, when that does not fit, lowers
//! `max_tokens` or refuses the call, so the sum of actual costs never passes the ceiling as long
//! as the provider bills no more input tokens than the bound the loop computed (see
//! [`input_token_bound`]) and no more output tokens than `max_tokens` (which providers enforce).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use tool_cli_protocol::agent::UsageTotals;

/// When the shipped price table was last checked against the providers' published prices.
pub const PRICES_CHECKED: &str = "2026-11-23";

/// Prices of one model, in USD per million tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelPrice {
    /// Uncached input tokens.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Input tokens written to the prompt cache (Anthropic's 5-minute writes; OpenAI bills
    /// writes as plain input, so there it equals `input`).
    pub cache_write: f64,
    /// Input tokens read from the prompt cache.
    pub cache_read: f64,
    /// The date (YYYY-MM-DD) this price took effect or was last confirmed.
    pub effective: String,
    /// A dearer tier for long prompts, when the provider has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long_prompt: Option<LongPromptPrice>,
}

/// The prices that apply, to every token of a call, once its prompt (input + cache reads +
/// cache writes) is longer than `threshold_tokens`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LongPromptPrice {
    /// Prompts longer than this many tokens pay these prices.
    pub threshold_tokens: u64,
    /// Uncached input tokens.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Cache writes.
    pub cache_write: f64,
    /// Cache reads.
    pub cache_read: f64,
}

/// Token counts of one LLM call, normalised across providers: `input_tokens` excludes the
/// cached parts, which are counted apart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Input tokens billed at the plain input rate.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write_tokens: u64,
}

impl Usage {
    /// Every input token of the call, cached or not.
    pub fn prompt_tokens(&self) -> u64 {
        self.input_tokens + self.cache_read_tokens + self.cache_write_tokens
    }

    /// Adds another call's usage.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
    }

    /// The wire totals of this one call, which cost `cost_usd` (`None`: unpriced).
    pub fn totals(&self, cost_usd: Option<f64>) -> UsageTotals {
        UsageTotals {
            tokens_in: self.prompt_tokens(),
            tokens_out: self.output_tokens,
            cache_read: self.cache_read_tokens,
            cache_write: self.cache_write_tokens,
            cost_usd,
            llm_calls: 1,
        }
    }
}

/// Prices per model. Lookup is by exact model id, or by an entry whose id the model id extends
/// with a dated snapshot suffix (`claude-haiku-4-5` prices `claude-haiku-4-5-20251001`,
/// `gpt-4o` prices `gpt-4o-2024-08-06` but not `gpt-4o-mini`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PriceTable {
    models: BTreeMap<String, ModelPrice>,
}

impl PriceTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// The shipped defaults (see `docs/agent.md` for the table and its sources).
    pub fn defaults() -> Self {
        let mut table = Self::new();
        for &(model, input, cache_write, cache_read, output, effective) in DEFAULT_PRICES {
            table.insert(
                model,
                ModelPrice {
                    input,
                    output,
                    cache_write,
                    cache_read,
                    effective: effective.to_owned(),
                    long_prompt: None,
                },
            );
        }
        for &(model, threshold_tokens, input, cache_write, cache_read, output) in LONG_PROMPT_PRICES
        {
            if let Some(price) = table.models.get_mut(model) {
                price.long_prompt = Some(LongPromptPrice {
                    threshold_tokens,
                    input,
                    output,
                    cache_write,
                    cache_read,
                });
            }
        }
        table
    }

    /// Adds or replaces one model's price.
    pub fn insert(&mut self, model: &str, price: ModelPrice) {
        self.models.insert(model.to_owned(), price);
    }

    /// The defaults with `overrides` laid over them (an entry in `overrides` wins).
    pub fn with_overrides(mut self, overrides: &PriceTable) -> Self {
        for (model, price) in &overrides.models {
            self.models.insert(model.clone(), price.clone());
        }
        self
    }

    /// The price of `model`, if the table knows it.
    pub fn lookup(&self, model: &str) -> Option<&ModelPrice> {
        if let Some(price) = self.models.get(model) {
            return Some(price);
        }
        self.models
            .iter()
            .filter(|(id, _)| {
                model
                    .strip_prefix(id.as_str())
                    .is_some_and(is_snapshot_suffix)
            })
            .max_by_key(|(id, _)| id.len())
            .map(|(_, price)| price)
    }

    /// Every model the table prices, sorted.
    pub fn models(&self) -> impl Iterator<Item = (&str, &ModelPrice)> {
        self.models.iter().map(|(id, price)| (id.as_str(), price))
    }
}

/// `-20250929`, `-2024-08-06` or `-latest`: the suffixes that name a snapshot of the same model.
fn is_snapshot_suffix(rest: &str) -> bool {
    let Some(rest) = rest.strip_prefix('-') else {
        return false;
    };
    if rest == "latest" {
        return true;
    }
    let digits: String = rest.chars().filter(|c| *c != '-').collect();
    digits.len() == 8
        && digits.chars().all(|c| c.is_ascii_digit())
        && (rest.len() == 8 || rest.len() == 10)
}

/// (model, input, cache write, cache read, output, effective date), USD per million tokens.
///
/// Anthropic: the "Model pricing" table of its pricing page (5-minute cache writes). OpenAI: its
/// pricing page; it bills cache writes as plain input, so `cache write` = `input` there.
const DEFAULT_PRICES: &[(&str, f64, f64, f64, f64, &str)] = &[
    ("claude-opus-5-5", 4.0, 5.0, 0.20, 20.0, "2026-10-24"),
    ("claude-opus-5", 5.0, 6.25, 0.50, 25.0, "2026-10-24"),
    ("claude-opus-4-8", 5.0, 6.25, 0.50, 25.0, "2026-10-24"),
    ("claude-opus-4-7", 5.0, 6.25, 0.50, 25.0, "2026-10-24"),
    ("claude-opus-4-6", 5.0, 6.25, 0.50, 25.0, "2026-10-24"),
    ("claude-opus-4-5", 5.0, 6.25, 0.50, 25.0, "2026-10-24"),
    ("claude-opus-4-1", 15.0, 18.75, 1.50, 75.0, "2026-10-24"),
    ("claude-sonnet-5-5", 2.0, 2.50, 0.10, 10.0, "2026-10-07"),
    ("claude-sonnet-5", 2.0, 2.50, 0.20, 10.0, "2026-10-24"),
    ("claude-sonnet-4-6", 3.0, 3.75, 0.30, 15.0, "2026-10-24"),
    ("claude-sonnet-4-5", 3.0, 3.75, 0.30, 15.0, "2026-10-24"),
    ("claude-sonnet-4", 3.0, 3.75, 0.30, 15.0, "2026-10-24"),
    ("claude-haiku-5-5", 0.10, 0.125, 0.01, 0.50, "2026-10-07"),
    ("claude-haiku-4-5", 1.0, 1.25, 0.10, 5.0, "2026-10-24"),
    ("claude-3-5-haiku", 0.80, 1.0, 0.08, 4.0, "2026-10-24"),
    ("gpt-5.1", 1.25, 1.25, 0.125, 10.0, "2025-11-13"),
    ("gpt-5", 1.25, 1.25, 0.125, 10.0, "2025-08-07"),
    ("gpt-5-mini", 0.25, 0.25, 0.025, 2.0, "2025-08-07"),
    ("gpt-5-nano", 0.05, 0.05, 0.005, 0.40, "2025-08-07"),
    ("gpt-4.1", 2.0, 2.0, 0.50, 8.0, "2025-04-14"),
    ("gpt-4.1-mini", 0.40, 0.40, 0.10, 1.60, "2025-04-14"),
    ("gpt-4.1-nano", 0.10, 0.10, 0.025, 0.40, "2025-04-14"),
    ("gpt-4o", 2.50, 2.50, 1.25, 10.0, "2024-10-01"),
    ("gpt-4o-mini", 0.15, 0.15, 0.075, 0.60, "2024-10-01"),
    ("o3", 2.0, 2.0, 0.50, 8.0, "2025-06-10"),
    ("o4-mini", 1.10, 1.10, 0.275, 4.40, "2025-04-16"),
];

/// (model, threshold, input, cache write, cache read, output) of the long-prompt tiers.
const LONG_PROMPT_PRICES: &[(&str, u64, f64, f64, f64, f64)] = &[
    ("claude-haiku-5-5", 100_000, 0.50, 0.625, 0.05, 2.50),
    ("claude-sonnet-4-5", 200_000, 6.0, 7.50, 0.60, 22.50),
    ("claude-sonnet-4", 200_000, 6.0, 7.50, 0.60, 22.50),
];

/// The four rates that apply to a call.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Rates {
    input: f64,
    output: f64,
    cache_write: f64,
    cache_read: f64,
}

impl ModelPrice {
    fn base_rates(&self) -> Rates {
        Rates {
            input: self.input,
            output: self.output,
            cache_write: self.cache_write,
            cache_read: self.cache_read,
        }
    }

    fn rates_for_prompt(&self, prompt_tokens: u64) -> Rates {
        match &self.long_prompt {
            Some(long) if prompt_tokens > long.threshold_tokens => Rates {
                input: long.input,
                output: long.output,
                cache_write: long.cache_write,
                cache_read: long.cache_read,
            },
            _ => self.base_rates(),
        }
    }

    /// The dearest rate of each kind a call whose prompt is at most `prompt_bound` tokens can
    /// pay: the base tier while the bound stays under the long-prompt threshold (the actual
    /// prompt cannot be longer than the bound), else the dearer of both tiers.
    fn worst_rates(&self, prompt_bound: u64) -> Rates {
        let base = self.base_rates();
        match &self.long_prompt {
            Some(long) if prompt_bound > long.threshold_tokens => Rates {
                input: base.input.max(long.input),
                output: base.output.max(long.output),
                cache_write: base.cache_write.max(long.cache_write),
                cache_read: base.cache_read.max(long.cache_read),
            },
            _ => base,
        }
    }
}

const PER_MILLION: f64 = 1_000_000.0;

/// What one call with `usage` cost under `price`, in USD.
pub fn call_cost(price: &ModelPrice, usage: &Usage) -> f64 {
    let rates = price.rates_for_prompt(usage.prompt_tokens());
    (usage.input_tokens as f64 * rates.input
        + usage.cache_write_tokens as f64 * rates.cache_write
        + usage.cache_read_tokens as f64 * rates.cache_read
        + usage.output_tokens as f64 * rates.output)
        / PER_MILLION
}

/// The most a call can cost when it sends at most `input_tokens` and may produce
/// `max_output_tokens`: every input token at the dearest input rate of any tier.
pub fn worst_case_cost(price: &ModelPrice, input_tokens: u64, max_output_tokens: u64) -> f64 {
    let rates = price.worst_rates(input_tokens);
    let input_rate = rates.input.max(rates.cache_write).max(rates.cache_read);
    (input_tokens as f64 * input_rate + max_output_tokens as f64 * rates.output) / PER_MILLION
}

/// An upper bound on the input tokens of a request whose serialized body is `request_bytes`
/// long. Byte-level BPE tokenizers (Claude's, OpenAI's `o200k`/`cl100k`, Llama's) never make a
/// token of less than one byte, so the body's byte count bounds its tokens; `PREAMBLE_TOKENS`
/// covers what a provider adds on its side (Anthropic's tool-use system prompt is a few hundred).
pub fn input_token_bound(request_bytes: usize) -> u64 {
    request_bytes as u64 + PREAMBLE_TOKENS
}

/// Tokens a provider may add to a request on its side (tool-use instructions, chat template).
pub const PREAMBLE_TOKENS: u64 = 1_024;

/// The smallest `max_tokens` worth asking for; below it the answer would be cut off anyway.
pub const MIN_OUTPUT_TOKENS: u64 = 256;

/// The ceiling's verdict on the next call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CeilingDecision {
    /// Make the call with this `max_tokens` (possibly lowered from the wanted value).
    Proceed {
        /// The output budget that fits.
        max_output_tokens: u64,
    },
    /// Stop: even the smallest useful call could pass the ceiling.
    Halt {
        /// The worst case of that smallest call, in USD.
        worst_case_usd: f64,
    },
}

/// Decides whether the next call fits under `ceiling_usd` given `spent_usd` so far: the largest
/// `max_tokens` not above `wanted_output_tokens` whose worst case still fits, or a halt when
/// not even [`MIN_OUTPUT_TOKENS`] (or the wanted value, when smaller) does.
pub fn check_ceiling(
    price: &ModelPrice,
    spent_usd: f64,
    ceiling_usd: f64,
    input_tokens_bound: u64,
    wanted_output_tokens: u64,
) -> CeilingDecision {
    let floor = wanted_output_tokens.min(MIN_OUTPUT_TOKENS);
    let fits =
        |output: u64| spent_usd + worst_case_cost(price, input_tokens_bound, output) <= ceiling_usd;
    if fits(wanted_output_tokens) {
        return CeilingDecision::Proceed {
            max_output_tokens: wanted_output_tokens,
        };
    }
    if !fits(floor) {
        return CeilingDecision::Halt {
            worst_case_usd: worst_case_cost(price, input_tokens_bound, floor),
        };
    }
    // Binary search for the largest output budget that fits; `fits` is monotone in `output`.
    let (mut low, mut high) = (floor, wanted_output_tokens);
    while high - low > 1 {
        let middle = low + (high - low) / 2;
        if fits(middle) {
            low = middle;
        } else {
            high = middle;
        }
    }
    CeilingDecision::Proceed {
        max_output_tokens: low,
    }
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{RngExt as _, SeedableRng as _};

    use super::*;

    fn sonnet() -> ModelPrice {
        PriceTable::defaults()
            .lookup("claude-sonnet-4-5")
            .cloned()
            .expect("sonnet 4.5 is priced")
    }

    #[test]
    fn cost_of_a_call_adds_every_kind_of_token() {
        let usage = Usage {
            input_tokens: 1_000,
            output_tokens: 500,
            cache_read_tokens: 10_000,
            cache_write_tokens: 2_000,
        };
        // 1000 × 3 + 500 × 15 + 10000 × 0.30 + 2000 × 3.75 = 21000 per million.
        let cost = call_cost(&sonnet(), &usage);
        assert!((cost - 0.021).abs() < 1e-12, "{cost}");
    }

    #[test]
    fn long_prompts_pay_the_long_tier_on_every_token() {
        let price = PriceTable::defaults()
            .lookup("claude-haiku-5-5")
            .cloned()
            .expect("haiku 5.5");
        let short = Usage {
            input_tokens: 100_000,
            output_tokens: 1_000,
            ..Usage::default()
        };
        let long = Usage {
            input_tokens: 100_001,
            ..short
        };
        assert!((call_cost(&price, &short) - (10_000.0 + 500.0) / 1e6).abs() < 1e-12);
        assert!((call_cost(&price, &long) - (50_000.5 + 2_500.0) / 1e6).abs() < 1e-12);
    }

    #[test]
    fn lookup_accepts_snapshots_but_not_other_models() {
        let table = PriceTable::defaults();
        assert_eq!(
            table.lookup("claude-haiku-4-5-20251001"),
            table.lookup("claude-haiku-4-5")
        );
        assert_eq!(table.lookup("gpt-4o-2024-08-06"), table.lookup("gpt-4o"));
        assert_eq!(table.lookup("gpt-4o-mini").map(|p| p.input), Some(0.15));
        assert_eq!(
            table.lookup("claude-sonnet-4-5-latest"),
            table.lookup("claude-sonnet-4-5")
        );
        assert!(table.lookup("gpt-4o-audio").is_none());
        assert!(table.lookup("llama3.2").is_none());
        assert!(
            table.lookup("claude-sonnet-4-7").is_none(),
            "no guessing across versions"
        );
    }

    #[test]
    fn overrides_win_over_defaults() {
        let mut overrides = PriceTable::new();
        overrides.insert(
            "gpt-4o",
            ModelPrice {
                input: 9.0,
                output: 9.0,
                cache_write: 9.0,
                cache_read: 9.0,
                effective: "2030-01-01".into(),
                long_prompt: None,
            },
        );
        let table = PriceTable::defaults().with_overrides(&overrides);
        assert_eq!(table.lookup("gpt-4o").map(|p| p.input), Some(9.0));
        assert_eq!(table.lookup("gpt-4o-mini").map(|p| p.input), Some(0.15));
    }

    #[test]
    fn the_ceiling_lowers_max_tokens_then_halts() {
        let price = sonnet();
        // 10,000 input tokens at 3.75 (the dearest input rate) = 0.0375; 1000 output = 0.015.
        assert_eq!(
            check_ceiling(&price, 0.0, 0.10, 10_000, 1_000),
            CeilingDecision::Proceed {
                max_output_tokens: 1_000
            }
        );
        match check_ceiling(&price, 0.05, 0.10, 10_000, 1_000) {
            CeilingDecision::Proceed { max_output_tokens } => {
                assert!((MIN_OUTPUT_TOKENS..1_000).contains(&max_output_tokens));
                assert!(0.05 + worst_case_cost(&price, 10_000, max_output_tokens) <= 0.10);
                assert!(0.05 + worst_case_cost(&price, 10_000, max_output_tokens + 1) > 0.10);
            }
            other => panic!("expected a lowered budget, got {other:?}"),
        }
        assert!(matches!(
            check_ceiling(&price, 0.09, 0.10, 10_000, 1_000),
            CeilingDecision::Halt { .. }
        ));
    }

    /// Whatever the provider reports, as long as it stays within the bounds the loop sent (input
    /// tokens at most the bound, output at most `max_tokens`, split any way between plain, cache
    /// read and cache write), the running total never passes the ceiling.
    #[test]
    fn no_usage_sequence_passes_the_ceiling() {
        let table = PriceTable::defaults();
        let models: Vec<&str> = table.models().map(|(id, _)| id).collect();
        let mut rng = StdRng::seed_from_u64(0x00C0_FFEE);
        for _ in 0..2_000 {
            let price = table
                .lookup(models[rng.random_range(0..models.len())])
                .expect("listed model");
            let ceiling = rng.random_range(0.0001..1.0);
            let mut spent = 0.0;
            let mut calls = 0;
            loop {
                let bound = rng.random_range(1..300_000);
                let wanted = rng.random_range(1..8_192);
                let max_output = match check_ceiling(price, spent, ceiling, bound, wanted) {
                    CeilingDecision::Proceed { max_output_tokens } => max_output_tokens,
                    CeilingDecision::Halt { .. } => break,
                };
                assert!(max_output <= wanted);
                let input = rng.random_range(0..=bound);
                let read = rng.random_range(0..=input);
                let write = rng.random_range(0..=input - read);
                let usage = Usage {
                    input_tokens: input - read - write,
                    cache_read_tokens: read,
                    cache_write_tokens: write,
                    output_tokens: rng.random_range(0..=max_output),
                };
                spent += call_cost(price, &usage);
                calls += 1;
                assert!(
                    spent <= ceiling,
                    "spent {spent} > ceiling {ceiling} after {calls} calls"
                );
                if calls > 200 {
                    break;
                }
            }
        }
    }

    #[test]
    fn every_default_price_is_complete_and_dated() {
        for (model, price) in PriceTable::defaults().models() {
            assert!(price.input > 0.0 && price.output > 0.0, "{model}");
            assert!(
                price.cache_read <= price.input,
                "{model}: cache reads are discounted"
            );
            assert_eq!(price.effective.len(), 10, "{model}: YYYY-MM-DD");
        }
    }
}
