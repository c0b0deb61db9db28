use super::*;
use crate::doc::ToolDoc;
use crate::embed::{Embedder, HashEmbedder};

fn doc(name: &str, description: &str) -> ToolDoc {
    ToolDoc {
        name: name.to_owned(),
        description: description.to_owned(),
        ..ToolDoc::default()
    }
}

fn read() -> ToolKind {
    ToolKind {
        action: Some(Action::Read),
        ..ToolKind::default()
    }
}

#[test]
fn request_intent_collects_actions_once_and_plural_kinds() {
    let intent = RequestIntent::of("delete the tables and remove the rows", Signals::ALL);
    assert_eq!(intent.asked, vec![Action::Delete]);
    assert!(intent.asks_mutation);
    assert_eq!(
        intent.plural_terms,
        vec!["tabl".to_owned(), "row".to_owned()]
    );

    let reading = RequestIntent::of("show me the secret", Signals::ALL);
    assert_eq!(reading.asked, vec![Action::Read]);
    assert!(!reading.asks_mutation);
    assert!(reading.plural_terms.is_empty());

    // Without the actions signal the request asks for no action, but its plurals stay (the
    // lexical pass records which tools name them).
    let off = RequestIntent::of("delete the tables", Signals::NONE);
    assert!(off.asked.is_empty() && !off.asks_mutation);
    assert_eq!(off.plural_terms, vec!["tabl".to_owned()]);
}

#[test]
fn semantic_share_moves_with_the_unmatched_share_and_is_zero_when_off() {
    assert_eq!(semantic_share(0.5, 0.95, 1.0, true), 0.5);
    assert_eq!(semantic_share(0.5, 0.95, 0.0, true), 0.95);
    assert!((semantic_share(0.5, 0.95, 0.5, true) - 0.725).abs() < 1e-6);
    assert_eq!(semantic_share(0.1, 0.1, 0.3, true), 0.1);
    assert_eq!(semantic_share(0.5, 0.95, 0.0, false), 0.0);
    // A share outside [0, 1] is clamped.
    assert_eq!(semantic_share(0.5, 1.5, 0.0, true), 1.0);
}

#[test]
fn fusion_mixes_the_normalised_lexical_score_with_the_cosine() {
    let fusion = Fusion::new(0.25, &[0.0, 2.0, 4.0]);
    assert_eq!(fusion.normalise(2.0), 0.5);
    assert_eq!(fusion.lexical_share(), 0.75);
    assert_eq!(fusion.fuse(4.0, 0.8), 0.75 + 0.25 * 0.8);
    // A negative cosine adds nothing; it never subtracts.
    assert_eq!(fusion.fuse(2.0, -0.9), 0.375);
    // Nothing matched lexically: only the cosine counts.
    let none = Fusion::new(0.3, &[0.0, 0.0]);
    assert_eq!(none.normalise(0.0), 0.0);
    assert!((none.fuse(0.0, 0.5) - 0.15).abs() < 1e-6);
}

#[test]
fn fusion_bounds_enclose_every_boost_and_demotion() {
    let fusion = Fusion::new(0.3, &[1.0, 3.0]);
    let asked_delete = RequestIntent {
        asked: vec![Action::Delete],
        asks_mutation: true,
        plural_terms: Vec::new(),
    };
    let kinds = [
        ToolKind::default(),
        read(),
        ToolKind {
            action: Some(Action::Delete),
            lists: true,
            deprecated: false,
        },
        ToolKind {
            deprecated: true,
            ..read()
        },
    ];
    for lexical in [0.5f32, 1.0, 3.0] {
        for cosine in [-0.5f32, 0.0, 0.4, 1.0] {
            for kind in kinds {
                for plural_named in [false, true] {
                    let score = boosts_and_demotions(
                        fusion.fuse(lexical, cosine),
                        kind,
                        plural_named,
                        &asked_delete,
                        Signals::ALL,
                    );
                    assert!(
                        score >= fusion.worst_case(lexical),
                        "{lexical} {cosine} {kind:?}"
                    );
                    assert!(
                        score <= fusion.best_case(lexical),
                        "{lexical} {cosine} {kind:?}"
                    );
                }
            }
        }
    }
    let lift = Lift { min: 0.0, max: 0.1 };
    assert!(
        (fusion.semantic_only_ceiling(lift) - (0.3 * ACTION_MATCH * LIST_MATCH + 0.1)).abs() < 1e-6
    );
}

