//! The meta-tools against what OpenAI and Anthropic accept, and against the token budgets of
//! issue 27, counted with a real BPE (o200k_base, and cl100k_base beside it).

use serde_json::{Value, json};
use tool_cli_gateway_core::meta_tools::render::{
    SEARCH_TOKEN_BUDGET, SearchEntry, description, search_results,
};
use tool_cli_gateway_core::meta_tools::{Access, INSTRUCTIONS, definitions};
use tool_cli_gateway_core::names::gateway_name;
use tool_cli_gateway_core::provider_schema::{Provider, is_valid_tool_name, strict_problems};
use tool_cli_gateway_core::tokens::{Bpe, Estimate, TokenCounter};

use crate::util::evaluation_catalog;

/// The budgets of issue 27.
const TOOLS_LIST_BUDGET: usize = 1_000;
const INSTRUCTIONS_BUDGET: usize = 400;

fn tokenizers() -> [Bpe; 2] {
    [Bpe::o200k().unwrap(), Bpe::cl100k().unwrap()]
}

#[test]
fn every_meta_tool_is_valid_under_openai_and_anthropic_strict_rules() {
    let all = definitions();
    assert_eq!(all.len(), 6);
    for definition in &all {
        let name = definition["name"].as_str().unwrap();
        assert!(is_valid_tool_name(name), "{name}");
        assert!(
            !definition["description"].as_str().unwrap().is_empty(),
            "{name}"
        );
        let schema = &definition["inputSchema"];
        for provider in [Provider::OpenAi, Provider::Anthropic] {
            let problems = strict_problems(provider, schema);
            assert!(
                problems.is_empty(),
                "{name} under {provider:?}: {problems:?}"
            );
        }
        // As each provider's request would carry it.
        let openai = json!({"type": "function", "function": {
            "name": name, "description": definition["description"], "parameters": schema, "strict": true
        }});
        assert_eq!(
            openai["function"]["parameters"]["additionalProperties"],
            json!(false)
        );
        let anthropic = json!({"name": name, "description": definition["description"], "input_schema": schema, "strict": true});
        assert_eq!(anthropic["input_schema"]["type"], "object");
        assert_eq!(
            definition["_meta"]["anthropic/alwaysLoad"],
            json!(true),
            "{name}"
        );
    }
}

#[test]
fn the_call_tools_carry_honest_annotations() {
    let all = definitions();
    let annotations = |name: &str| {
        all.iter()
            .find(|definition| definition["name"] == name)
            .unwrap()["annotations"]
            .clone()
    };
    assert_eq!(
        Access::of(&annotations("call_read_only_tool")),
        Access::ReadOnly
    );
    assert_eq!(Access::of(&annotations("call_write_tool")), Access::Write);
    assert_eq!(
        Access::of(&annotations("call_destructive_tool")),
        Access::Destructive
    );
    for lookup in ["list_servers", "search_tools", "describe_tool"] {
        assert_eq!(
            Access::of(&annotations(lookup)),
            Access::ReadOnly,
            "{lookup}"
        );
    }
}

#[test]
fn the_progressive_tools_list_and_instructions_fit_their_budgets() {
    let tools_list = serde_json::to_string(&json!({"tools": definitions()})).unwrap();
    for tokenizer in tokenizers() {
        let list_tokens = tokenizer.count(&tools_list);
        let instruction_tokens = tokenizer.count(INSTRUCTIONS);
        eprintln!(
            "{}: progressive tools/list {list_tokens} tokens ({} bytes), instructions {instruction_tokens} tokens",
            tokenizer.name(),
            tools_list.len()
        );
        assert!(list_tokens <= TOOLS_LIST_BUDGET, "{list_tokens}");
        assert!(
            instruction_tokens <= INSTRUCTIONS_BUDGET,
            "{instruction_tokens}"
        );
    }
}

/// Search entries for the `count` tools of the evaluation catalog with the longest
/// descriptions: the hardest case for the budget.
fn longest_described(count: usize) -> Vec<(String, Access, String)> {
    let mut tools: Vec<(String, Access, String)> = evaluation_catalog()
        .into_iter()
        .flat_map(|server| {
            server.tools.into_iter().map(move |tool| {
                (
                    gateway_name(&server.name, tool["name"].as_str().unwrap()),
                    Access::of(tool.get("annotations").unwrap_or(&Value::Null)),
                    tool["description"].as_str().unwrap_or("").to_owned(),
                )
            })
        })
        .collect();
    tools.sort_by_key(|(_, _, description)| std::cmp::Reverse(description.len()));
    tools.truncate(count);
    tools
}

