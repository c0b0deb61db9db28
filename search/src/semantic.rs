//! A sentence-embedding model's vectors attached to an index after it is built.
//!
//! A real model costs tens of milliseconds per text, so it cannot embed tools while a shard is
//! built (the lexical index of ten thousand tools takes 50 ms): the index is built with its own
//! embedder as always (the built-in static embeddings), and the model's vectors of a shard's tools arrive later, computed
//! elsewhere (the daemon embeds them on a background thread, through a disk cache) and attached
//! with `Index::with_model_vectors`. A shard's vectors are tied to that very shard: when the
//! server's tools change, the new shard has none until they are embedded again.
//!
//! A query ranks with the model only when every tool it may return has a model vector; until
//! then it ranks with the index's embedder for all of them (`SemanticRanking::Pending`). The two
//! cosines live on different scales and get different shares of the score (0.3–0.6 against
//! 0.5–0.95 for all-MiniLM-L6-v2), so mixing them in one ranking would favour whichever tools happen to lack
//! a model vector; a ranking that is consistent for a few seconds is worth more.

use std::sync::Arc;

use crate::embed::{self, Embedding};
use crate::index::shard::Shard;

/// Which embedding ranked a search.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SemanticRanking {
    /// The sentence-embedding model: every tool the query could return had its vector.
    Model,
    /// A model is attached but some tools the query could return have no vector yet (or the
    /// query came without the model's embedding): the index's embedder ranked.
    Pending,
    /// No model is attached: the index's embedder ranked (the built-in static embeddings by
    /// default; the wire name is from when that was the hashing embedder).
    Hashing,
}

impl SemanticRanking {
    /// The wire name: `model`, `pending` or `hashing`.
    pub fn as_str(self) -> &'static str {
        match self {
            SemanticRanking::Model => "model",
            SemanticRanking::Pending => "pending",
            SemanticRanking::Hashing => "hashing",
        }
    }
}

/// The model's vectors of one shard's tools, quantised to `i8` with a scale per row like the
/// hashing vectors; a tool not embedded yet has no row.
pub(crate) struct ModelRows {
    /// The shard these rows belong to: rows attached to a shard that has since been replaced
    /// are dropped with it.
    pub(crate) shard: Arc<Shard>,
    dimensions: usize,
    rows: Vec<i8>,
    scales: Vec<f32>,
    present: Vec<bool>,
    pub(crate) embedded: usize,
}

impl ModelRows {
    /// The heap bytes of the vectors.
    pub(crate) fn bytes(&self) -> usize {
        self.rows.capacity()
            + self.scales.capacity() * std::mem::size_of::<f32>()
            + self.present.capacity()
    }

    /// Rows for `shard`'s tools from `vectors` (one per tool, in order; `None` for a tool not
    /// embedded yet). A vector of another dimension counts as missing.
    pub(crate) fn new(
        shard: Arc<Shard>,
        dimensions: usize,
        vectors: &[Option<&Embedding>],
    ) -> ModelRows {
        let mut rows = Vec::with_capacity(vectors.len() * dimensions);
        let mut scales = Vec::with_capacity(vectors.len());
        let mut present = Vec::with_capacity(vectors.len());
        let zeros = vec![0.0f32; dimensions];
        for vector in vectors {
            let values = vector
                .map(Embedding::values)
                .filter(|values| values.len() == dimensions);
            scales.push(embed::quantize_into(values.unwrap_or(&zeros), &mut rows));
            present.push(values.is_some());
        }
        let embedded = present.iter().filter(|present| **present).count();
        ModelRows {
            shard,
            dimensions,
            rows,
            scales,
            present,
            embedded,
        }
    }

    /// Whether the tool at `local` has a vector.
    pub(crate) fn has(&self, local: usize) -> bool {
        self.present.get(local).copied().unwrap_or(false)
    }

    /// The vector of the tool at `local`, as kept (dequantised and not normalised again, so
    /// that quantising it again gives the same row and scale), if it has one.
    pub(crate) fn vector(&self, local: usize) -> Option<Embedding> {
        if !self.has(local) {
            return None;
        }
        let row = &self.rows[local * self.dimensions..(local + 1) * self.dimensions];
        let scale = self.scales[local];
        Some(Embedding::kept(
            row.iter().map(|&q| f32::from(q) * scale).collect(),
        ))
    }