#[test]
fn boosts_and_demotions_follow_the_request_and_the_signals() {
    let asked_delete = RequestIntent {
        asked: vec![Action::Delete],
        asks_mutation: true,
        plural_terms: Vec::new(),
    };
    let deleting = ToolKind {
        action: Some(Action::Delete),
        ..ToolKind::default()
    };
    assert_eq!(
        boosts_and_demotions(1.0, deleting, false, &asked_delete, Signals::ALL),
        ACTION_MATCH
    );
    // A read-only tool when only a change was asked for.
    assert_eq!(
        boosts_and_demotions(1.0, read(), false, &asked_delete, Signals::ALL),
        UNASKED_READ
    );
    // No action asked: nothing moves.
    let nothing_asked = RequestIntent::default();
    assert_eq!(
        boosts_and_demotions(1.0, read(), false, &nothing_asked, Signals::ALL),
        1.0
    );
    // A listing tool naming a plural kind of the request, only with the actions signal.
    let listing = ToolKind {
        lists: true,
        ..ToolKind::default()
    };
    assert_eq!(
        boosts_and_demotions(1.0, listing, true, &nothing_asked, Signals::ALL),
        LIST_MATCH
    );
    assert_eq!(
        boosts_and_demotions(1.0, listing, false, &nothing_asked, Signals::ALL),
        1.0
    );
    let no_actions = Signals {
        actions: false,
        ..Signals::ALL
    };
    assert_eq!(
        boosts_and_demotions(1.0, listing, true, &nothing_asked, no_actions),
        1.0
    );
    // Deprecated, unless the deprecation signal is off.
    let deprecated = ToolKind {
        deprecated: true,
        ..ToolKind::default()
    };
    assert_eq!(
        boosts_and_demotions(1.0, deprecated, false, &nothing_asked, Signals::ALL),
        DEPRECATED
    );
    let no_deprecation = Signals {
        deprecation: false,
        ..Signals::ALL
    };
    assert_eq!(
        boosts_and_demotions(1.0, deprecated, false, &nothing_asked, no_deprecation),
        1.0
    );
}

#[test]
fn the_depth_and_the_lift_follow_the_rerank_signal() {
    let no_rerank = Signals {
        rerank: false,
        ..Signals::ALL
    };
    assert_eq!(first_stage_depth(10, Signals::ALL), RERANK_DEPTH);
    assert_eq!(first_stage_depth(80, Signals::ALL), 80);
    assert_eq!(first_stage_depth(10, no_rerank), 10);
    assert_eq!(
        lift_bounds(no_rerank, 0.7),
        Lift {
            min: 0.0,
            max: MAX_PRIOR_BONUS
        }
    );
    let with_rerank = lift_bounds(Signals::ALL, 0.7);
    let (low, high) = learned::correction_bounds(&learned::WEIGHTS);
    assert!(with_rerank.min <= 0.0 && with_rerank.min >= 0.7 * low.min(0.0));
    assert!((with_rerank.max - (MAX_PRIOR_BONUS + 0.7 * high.max(0.0))).abs() < 1e-6);
}

#[test]
fn the_lexical_cutoff_is_the_depth_th_worst_case_less_every_lift() {
    let lift = Lift {
        min: -0.05,
        max: 0.2,
    };
    assert_eq!(lexical_cutoff(vec![0.9, 0.1], 2, lift), f32::NEG_INFINITY);
    let cutoff = lexical_cutoff(vec![0.1, 0.9, 0.5, 0.7], 2, lift);
    assert!((cutoff - (0.7 - 0.05 - 0.2 - 1e-4)).abs() < 1e-6);
}

