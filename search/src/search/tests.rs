//! Unit tests of `Index::search`: ranking basics, every bad input, visibility, filters, priors.

use super::lexical::is_plural;
use super::*;
use crate::doc::{ParamDoc, ToolDoc};
use crate::text;

fn doc(name: &str, description: &str) -> ToolDoc {
    ToolDoc {
        name: name.to_owned(),
        description: description.to_owned(),
        ..ToolDoc::default()
    }
}

fn sample() -> Index {
    Index::new()
        .with_server(
            "filesystem",
            vec![
                doc(
                    "read_file",
                    "Read the complete contents of a file from disk",
                ),
                doc(
                    "write_file",
                    "Create a new file or overwrite an existing one",
                ),
                doc("list_directory", "List the entries of a directory"),
            ],
        )
        .with_server(
            "slack",
            vec![
                doc("send_message", "Post a message to a channel"),
                doc("list_channels", "List the channels of the workspace"),
            ],
        )
        .with_server(
            "weather",
            vec![doc(
                "get_forecast",
                "Weather forecast for a city for the next days",
            )],
        )
}

fn top(index: &Index, text: &str) -> Vec<(String, String)> {
    index
        .search(&Query::new(text))
        .unwrap()
        .hits
        .into_iter()
        .map(|h| (h.server, h.tool))
        .collect()
}

fn first(index: &Index, text: &str) -> String {
    let hits = top(index, text);
    let (server, tool) = hits
        .first()
        .unwrap_or_else(|| panic!("no hit for {text:?}"));
    format!("{server}/{tool}")
}

#[test]
fn the_obvious_tool_ranks_first_and_synonyms_reach_it() {
    let index = sample();
    assert_eq!(first(&index, "read a file"), "filesystem/read_file");
    assert_eq!(
        first(&index, "fetch the contents of a document"),
        "filesystem/read_file"
    );
    assert_eq!(
        first(&index, "post something in a chat room"),
        "slack/send_message"
    );
    assert_eq!(
        first(&index, "will it rain in paris tomorrow"),
        "weather/get_forecast"
    );
    assert_eq!(
        first(&index, "show me what is in this folder"),
        "filesystem/list_directory"
    );
}

#[test]
fn hits_explain_their_score_and_are_sorted() {
    let outcome = sample().search(&Query::new("list channels")).unwrap();
    assert_eq!(outcome.catalog_size, 6);
    let best = &outcome.hits[0];
    assert_eq!(best.tool, "list_channels");
    assert!(best.why.lexical > 0.0 && best.why.semantic > 0.0);
    assert_eq!(
        best.why.inertia + best.why.reliability + best.why.latency,
        0.0
    );
    assert!(outcome.hits.windows(2).all(|w| w[0].score >= w[1].score));
}

#[test]
fn an_empty_or_blank_query_is_an_error() {
    for text in ["", "   ", "\n\t"] {
        assert_eq!(
            sample().search(&Query::new(text)),
            Err(SearchError::EmptyQuery)
        );
    }
}

#[test]
fn a_1_mb_query_is_refused_by_its_length() {
    let text = "file ".repeat(200_000);
    let error = sample().search(&Query::new(&text)).unwrap_err();
    assert_eq!(
        error,
        SearchError::QueryTooLong {
            bytes: 1_000_000,
            max: MAX_QUERY_BYTES
        }
    );
    assert!(error.to_string().contains("at most 4096 bytes"));
    // Just under the cap is accepted.
    let text = "file ".repeat(MAX_QUERY_BYTES / 5);
    assert!(sample().search(&Query::new(&text)).is_ok());
}

#[test]
fn limit_must_be_between_1_and_100() {
    for limit in [0, 101, 10_000] {
        let error = sample()
            .search(&Query {
                limit,
                ..Query::new("file")
            })
            .unwrap_err();
        assert_eq!(
            error,
            SearchError::LimitOutOfRange {
                limit,
                max: MAX_LIMIT
            }
        );
    }
    let outcome = sample()
        .search(&Query {
            limit: 1,
            ..Query::new("file")
        })
        .unwrap();
    assert_eq!(outcome.hits.len(), 1);
    assert_eq!(Query::new("x").limit, DEFAULT_LIMIT);
}

