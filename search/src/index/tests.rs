//! Tests of the index: statistics across shards, parallel builds, embeddings from the shared split.

use super::shard::{EMBEDDED_DESCRIPTION_BYTES, embedded_description_end};
use super::*;
use crate::embed;

fn doc(name: &str, description: &str) -> ToolDoc {
    ToolDoc {
        name: name.to_owned(),
        description: description.to_owned(),
        ..ToolDoc::default()
    }
}

#[test]
fn statistics_are_exact_across_shards_and_follow_replacements() {
    let index = Index::new()
        .with_server(
            "a",
            vec![doc("read_file", "read a file"), doc("write_file", "write")],
        )
        .with_server("b", vec![doc("get_weather", "weather for a city")]);
    assert_eq!(index.len(), 3);
    assert_eq!(index.term_stats("fil").unwrap().document_frequency, 2);
    assert_eq!(index.servers().collect::<Vec<_>>(), ["a", "b"]);

    let replaced = index.with_server("a", vec![doc("list_files", "list files")]);
    assert_eq!(replaced.len(), 2);
    assert_eq!(replaced.term_stats("fil").unwrap().document_frequency, 1);
    assert!(replaced.term_stats("writ").is_none());
    // The old value is untouched: readers of it are not disturbed by the rebuild.
    assert_eq!(index.len(), 3);

    let removed = replaced.without_server("a");
    assert_eq!(removed.len(), 1);
    assert!(removed.term_stats("fil").is_none());
    assert_eq!(removed.without_server("nobody").len(), 1);
}

#[test]
fn a_parallel_build_equals_a_server_by_server_build() {
    let servers: Vec<(String, Vec<ToolDoc>)> = (0..30)
        .map(|s| {
            let docs = (0..100)
                .map(|t| {
                    doc(
                        &format!("tool_{t}_{}", t % 7),
                        &format!("does thing {} of kind {s}", t * s),
                    )
                })
                .collect();
            (format!("server{s}"), docs)
        })
        .collect();
    let parallel = Index::new().with_servers(servers.clone());
    let sequential = servers
        .into_iter()
        .fold(Index::new(), |index, (server, docs)| {
            index.with_server(&server, docs)
        });
    assert_eq!(parallel.len(), 3_000);
    assert_eq!(
        parallel.servers().collect::<Vec<_>>(),
        sequential.servers().collect::<Vec<_>>()
    );
    for text in ["thing of kind 7", "tool 3", "does 120"] {
        let query = crate::search::Query::new(text);
        assert_eq!(parallel.search(&query), sequential.search(&query), "{text}");
    }
}

#[test]
fn a_tool_embedded_from_the_shared_split_equals_the_embedder_on_its_text() {
    // The index embeds tools from the words it split for BM25 (name twice, title, the
    // description's opening, parameter names); that must be what the embedder itself makes
    // of the same text, or queries (embedded by the embedder) would drift from tools.
    let tool = ToolDoc {
        name: "getFileInfo".to_owned(),
        title: Some("File details".to_owned()),
        description: format!(
            "Returns size and times of a file. {}",
            "More words. ".repeat(60)
        ),
        parameters: vec![crate::doc::ParamDoc {
            name: "path".to_owned(),
            description: "where the file is".to_owned(),
        }],
        ..ToolDoc::default()
    };
    let description = &tool.description[..embedded_description_end(&tool.description)];
    assert!(description.len() <= EMBEDDED_DESCRIPTION_BYTES && description.len() > 400);
    let text = format!("getFileInfo getFileInfo File details {description} path");
    let expected = embed::HashEmbedder.embed(&text);
    let index = Index::with_embedder(Arc::new(embed::HashEmbedder)).with_server("fs", vec![tool]);
    let shard = &index.shards[0];
    let row: Vec<f32> = shard.embeddings[..embed::HASH_DIMENSIONS]
        .iter()
        .map(|q| f32::from(*q) * shard.embedding_scales[0])
        .collect();
    let similarity = embed::dot(&row, expected.values());
    assert!(similarity > 0.999, "{similarity}");
}

/// An embedder of another kind than the hashing one: a few letter counts.
struct LetterCounts;

impl Embedder for LetterCounts {
    fn dimensions(&self) -> usize {
        4
    }

    fn embed(&self, text: &str) -> crate::embed::Embedding {
        let count = |letter: char| text.chars().filter(|c| *c == letter).count() as f32;
        crate::embed::Embedding::normalized(vec![
            count('a') + 1.0,
            count('e'),
            count('i'),
            count('o'),
        ])
    }
}

#[test]
fn a_build_with_another_embedder_after_a_hashing_build_on_the_same_thread_works() {
    // The thread's word table keeps the hashing features of the words it has seen; a later
    // build with another embedder must neither use them (it used to index a vector of length
    // zero with them and panic) nor embed differently from the embedder itself.
    let docs = vec![
        doc("read_file", "read a file"),
        doc("get_weather", "weather"),
    ];
    let hashing = Index::new().with_server("a", docs.clone());
    assert_eq!(hashing.len(), 2);
    let other = Index::with_embedder(Arc::new(LetterCounts)).with_server("a", docs);
    let shard = &other.shards[0];
    assert_eq!(shard.embeddings.len(), 2 * 4);
    let hits = other
        .search(&crate::search::Query::new("read a file"))
        .unwrap()
        .hits;
    assert_eq!(hits[0].tool, "read_file");
}