#[test]
fn search_answers_fit_700_tokens_with_either_counter() {
    let worst = longest_described(8);
    // And adversarial entries: the longest names, descriptions of CJK and of random text.
    let cjk = "検索して結果を返します。".repeat(60);
    let random: String = (0..2000).map(|i| char::from(b"aZ3qX9k_"[i % 8])).collect();
    let long_name = gateway_name("analytics-production-eu-west-1", &"x".repeat(80));
    let mut adversarial = worst.clone();
    adversarial[0] = (long_name.clone(), Access::Destructive, cjk);
    adversarial[1] = (long_name, Access::Write, random);
    let o200k = Bpe::o200k().unwrap();
    for (case, tools) in [
        ("longest descriptions", &worst),
        ("adversarial", &adversarial),
    ] {
        let entries: Vec<SearchEntry<'_>> = tools
            .iter()
            .map(|(name, access, description)| SearchEntry {
                gateway_name: name,
                access: *access,
                description,
            })
            .collect();
        // Fitted with the real tokenizer: within budget, all 8 shown.
        let exact = search_results(
            "find what I need",
            &entries,
            2042,
            None,
            SEARCH_TOKEN_BUDGET,
            &o200k,
        );
        assert!(
            exact.tokens <= SEARCH_TOKEN_BUDGET,
            "{case}: {}",
            exact.tokens
        );
        assert_eq!(exact.shown, 8, "{case}");
        assert_eq!(o200k.count(&exact.text), exact.tokens);
        // Fitted with the built-in estimate, as a daemon without the tiktoken feature does:
        // still within budget by the real count.
        let estimated = search_results(
            "find what I need",
            &entries,
            2042,
            None,
            SEARCH_TOKEN_BUDGET,
            &Estimate,
        );
        let real = o200k.count(&estimated.text);
        assert!(
            real <= SEARCH_TOKEN_BUDGET,
            "{case}: estimate-fitted answer is {real} o200k tokens"
        );
        assert_eq!(estimated.shown, 8, "{case}");
        eprintln!(
            "search_tools top 8 ({case}): {} o200k tokens fitted with o200k; {real} o200k tokens \
             ({} estimated) fitted with the estimate",
            exact.tokens, estimated.tokens
        );
    }
}

#[test]
fn describe_returns_one_schema_and_a_typical_one_is_small() {
    let o200k = Bpe::o200k().unwrap();
    let mut sizes: Vec<usize> = Vec::new();
    for server in evaluation_catalog() {
        for tool in &server.tools {
            let name = gateway_name(&server.name, tool["name"].as_str().unwrap());
            let text = description(&name, tool);
            assert_eq!(text.matches("Input schema: ").count(), 1);
            sizes.push(o200k.count(&text));
        }
    }
    sizes.sort_unstable();
    let median = sizes[sizes.len() / 2];
    let largest = *sizes.last().unwrap();
    eprintln!(
        "describe_tool on {} tools: median {median}, largest {largest} o200k tokens",
        sizes.len()
    );
    assert!(median < 200, "{median}");
}

/// Texts of each kind a catalog holds, for the estimate's calibration.
fn calibration_corpus() -> Vec<(&'static str, String)> {
    let catalog = evaluation_catalog();
    let descriptions: Vec<String> = catalog
        .iter()
        .flat_map(|server| server.tools.iter())
        .map(|tool| tool["description"].as_str().unwrap_or("").to_owned())
        .collect();
    let schemas: Vec<String> = catalog
        .iter()
        .flat_map(|server| server.tools.iter())
        .map(|tool| tool["inputSchema"].to_string())
        .collect();
    let mut random = crate::util::Random::new(5);
    let mut random_text = |alphabet: &[u8], length: usize| -> String {
        (0..length)
            .map(|_| char::from(alphabet[random.below(alphabet.len())]))
            .collect()
    };
    vec![
        ("English descriptions", descriptions.join(" ")),
        ("compact JSON Schemas", schemas.join(" ")),
        ("meta-tool definitions", serde_json::to_string(&definitions()).unwrap()),
        ("pretty JSON", serde_json::to_string_pretty(&catalog[0].tools).unwrap()),
        (
            "identifiers",
            "get_user_profile_by_id listRepositoryBranches createPullRequestReview X-Api-Key "
                .repeat(100),
        ),
        ("base64", random_text(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", 20_000)),
        ("hex", random_text(b"0123456789abcdef", 20_000)),
        ("random lower-case letters", random_text(b"abcdefghijklmnopqrstuvwxyz", 20_000)),
        ("digits", random_text(b"0123456789", 20_000)),
        ("Cyrillic", "Возвращает список файлов в каталоге проекта с размером и временем изменения. ".repeat(50)),
        ("CJK", "検索します。ファイルを読み込んでテキストを返します。这是一个用于搜索文档的工具，返回匹配的结果列表。".repeat(50)),
        ("emoji", "🔍📁✅❤️👨‍👩‍👧🚀🎉 ".repeat(200)),
    ]
}

#[test]
fn estimate_is_not_below_o200k() {
    let o200k = Bpe::o200k().unwrap();
    for (kind, text) in calibration_corpus() {
        let real = o200k.count(&text);
        let estimated = Estimate.count(&text);
        let ratio = estimated as f64 / real as f64;
        eprintln!("estimate on {kind}: {estimated} for {real} o200k tokens ({ratio:.2}x)");
        assert!(
            estimated >= real,
            "{kind}: estimate {estimated} < o200k {real}"
        );
        assert!(ratio <= 2.2, "{kind}: estimate {ratio:.2}x o200k");
    }
}