    /// The approximate cosine of the tool at `local` with a query row quantised with
    /// `query_scale`.
    pub(crate) fn cosine(&self, local: usize, query_row: &[i8], query_scale: f32) -> f32 {
        let row = &self.rows[local * self.dimensions..(local + 1) * self.dimensions];
        embed::dot_quantized(query_row, row) as f32 * query_scale * self.scales[local]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::ToolDoc;
    use crate::embed::Embedder;
    use crate::index::{Index, embedding_texts};
    use crate::search::Query;

    /// A stand-in for a sentence model that knows what a few words mean: rain and umbrellas
    /// are weather, documents are files. Enough to tell a meaning match from a word match.
    struct Meanings;

    impl Embedder for Meanings {
        fn dimensions(&self) -> usize {
            3
        }

        fn embed(&self, text: &str) -> Embedding {
            let text = text.to_lowercase();
            let has = |words: &[&str]| words.iter().any(|word| text.contains(word)) as u8 as f32;
            Embedding::normalized(vec![
                has(&["weather", "umbrella", "rain", "forecast"]),
                has(&["file", "document"]),
                0.1,
            ])
        }

        fn semantic_share(&self) -> f32 {
            0.65
        }
    }

    fn doc(name: &str, description: &str) -> ToolDoc {
        ToolDoc {
            name: name.to_owned(),
            description: description.to_owned(),
            ..ToolDoc::default()
        }
    }

    fn catalog() -> Vec<(String, Vec<ToolDoc>)> {
        vec![
            (
                "sky".to_owned(),
                vec![doc("get_forecast", "Tomorrow's weather for a city")],
            ),
            (
                "disk".to_owned(),
                vec![
                    doc("read_file", "Read a file from disk"),
                    doc("need_umbrella_hint", "Says whether you need it"),
                ],
            ),
        ]
    }

    /// `index` with every server's vectors attached, embedded from `embedding_texts`.
    fn embedded(index: &Index) -> Index {
        catalog()
            .iter()
            .fold(index.clone(), |index, (server, docs)| {
                let vectors: Vec<Embedding> = Meanings.embed_batch(
                    &embedding_texts(docs)
                        .iter()
                        .map(String::as_str)
                        .collect::<Vec<_>>(),
                );
                let refs: Vec<Option<&Embedding>> = vectors.iter().map(Some).collect();
                index
                    .with_model_vectors(server, &refs)
                    .expect("same tool count")
            })
    }

    #[test]
    fn without_vectors_a_model_index_ranks_like_the_hashing_one_and_says_pending() {
        let plain = Index::new().with_servers(catalog());
        let with_model = plain.with_model(Arc::new(Meanings));
        let query_vector = Meanings.embed("will it rain tomorrow");
        let pending = with_model
            .search(&Query {
                model_query: Some(&query_vector),
                ..Query::new("will it rain tomorrow")
            })
            .unwrap();
        let hashing = plain.search(&Query::new("will it rain tomorrow")).unwrap();
        assert_eq!(pending.semantic, SemanticRanking::Pending);
        assert_eq!(hashing.semantic, SemanticRanking::Hashing);
        assert_eq!(pending.hits, hashing.hits);
        assert_eq!(with_model.model_coverage(), (0, 3));
    }

    #[test]
    fn with_every_vector_the_model_ranks_and_finds_meaning_without_shared_words() {
        let index = embedded(
            &Index::new()
                .with_servers(catalog())
                .with_model(Arc::new(Meanings)),
        );
        assert_eq!(index.model_coverage(), (3, 3));
        let query_vector = Meanings.embed("do I need an umbrella");
        let outcome = index
            .search(&Query {
                model_query: Some(&query_vector),
                ..Query::new("is rain coming")
            })
            .unwrap();
        assert_eq!(outcome.semantic, SemanticRanking::Model);
        let tools: Vec<&str> = outcome.hits.iter().map(|hit| hit.tool.as_str()).collect();
        assert!(tools.contains(&"get_forecast"), "{tools:?}");
        assert!(!tools.contains(&"read_file"), "{tools:?}");
        // Without the query's model vector, the model cannot rank.
        let without = index.search(&Query::new("is rain coming")).unwrap();
        assert_eq!(without.semantic, SemanticRanking::Pending);
    }

    #[test]
    fn a_replaced_server_loses_its_vectors_and_the_index_waits_for_them_again() {
        let index = embedded(
            &Index::new()
                .with_servers(catalog())
                .with_model(Arc::new(Meanings)),
        );
        let changed = index.with_server("sky", vec![doc("get_forecast", "Weather"), doc("x", "y")]);
        assert_eq!(changed.model_coverage(), (2, 4));
        let query_vector = Meanings.embed("forecast");
        let query = Query {
            model_query: Some(&query_vector),
            ..Query::new("forecast")
        };
        assert_eq!(
            changed.search(&query).unwrap().semantic,
            SemanticRanking::Pending
        );
        // A search limited to the server whose vectors are all there is ranked by the model.
        let disk = ["disk".to_owned()];
        let limited = Query {
            servers: &disk,
            ..query
        };
        assert_eq!(
            changed.search(&limited).unwrap().semantic,
            SemanticRanking::Model
        );
        // Vectors of a catalog of another length are refused, not attached to the wrong tools.
        let one = Meanings.embed("x");
        assert!(changed.with_model_vectors("sky", &[Some(&one)]).is_none());
        assert!(
            changed
                .with_model_vectors("nobody", &[Some(&one)])
                .is_none()
        );
        assert!(changed.without_server("disk").model_coverage() == (0, 2));
    }

    #[test]
    fn a_kept_vector_carried_to_a_rebuilt_shard_ranks_exactly_as_before() {
        let index = embedded(
            &Index::new()
                .with_servers(catalog())
                .with_model(Arc::new(Meanings)),
        );
        let query_vector = Meanings.embed("do I need an umbrella");
        let query = Query {
            model_query: Some(&query_vector),
            ..Query::new("is rain coming")
        };
        let before = index.search(&query).unwrap();
        // The same tools again (a `list_changed` that changed nothing), their kept vectors
        // carried over: the model still ranks, with the same scores.
        let (_, disk) = &catalog()[1];
        let rebuilt = index.with_server("disk", disk.clone());
        assert_eq!(rebuilt.model_coverage(), (1, 3));
        let carried: Vec<Option<Embedding>> = (0..disk.len())
            .map(|local| index.model_vector("disk", local))
            .collect();
        assert!(carried.iter().all(Option::is_some));
        let refs: Vec<Option<&Embedding>> = carried.iter().map(Option::as_ref).collect();
        let rebuilt = rebuilt.with_model_vectors("disk", &refs).unwrap();
        let after = rebuilt.search(&query).unwrap();
        assert_eq!(after.semantic, SemanticRanking::Model);
        assert_eq!(after.hits, before.hits);
        assert!(index.model_vector("disk", 7).is_none());
        assert!(index.model_vector("nobody", 0).is_none());
    }

    #[test]
    fn a_vector_of_another_dimension_counts_as_missing() {
        let index = Index::new()
            .with_servers(catalog())
            .with_model(Arc::new(Meanings));
        let wrong = Embedding::normalized(vec![1.0; 5]);
        let index = index.with_model_vectors("sky", &[Some(&wrong)]).unwrap();
        assert_eq!(index.model_coverage(), (0, 3));
    }

    /// `Meanings` whose share grows to 0.9 when no tool matches a word of the request.
    struct MeaningsMoreWhenUnmatched;

    impl Embedder for MeaningsMoreWhenUnmatched {
        fn dimensions(&self) -> usize {
            3
        }

        fn embed(&self, text: &str) -> Embedding {
            Meanings.embed(text)
        }

        fn semantic_share(&self) -> f32 {
            0.5
        }

        fn semantic_share_unmatched(&self) -> f32 {
            0.9
        }
    }

    #[test]
    fn the_models_share_grows_with_the_words_of_the_request_no_tool_matches() {
        let model: Arc<dyn Embedder> = Arc::new(MeaningsMoreWhenUnmatched);
        let mut index = Index::new().with_servers(catalog()).with_model(model);
        for (server, docs) in catalog() {
            let vectors: Vec<Embedding> = embedding_texts(&docs)
                .iter()
                .map(|text| MeaningsMoreWhenUnmatched.embed(text))
                .collect();
            let refs: Vec<Option<&Embedding>> = vectors.iter().map(Some).collect();
            index = index.with_model_vectors(&server, &refs).unwrap();
        }
        let hit = |text: &str| {
            let vector = MeaningsMoreWhenUnmatched.embed_query(text);
            let outcome = index
                .search(&Query {
                    model_query: Some(&vector),
                    // The first stage's score alone: the rerank stage's correction is another
                    // test's subject.
                    signals: crate::search::Signals {
                        rerank: false,
                        ..crate::search::Signals::ALL
                    },
                    ..Query::new(text)
                })
                .unwrap();
            assert_eq!(outcome.semantic, SemanticRanking::Model);
            outcome
                .hits
                .into_iter()
                .find(|hit| hit.tool == "get_forecast")
                .expect("found")
        };
        // No word of "rainy?" is a word of any tool (nor a synonym of one): the cosine counts 0.9.
        let unmatched = hit("rainy?");
        assert_eq!(unmatched.why.lexical, 0.0);
        assert!((unmatched.score - 0.9 * unmatched.why.semantic).abs() < 1e-3);
        // "weather" is a word of the best tool, the whole request: the cosine counts 0.5 (the
        // lexical half is the best score, 1).
        let matched = hit("weather");
        assert!(matched.why.lexical > 0.0);
        assert!(
            (matched.score - (0.5 + 0.5 * matched.why.semantic)).abs() < 1e-3,
            "{matched:?}"
        );
    }

    #[test]
    fn wire_names_are_stable() {
        assert_eq!(SemanticRanking::Model.as_str(), "model");
        assert_eq!(SemanticRanking::Pending.as_str(), "pending");
        assert_eq!(SemanticRanking::Hashing.as_str(), "hashing");
    }
}