#[test]
fn shards_share_unchanged_servers() {
    let index = Index::new()
        .with_server("a", vec![doc("t", "x")])
        .with_server("b", vec![doc("u", "y")]);
    let updated = index.with_server("b", vec![doc("v", "z")]);
    assert!(Arc::ptr_eq(&index.shards[0], &updated.shards[0]));
    assert!(!Arc::ptr_eq(&index.shards[1], &updated.shards[1]));
}

#[test]
fn a_shard_keeps_names_descriptions_and_tags_without_an_allocation_per_tool() {
    let tagged = |name: &str, description: &str, tags: &[&str]| ToolDoc {
        tags: tags.iter().map(|tag| (*tag).to_owned()).collect(),
        ..doc(name, description)
    };
    let index = Index::new().with_server(
        "a",
        vec![
            tagged("read_file", "Reads a file.", &["fs"]),
            tagged("wrïte_file", "Écrit un fichier ☕", &["fs"]),
            tagged("get_weather", "", &["web", "fs"]),
            tagged("nothing", "no tags", &[]),
        ],
    );
    let shard = &index.shards[0];
    let names: Vec<&str> = (0..4).map(|local| shard.name(local)).collect();
    assert_eq!(names, ["read_file", "wrïte_file", "get_weather", "nothing"]);
    assert_eq!(shard.description(1), "Écrit un fichier ☕");
    assert_eq!(shard.description(2), "");
    assert_eq!(shard.tags(0), ["fs"]);
    assert_eq!(shard.tags(2), ["web", "fs"]);
    assert!(shard.tags(3).is_empty());
    // Three distinct tag lists for four tools.
    assert_eq!(shard.tag_sets.len(), 3);
    let hits = index
        .search(&crate::search::Query::new("write a file"))
        .unwrap()
        .hits;
    let written = hits.iter().find(|hit| hit.tool == "wrïte_file").unwrap();
    assert_eq!(written.description, "Écrit un fichier ☕");
}

#[test]
fn a_term_lists_the_shards_that_have_it_in_shard_order() {
    let index = Index::new()
        .with_server("c", vec![doc("read_file", "read"), doc("file_info", "x")])
        .with_server("a", vec![doc("get_file", "y")])
        .with_server("b", vec![doc("get_weather", "z")]);
    let file = &index.term_stats("fil").unwrap();
    assert_eq!(file.document_frequency, 3);
    let shards: Vec<(u32, u32)> = index
        .stats
        .shards_of(file)
        .iter()
        .map(|list| (list.shard, list.end - list.start))
        .collect();
    // Shards are sorted by server: a (position 0), b, c (position 2, two tools).
    assert_eq!(shards, [(0, 1), (2, 2)]);
    let weather = index.stats.shards_of(index.term_stats("weather").unwrap());
    assert_eq!(weather.len(), 1);
    assert_eq!(
        (weather[0].shard, weather[0].end - weather[0].start),
        (1, 1)
    );
}

#[test]
fn a_posting_packs_the_tool_and_saturates_counts_at_255() {
    use super::shard::{MAX_SHARD_TOOLS, Posting};
    assert_eq!(std::mem::size_of::<Posting>(), 8);
    let last = (MAX_SHARD_TOOLS - 1) as u32;
    let posting = Posting::new(last, [0, 1, 255, 256, u16::MAX]);
    assert_eq!(posting.tool(), MAX_SHARD_TOOLS - 1);
    assert_eq!(posting.frequencies(), [0, 1, 255, 255, 255]);
    let posting = Posting::new(7, [3, 0, 0, 0, 9]);
    assert_eq!(posting.tool(), 7);
    assert_eq!(posting.frequency(NAME), 3);
    assert_eq!(posting.frequency(SERVER), 9);
    assert_eq!(posting.frequency(DESCRIPTION), 0);
}

#[test]
fn the_footprint_counts_every_part_and_follows_the_index() {
    let empty = Index::new().footprint();
    assert_eq!(
        (empty.tools, empty.postings, empty.total_bytes()),
        (0, 0, 0)
    );
    let one = Index::new().with_server("files", vec![doc("read_file", "read a file")]);
    let footprint = one.footprint();
    assert_eq!(footprint.tools, 1);
    // `read`, `fil` in the name and description, `files` → `fil` for the server: one posting
    // per distinct term of the tool.
    assert_eq!(footprint.postings, footprint.shard_terms);
    assert_eq!(footprint.posting_bytes, 8 * footprint.postings);
    assert_eq!(footprint.embedding_bytes, one.embedder().dimensions() + 4);
    assert!(footprint.tool_bytes >= "read_file".len() + "read a file".len());
    assert!(footprint.term_table_bytes > 0 && footprint.length_bytes > 0);
    assert_eq!(footprint.model_vector_bytes, 0);
    // A second server adds its own.
    let two = one.with_server(
        "weather",
        vec![doc("get_forecast", "the forecast for a city")],
    );
    assert_eq!(two.footprint().tools, 2);
    assert!(two.footprint().total_bytes() > footprint.total_bytes());
}