#[test]
fn a_query_of_only_stop_words_finds_nothing_rather_than_noise() {
    let index = sample().with_server(
        "everything",
        vec![doc(
            "whoami",
            "Tell who you are: the identity of the current user",
        )],
    );
    for text in ["who are you", "the of and", "what is this?"] {
        let outcome = index.search(&Query::new(text)).unwrap();
        assert!(outcome.hits.is_empty(), "{text}: {:?}", outcome.hits);
        assert_eq!(outcome.catalog_size, 7);
    }
    // One content word among the stop words is enough.
    assert_eq!(
        first(&index, "who is the current user"),
        "everything/whoami"
    );
}

#[test]
fn non_latin_scripts_match_by_words_bigrams_and_trigrams() {
    let index = sample()
        .with_server("cn", vec![doc("du_qu_wen_jian", "读取文件的内容")])
        .with_server(
            "ru",
            vec![doc("prochitat_fail", "Прочитать содержимое файла")],
        )
        .with_server("ar", vec![doc("qiraat_milaf", "قراءة محتوى الملف")]);
    assert_eq!(first(&index, "文件内容"), "cn/du_qu_wen_jian");
    assert_eq!(first(&index, "содержимое файлов"), "ru/prochitat_fail");
    assert_eq!(first(&index, "محتوى الملف"), "ar/qiraat_milaf");
}

/// An embedder for tests: a text's vector counts its `x`s and `y`s, so similarity is
/// controlled exactly, and it claims a large semantic share, as a real model would.
struct CountingEmbedder;

impl crate::embed::Embedder for CountingEmbedder {
    fn dimensions(&self) -> usize {
        2
    }

    fn embed(&self, text: &str) -> crate::embed::Embedding {
        let count = |c| text.chars().filter(|&t| t == c).count() as f32;
        crate::embed::Embedding::normalized(vec![count('x'), count('y')])
    }

    fn semantic_share(&self) -> f32 {
        0.6
    }
}

#[test]
fn a_tool_can_be_found_by_embedding_alone_when_no_word_matches() {
    let index = Index::with_embedder(std::sync::Arc::new(CountingEmbedder)).with_server(
        "s",
        vec![
            doc("by_meaning", "xxxx"),
            doc("unrelated", "yyyy"),
            doc("words", "zebra"),
        ],
    );
    // "xxxxy" is no indexed word, but its vector is close to the first tool's.
    let outcome = index.search(&Query::new("xxxxy")).unwrap();
    assert_eq!(outcome.hits.len(), 1, "{:?}", outcome.hits);
    assert_eq!(outcome.hits[0].tool, "by_meaning");
    assert_eq!(outcome.hits[0].why.lexical, 0.0);
    assert!(outcome.hits[0].why.semantic > 0.9);
    // With enough strong lexical matches, the semantic-only scan is skipped: same answer as a
    // full scan would give, since no semantic-only tool could reach the top.
    let outcome = index
        .search(&Query {
            limit: 1,
            ..Query::new("zebra")
        })
        .unwrap();
    assert_eq!(outcome.hits[0].tool, "words");
}

#[test]
fn emoji_are_ignored_around_words_and_alone_find_nothing() {
    assert_eq!(
        first(&sample(), "📁 list directory 📁"),
        "filesystem/list_directory"
    );
    let outcome = sample().search(&Query::new("🚀🔥✨")).unwrap();
    assert!(outcome.hits.is_empty());
}

#[test]
fn zero_tools_give_no_hits_not_an_error() {
    let outcome = Index::new().search(&Query::new("read a file")).unwrap();
    assert!(outcome.hits.is_empty());
    assert_eq!(outcome.catalog_size, 0);
    let empty_server = Index::new().with_server("idle", Vec::new());
    let servers = ["idle".to_owned()];
    let outcome = empty_server
        .search(&Query {
            servers: &servers,
            ..Query::new("anything")
        })
        .unwrap();
    assert!(outcome.hits.is_empty());
}