#[test]
fn the_semantic_scan_is_skipped_only_when_no_semantic_match_can_make_the_depth() {
    let lift = Lift { min: 0.0, max: 0.1 };
    let fusion = Fusion::new(0.3, &[1.0]);
    // Fewer lexical matches than the depth: always worth it.
    assert!(semantic_scan_worthwhile(&[(2.0, 0)], 2, &fusion, lift));
    // The depth-th lexical match scores far above any semantic-only match.
    assert!(!semantic_scan_worthwhile(
        &[(2.0, 0), (1.5, 1)],
        2,
        &fusion,
        lift
    ));
    // ... or not.
    assert!(semantic_scan_worthwhile(
        &[(2.0, 0), (0.2, 1)],
        2,
        &fusion,
        lift
    ));
    // No semantic share: never.
    let lexical_only = Fusion::new(0.0, &[1.0]);
    assert!(!semantic_scan_worthwhile(
        &[(2.0, 0)],
        2,
        &lexical_only,
        lift
    ));
}

#[test]
fn the_semantic_query_gives_the_cosine_of_the_index_rows_or_zero_when_off() {
    let index = Index::with_embedder(std::sync::Arc::new(HashEmbedder)).with_servers(vec![(
        "files".to_owned(),
        vec![doc("read_file", "Read a file from disk")],
    )]);
    let shard = &index.shards[0];
    let vector = HashEmbedder.embed_query("read a file");
    let rows: Vec<Option<&ModelRows>> = vec![None];
    let on = SemanticQuery::new(&vector, HashEmbedder.dimensions(), false, true, &rows);
    let cosine = on.cosine(0, shard, 0);
    assert!(cosine > 0.5, "{cosine}");
    let off = SemanticQuery::new(&vector, HashEmbedder.dimensions(), false, false, &rows);
    assert_eq!(off.cosine(0, shard, 0), 0.0);
    // A vector of another dimension compares with nothing.
    let other = SemanticQuery::new(&vector, HashEmbedder.dimensions() + 1, false, true, &rows);
    assert_eq!(other.cosine(0, shard, 0), 0.0);
    // By the model with no model rows for the shard: 0, never the index's rows.
    let by_model = SemanticQuery::new(&vector, HashEmbedder.dimensions(), true, true, &rows);
    assert_eq!(by_model.cosine(0, shard, 0), 0.0);
}

#[test]
fn retrieval_keeps_every_tool_that_can_reach_the_top_and_scores_it_as_fused_and_boosted() {
    let docs: Vec<ToolDoc> = (0..40)
        .map(|n| doc(&format!("tool_{n}"), &format!("report number {n} of files")))
        .chain([doc("list_files", "List the files in a folder")])
        .collect();
    let index = Index::with_embedder(std::sync::Arc::new(HashEmbedder))
        .with_servers(vec![("s".to_owned(), docs)]);
    let query = super::super::Query::new("list my files");
    let candidates = index.candidates(&query).unwrap();
    let candidate = candidates.candidate.clone();
    let stats = index.query_stats(
        candidates.visible,
        candidates.catalog_size,
        candidates.visible_length_sums,
        Signals::ALL,
    );
    let intent = RequestIntent::of(query.text, Signals::ALL);
    let matches = index.lexical_scores(query.text, &candidate, &stats, &intent.plural_terms);
    let vector = HashEmbedder.embed_query(query.text);
    let rows: Vec<Option<&ModelRows>> = vec![None];
    let semantic = SemanticQuery::new(&vector, HashEmbedder.dimensions(), false, true, &rows);
    let fusion = Fusion::new(0.1, &matches.scores);
    let stage = FirstStage {
        candidate: &candidate,
        matches: &matches,
        intent: &intent,
        semantic: &semantic,
        fusion,
        signals: Signals::ALL,
        depth: 5,
        lift: lift_bounds(Signals::ALL, fusion.lexical_share()),
    };
    let retrieved = index.retrieve(&stage);
    let best = retrieved
        .scored
        .iter()
        .copied()
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .unwrap();
    assert_eq!(best.1, 40, "list_files is the best: {:?}", retrieved.scored);
    let (shard, local) = index.locate(40);
    let expected = boosts_and_demotions(
        fusion.fuse(matches.scores[40], retrieved.semantic[40]),
        ToolKind::from(&shard.tools[local]),
        matches.plural_named[40],
        &intent,
        Signals::ALL,
    );
    assert_eq!(best.0, expected);
    assert!(matches.plural_named[40], "list_files names the plural kind");
    // Every tool scored is one the query may return, and the ones left out could not reach
    // the depth.
    assert!(retrieved.scored.iter().all(|&(_, g)| candidate[g as usize]));
    assert!(retrieved.scored.len() >= stage.depth);
}