/// The daemon's pattern (docs/search.md, "API"): the current index behind a lock, each query
/// cloning it for a moment and searching without the lock, a rebuild computing the next index
/// off the lock and swapping it in. 100 queries on their own threads while another thread
/// rebuilds one server again and again: every query answers, from one whole catalog or the
/// other, never an error and never a mix.
#[test]
fn a_hundred_concurrent_queries_during_rebuilds_all_answer_from_a_whole_catalog() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Barrier, RwLock};

    let old_tools: Vec<ToolDoc> = (0..200)
        .map(|i| doc(&format!("read_file_{i}"), "read a file from disk"))
        .collect();
    let new_tools: Vec<ToolDoc> = (0..300)
        .map(|i| doc(&format!("fetch_page_{i}"), "read a web page"))
        .collect();
    let start = Index::new()
        .with_server("disk", old_tools.clone())
        .with_server("other", vec![doc("send_mail", "send an email")]);
    let current = RwLock::new(Arc::new(start));
    let rebuilding = AtomicBool::new(true);
    let queries = 100;
    let barrier = Barrier::new(queries + 1);
    let answers: Vec<(usize, usize)> = std::thread::scope(|scope| {
        scope.spawn(|| {
            barrier.wait();
            let mut next_is_new = true;
            for _ in 0..20 {
                let base = Arc::clone(&current.read().unwrap());
                let tools = if next_is_new { &new_tools } else { &old_tools };
                let next = base.with_server("disk", tools.clone());
                *current.write().unwrap() = Arc::new(next);
                next_is_new = !next_is_new;
            }
            rebuilding.store(false, Ordering::Release);
        });
        let handles: Vec<_> = (0..queries)
            .map(|_| {
                scope.spawn(|| {
                    barrier.wait();
                    let index = Arc::clone(&current.read().unwrap());
                    let outcome = index
                        .search(&crate::search::Query {
                            limit: 100,
                            ..crate::search::Query::new("read")
                        })
                        .expect("every query answers");
                    let from_old = outcome
                        .hits
                        .iter()
                        .filter(|hit| hit.tool.starts_with("read_file_"))
                        .count();
                    let from_new = outcome
                        .hits
                        .iter()
                        .filter(|hit| hit.tool.starts_with("fetch_page_"))
                        .count();
                    assert_eq!(outcome.catalog_size, index.len());
                    (from_old, from_new)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("no query panics"))
            .collect()
    });
    assert!(!rebuilding.load(Ordering::Acquire));
    assert_eq!(answers.len(), queries);
    for (from_old, from_new) in answers {
        assert!(
            (from_old > 0) != (from_new > 0),
            "a mix of two catalogs: {from_old} old and {from_new} new hits"
        );
    }
}

/// The server's text posted once per shard ranks exactly as when every tool's postings carried
/// it, with far fewer postings: the same hits, bit-identical scores, hidden tools or not.
#[test]
fn the_server_text_posted_once_per_shard_scores_exactly_as_posted_per_tool() {
    let server = |name: &str, description: &str, tools: &[(&str, &str)]| {
        let docs: Vec<ToolDoc> = tools
            .iter()
            .map(|(tool, text)| ToolDoc {
                server_description: Some(description.to_owned()),
                tags: vec!["chat".to_owned()],
                ..doc(tool, text)
            })
            .collect();
        (name.to_owned(), docs)
    };
    let catalog = vec![
        server(
            "slack",
            "Slack: channels, messages and users of a workspace",
            &[
                ("post_message", "Post a message to a channel"),
                ("list_channels", "List the channels"),
                ("get_user", "A user's profile"),
            ],
        ),
        server(
            "mail",
            "Email: send and read messages",
            &[
                ("send_email", "Send an email"),
                ("read_inbox", "Read the inbox"),
            ],
        ),
    ];
    let build = |per_tool: bool| {
        shard::POST_SERVER_TEXT_PER_TOOL.with(|flag| flag.set(per_tool));
        let index = Index::new().with_servers(catalog.clone());
        shard::POST_SERVER_TEXT_PER_TOOL.with(|flag| flag.set(false));
        index
    };
    let once = build(false);
    let per_tool = build(true);
    assert!(
        once.footprint().postings < per_tool.footprint().postings,
        "{} postings, {} before",
        once.footprint().postings,
        per_tool.footprint().postings
    );
    let hide_one = |_: &str, tool: &str| tool != "get_user";
    for text in [
        "send a message on slack",
        "slack channels",
        "email",
        "read messages",
        "workspace users",
    ] {
        for visible in [None, Some(&hide_one as &crate::search::Visibility<'_>)] {
            let query = crate::search::Query {
                visible,
                ..crate::search::Query::new(text)
            };
            let a = once.search(&query).unwrap();
            let b = per_tool.search(&query).unwrap();
            assert!(!a.hits.is_empty(), "{text}");
            assert_eq!(a, b, "{text}");
        }
    }
}