#[test]
fn tools_without_descriptions_are_found_by_name_and_parameters() {
    let index = sample().with_server(
        "bare",
        vec![
            doc("convert_currency", ""),
            ToolDoc {
                name: "x1".to_owned(),
                parameters: vec![ParamDoc {
                    name: "isbn".to_owned(),
                    description: String::new(),
                }],
                ..ToolDoc::default()
            },
        ],
    );
    assert_eq!(
        first(&index, "convert dollars to euros currency"),
        "bare/convert_currency"
    );
    assert_eq!(first(&index, "book by isbn"), "bare/x1");
    let hit = &index.search(&Query::new("currency")).unwrap().hits[0];
    assert_eq!(hit.description, "");
}

#[test]
fn a_50_kb_description_is_indexed_cut_and_does_not_swamp_short_tools() {
    let long = format!(
        "Translate text between languages. {}",
        "Lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(900)
    );
    assert!(long.len() > 50_000);
    let index = sample().with_server("big", vec![doc("translate_text", &long)]);
    let outcome = index
        .search(&Query::new("translate this text to french"))
        .unwrap();
    assert_eq!(outcome.hits[0].tool, "translate_text");
    assert!(outcome.hits[0].description.len() <= crate::doc::MAX_DESCRIPTION_BYTES);
    // A short tool about reading files still wins its own query.
    assert_eq!(first(&index, "read a file"), "filesystem/read_file");
}

#[test]
fn hidden_tools_never_appear_and_are_not_counted() {
    let index = sample();
    let only_filesystem = |server: &str, _tool: &str| server == "filesystem";
    let outcome = index
        .search(&Query {
            visible: Some(&only_filesystem),
            ..Query::new("send a message to the channel")
        })
        .unwrap();
    assert_eq!(outcome.catalog_size, 3);
    assert!(outcome.hits.iter().all(|h| h.server == "filesystem"));

    // Statistics are those of the visible catalog: the scores equal those of an index that
    // never held the hidden tools, so nothing about them leaks through a score.
    let alone = Index::new().with_server(
        "filesystem",
        vec![
            doc(
                "read_file",
                "Read the complete contents of a file from disk",
            ),
            doc(
                "write_file",
                "Create a new file or overwrite an existing one",
            ),
            doc("list_directory", "List the entries of a directory"),
        ],
    );
    let scoped = index
        .search(&Query {
            visible: Some(&only_filesystem),
            ..Query::new("read a file")
        })
        .unwrap();
    assert_eq!(scoped, alone.search(&Query::new("read a file")).unwrap());

    // A hidden server is as unknown as one that does not exist.
    let servers = ["slack".to_owned()];
    let error = index
        .search(&Query {
            visible: Some(&only_filesystem),
            servers: &servers,
            ..Query::new("message")
        })
        .unwrap_err();
    assert_eq!(
        error,
        SearchError::UnknownServer {
            server: "slack".to_owned()
        }
    );
}

#[test]
fn server_and_tag_filters_narrow_the_hits() {
    let index = sample().with_server(
        "teams",
        vec![ToolDoc {
            tags: vec!["chat".to_owned()],
            ..doc("send_message", "Send a chat message to a team channel")
        }],
    );
    let servers = ["teams".to_owned()];
    let outcome = index
        .search(&Query {
            servers: &servers,
            ..Query::new("send a message")
        })
        .unwrap();
    assert!(outcome.hits.iter().all(|h| h.server == "teams"));
    assert_eq!(outcome.catalog_size, 7);
    let tags = ["chat".to_owned()];
    let outcome = index
        .search(&Query {
            tags: &tags,
            ..Query::new("message")
        })
        .unwrap();
    assert_eq!(outcome.hits.len(), 1);
    assert_eq!(outcome.hits[0].server, "teams");
    let unknown = ["nope".to_owned()];
    assert!(matches!(
        index.search(&Query {
            servers: &unknown,
            ..Query::new("message")
        }),
        Err(SearchError::UnknownServer { .. })
    ));
}

/// Priors that favour one tool as much as they can.
struct Favour(&'static str);

impl Priors for Favour {
    fn inertia(&self, _previous: ToolRef<'_>, candidate: ToolRef<'_>) -> f32 {
        if candidate.tool == self.0 { 5.0 } else { 0.0 }
    }
    fn reliability(&self, candidate: ToolRef<'_>) -> f32 {
        if candidate.tool == self.0 { 1.0 } else { 0.0 }
    }
    fn latency(&self, candidate: ToolRef<'_>) -> f32 {
        if candidate.tool == self.0 { 1.0 } else { -3.0 }
    }
}

fn near_twins() -> Index {
    Index::new()
        .with_server(
            "slack",
            vec![doc("send_message", "Send a message to a channel")],
        )
        .with_server(
            "teams",
            vec![doc("send_message", "Send a message to a channel")],
        )
        .with_server("files", vec![doc("read_file", "Read a file")])
}

#[test]
fn priors_reorder_near_ties() {
    let index = near_twins();
    let previous = ToolRef {
        server: "files",
        tool: "read_file",
    };
    let plain = index.search(&Query::new("send a message")).unwrap();
    assert_eq!(plain.hits[0].server, "slack");
    let favour = Favour("send_message");
    // Both twins are favoured equally by name; favour teams by server instead.
    struct FavourServer;
    impl Priors for FavourServer {
        fn inertia(&self, _previous: ToolRef<'_>, candidate: ToolRef<'_>) -> f32 {
            if candidate.server == "teams" {
                0.8
            } else {
                0.0
            }
        }
        fn reliability(&self, _candidate: ToolRef<'_>) -> f32 {
            0.5
        }
        fn latency(&self, _candidate: ToolRef<'_>) -> f32 {
            0.5
        }
    }
    let nudged = index
        .search(&Query {
            previous_tool: Some(previous),
            priors: &FavourServer,
            ..Query::new("send a message")
        })
        .unwrap();
    assert_eq!(nudged.hits[0].server, "teams");
    assert!(nudged.hits[0].why.inertia > 0.0);
    assert!(nudged.hits[0].why.reliability > 0.0);
    // Out-of-range prior values are clamped: the bonus never exceeds its bound.
    let clamped = index
        .search(&Query {
            previous_tool: Some(previous),
            priors: &favour,
            ..Query::new("send a message")
        })
        .unwrap();
    let why = clamped.hits[0].why;
    assert!(why.inertia + why.reliability + why.latency <= MAX_PRIOR_BONUS + 1e-6);
    assert!(clamped.hits.iter().all(|h| h.why.latency >= 0.0));
}

#[test]
fn priors_never_bury_a_strong_textual_match() {
    let index = sample();
    let previous = ToolRef {
        server: "slack",
        tool: "send_message",
    };
    // Everything the priors can give goes to the wrong tool; the right one still wins.
    let favour = Favour("write_file");
    let outcome = index
        .search(&Query {
            previous_tool: Some(previous),
            priors: &favour,
            ..Query::new("read the contents of a file")
        })
        .unwrap();
    assert_eq!(outcome.hits[0].tool, "read_file");
    assert!(
        outcome
            .hits
            .iter()
            .any(|h| h.tool == "write_file" && h.why.inertia > 0.0)
    );
}

#[test]
fn results_do_not_depend_on_the_order_servers_were_added() {
    let forward = sample();
    let backward = Index::new()
        .with_server(
            "weather",
            vec![doc(
                "get_forecast",
                "Weather forecast for a city for the next days",
            )],
        )
        .with_server(
            "slack",
            vec![
                doc("send_message", "Post a message to a channel"),
                doc("list_channels", "List the channels of the workspace"),
            ],
        )
        .with_server(
            "filesystem",
            vec![
                doc(
                    "read_file",
                    "Read the complete contents of a file from disk",
                ),
                doc(
                    "write_file",
                    "Create a new file or overwrite an existing one",
                ),
                doc("list_directory", "List the entries of a directory"),
            ],
        );
    for text in ["list", "file", "message channel"] {
        assert_eq!(top(&forward, text), top(&backward, text), "{text}");
    }
}

#[test]
fn skipping_weak_lexical_matches_never_changes_the_hits() {
    // Many tools sharing common words, so most queries match hundreds weakly: the hits for a
    // small limit must be exactly the head of those for the largest, score for score.
    let servers: Vec<(String, Vec<ToolDoc>)> = (0..12)
        .map(|s| {
            let docs = (0..60)
                .map(|t| {
                    doc(
                        &format!("{}_{}", ["get", "list", "create", "delete"][t % 4], t % 9),
                        &format!(
                            "{} the {} of a {} in project {s}",
                            ["Read", "Show", "Update", "Remove"][t % 4],
                            ["file", "issue", "message", "record", "event"][t % 5],
                            ["folder", "repository", "channel", "table"][(t + s) % 4]
                        ),
                    )
                })
                .collect();
            (format!("server{s}"), docs)
        })
        .collect();
    let index = Index::new().with_servers(servers);
    for text in [
        "read a file in a folder",
        "remove the issue",
        "create a message in the channel of project 3",
        "table",
    ] {
        // With the measured-only late interaction too: its lift is in the bounds.
        let late = Signals {
            late_interaction: true,
            ..Signals::ALL
        };
        // And with the measured-only feedback, whose lift (either way) is in the bounds too.
        let feedback = Signals {
            feedback: true,
            ..Signals::ALL
        };
        for signals in [Signals::ALL, late, feedback] {
            let all = index
                .search(&Query {
                    limit: MAX_LIMIT,
                    signals,
                    ..Query::new(text)
                })
                .unwrap();
            assert!(all.hits.len() > 20, "{text}: {}", all.hits.len());
            for limit in [1, 3, 10] {
                let some = index
                    .search(&Query {
                        limit,
                        signals,
                        ..Query::new(text)
                    })
                    .unwrap();
                assert_eq!(some.hits, all.hits[..limit], "{text}, limit {limit}");
            }
        }
    }
}

#[test]
fn late_interaction_is_off_by_default_and_adds_a_bounded_bonus_when_on() {
    const { assert!(!Signals::ALL.late_interaction) };
    let index = Index::new().with_server(
        "notes",
        vec![
            doc("create_memory", "Store a memory to recall later"),
            doc("get_current_time", "Get the current time in a timezone"),
            doc("send_message", "Send a chat message to a channel"),
        ],
    );
    let text = "remember that my sister lives in Lyon";
    let search = |signals| {
        index
            .search(&Query {
                signals,
                ..Query::new(text)
            })
            .unwrap()
    };
    let default = search(Signals::ALL);
    let late = search(Signals {
        late_interaction: true,
        ..Signals::ALL
    });
    assert_eq!(late.hits[0].tool, "create_memory");
    let gained = |tool: &str| {
        let before = default
            .hits
            .iter()
            .find(|h| h.tool == tool)
            .map(|h| h.why.rerank);
        let after = late
            .hits
            .iter()
            .find(|h| h.tool == tool)
            .map(|h| h.why.rerank);
        after.unwrap_or(0.0) - before.unwrap_or(0.0)
    };
    let memory = gained("create_memory");
    // The bonus is at most the weight times the lexical share, and the token-by-token likeness
    // of "remember" to "memory" gives the memory tool some of it.
    assert!(
        memory > 0.0 && memory <= late_interaction::WEIGHT,
        "{memory}"
    );
}

#[test]
fn a_plural_request_prefers_the_tool_that_lists_that_kind() {
    // Both tools match "table" as well; the plural asks for several, which the listing tool
    // gives, and a singular request still gets the tool for one.
    let index = Index::new().with_server(
        "db",
        vec![
            doc(
                "table_schema_get",
                "Get the schema of a table in a database",
            ),
            doc("table_list", "List tables in a database"),
            doc("secret_get", "Get the details of a secret"),
            doc("secret_list", "List the secrets"),
        ],
    );
    let tables = index
        .search(&Query::new("what tables does database sales have"))
        .unwrap()
        .hits;
    assert_eq!(tables[0].tool, "table_list");
    // Lexically the two are nearly tied; the plural is what decides.
    assert!(
        (tables[0].why.lexical - tables[1].why.lexical).abs() < 0.05,
        "{tables:?}"
    );
    assert_eq!(
        first(&index, "the schema of table orders in database sales"),
        "db/table_schema_get"
    );
    // A plural that is not the kind the tool lists ("details") does not make it a list request.
    assert_eq!(first(&index, "the details of secret api"), "db/secret_get");
}

#[test]
fn is_plural_recognises_regular_plurals_only() {
    let plural = |word: &str| {
        let mut stemmed = String::new();
        text::stem(word, &mut stemmed);
        is_plural(word, &stemmed)
    };
    for word in ["tables", "registries", "keys", "databases", "boxes"] {
        assert!(plural(word), "{word}");
    }
    for word in [
        "table", "status", "address", "access", "analysis", "running",
    ] {
        assert!(!plural(word), "{word}");
    }
}

#[test]
fn parameters_most_tools_of_a_server_share_are_not_indexed() {
    // Every tool of the server has the same `auth` parameter, whose description mentions "key";
    // it must not make "key" a word of every tool (where its document frequency would make it
    // worthless for the one tool about keys).
    let auth = ParamDoc {
        name: "auth".to_owned(),
        description: "authentication: a key or a token".to_owned(),
    };
    let with_auth = |name: &str, description: &str| ToolDoc {
        parameters: vec![auth.clone()],
        ..doc(name, description)
    };
    let index = Index::new().with_server(
        "cloud",
        vec![
            with_auth("key_get", "Get a key of the vault"),
            with_auth("secret_get", "Get a secret of the vault"),
            with_auth("vm_list", "List virtual machines"),
            with_auth("disk_list", "List disks"),
        ],
    );
    let hits = index.search(&Query::new("key")).unwrap().hits;
    assert_eq!(hits[0].tool, "key_get");
    // `secret_get` is found through the concept table (key/secret), the other tools not at all.
    assert!(
        hits.iter()
            .all(|h| h.tool != "vm_list" && h.tool != "disk_list"),
        "{hits:?}"
    );
    // A server of fewer tools keeps them: two tools sharing a parameter is no boilerplate.
    let small = Index::new().with_server(
        "small",
        vec![
            with_auth("vm_list", "List virtual machines"),
            with_auth("disk_list", "List disks"),
        ],
    );
    assert_eq!(small.search(&Query::new("token")).unwrap().hits.len(), 2);
}

#[test]
fn a_query_of_10000_identical_words_is_refused_and_repetition_under_the_cap_changes_nothing() {
    // 10,000 times "file" is 50,000 bytes: refused by its length before anything is scanned.
    let text = vec!["file"; 10_000].join(" ");
    assert_eq!(
        sample().search(&Query::new(&text)).unwrap_err(),
        SearchError::QueryTooLong {
            bytes: 49_999,
            max: MAX_QUERY_BYTES
        }
    );
    // Under the cap, a word said 800 times is one query word: the same hits as said once.
    let repeated = vec!["file"; 800].join(" ");
    assert!(repeated.len() <= MAX_QUERY_BYTES);
    let once = sample().search(&Query::new("file")).unwrap();
    let many = sample().search(&Query::new(&repeated)).unwrap();
    let tools = |outcome: &SearchOutcome| {
        outcome
            .hits
            .iter()
            .map(|hit| format!("{}/{}", hit.server, hit.tool))
            .collect::<Vec<_>>()
    };
    assert!(!once.hits.is_empty());
    assert_eq!(tools(&many), tools(&once));
}

#[test]
fn a_deprecated_tool_ranks_below_its_replacement_and_is_still_found_by_name() {
    let docs = vec![
        doc(
            "read_file",
            "Read the complete contents of a file as text. DEPRECATED: Use read_text_file instead.",
        ),
        doc(
            "read_text_file",
            "Read the complete contents of a file from the file system as text.",
        ),
        doc("write_file", "Create a new file or overwrite one."),
    ];
    let index = Index::new().with_server("filesystem", docs);
    let outcome = index.search(&Query::new("read a file")).unwrap();
    assert_eq!(outcome.hits[0].tool, "read_text_file", "{:?}", outcome.hits);
    let old = outcome
        .hits
        .iter()
        .find(|hit| hit.tool == "read_file")
        .expect("still a hit");
    assert!(old.why.deprecated);
    assert!(!outcome.hits[0].why.deprecated);
    // Without the signal (the ablation), the shorter old name wins as before.
    let without = index
        .search(&Query {
            signals: Signals {
                deprecation: false,
                ..Signals::ALL
            },
            ..Query::new("read a file")
        })
        .unwrap();
    assert_eq!(without.hits[0].tool, "read_file");
}

#[test]
fn the_rerank_stage_adds_the_share_of_the_name_the_request_covers() {
    let docs = vec![
        doc(
            "get_issue",
            "Get an issue with its comments, labels, comment count and comment authors.",
        ),
        doc("add_issue_comment", "Add a comment to an issue."),
    ];
    // The hashing embedder: a fixed share (σ = 0.1), so the stage's weight is known.
    let index = Index::with_embedder(std::sync::Arc::new(crate::embed::HashEmbedder))
        .with_server("tracker", docs);
    let outcome = index
        .search(&Query::new("add a comment to the issue"))
        .unwrap();
    let bonus = |tool: &str| {
        outcome
            .hits
            .iter()
            .find(|hit| hit.tool == tool)
            .expect("a hit")
            .why
            .rerank
    };
    // The stage's weight on the lexical share: 0.11 × (1 − 0.1).
    let weight = 0.11 * 0.9;
    // All three words of `add_issue_comment`; one of the two of `get_issue`.
    assert!((bonus("add_issue_comment") - weight).abs() < 1e-6);
    assert!((bonus("get_issue") - weight / 2.0).abs() < 1e-6);
    let without = index
        .search(&Query {
            signals: Signals {
                rerank: false,
                ..Signals::ALL
            },
            ..Query::new("add a comment to the issue")
        })
        .unwrap();
    assert!(without.hits.iter().all(|hit| hit.why.rerank == 0.0));
    let score = |outcome: &SearchOutcome, tool: &str| {
        outcome
            .hits
            .iter()
            .find(|hit| hit.tool == tool)
            .map(|hit| hit.score)
            .expect("a hit")
    };
    assert!(
        (score(&outcome, "get_issue") - score(&without, "get_issue") - weight / 2.0).abs() < 1e-5
    );
}

#[test]
fn feedback_is_off_by_default_and_moves_only_the_cosine_share_of_the_reranked_tools() {
    const { assert!(!Signals::ALL.feedback) };
    let index = sample();
    let search = |signals| {
        index
            .search(&Query {
                signals,
                ..Query::new("post something in a chat room")
            })
            .unwrap()
    };
    let default = search(Signals::ALL);
    let moved = search(Signals {
        feedback: true,
        ..Signals::ALL
    });
    assert_eq!(moved.hits[0].tool, "send_message");
    for hit in &moved.hits {
        let before = default.hits.iter().find(|h| h.tool == hit.tool).unwrap();
        // The score moves by σ times the change of the cosine, σ ≤ 1.
        assert!(
            (hit.score - before.score).abs()
                <= (hit.why.semantic - before.why.semantic).abs() + 1e-5,
            "{}: {} -> {}",
            hit.tool,
            before.score,
            hit.score
        );
    }
}

#[test]
fn a_request_the_catalog_cannot_answer_is_not_claimed_confidently() {
    let index = sample();
    let text = "weather forecast for paris";
    let answered = index.search(&Query::new(text)).unwrap();
    assert_eq!(answered.hits[0].tool, "get_forecast");
    assert_eq!(answered.confidence, Confidence::Confident);
    // The same request over a catalog without the forecast: the nearest tools are near misses,
    // and the search says it is not sure rather than offering one as the answer.
    let hidden = |server: &str, _tool: &str| server != "weather";
    let unanswerable = index
        .search(&Query {
            visible: Some(&hidden),
            ..Query::new(text)
        })
        .unwrap();
    assert!(
        matches!(
            unanswerable.confidence,
            Confidence::Weak | Confidence::Ambiguous | Confidence::NoMatch
        ),
        "{:?}: {:?}",
        unanswerable.confidence,
        unanswerable.hits.first().map(|h| &h.tool)
    );
    // Nothing at all matched: said as such.
    let nothing = index.search(&Query::new("who are you")).unwrap();
    assert_eq!(nothing.confidence, Confidence::NoMatch);
}

#[test]
fn near_twins_are_ambiguous_not_confident() {
    let index = near_twins();
    let outcome = index.search(&Query::new("send a message")).unwrap();
    assert!(outcome.hits.len() >= 2);
    assert_eq!(
        outcome.confidence,
        Confidence::Ambiguous,
        "{:?}",
        outcome.hits
    );
}
