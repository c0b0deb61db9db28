//! The tests that load the weights need them installed (`bash scripts/install-minilm.sh`, or
//! `TOOL_CLI_MINILM_DIR` naming a directory that holds them); like the module, they build only
//! with `--features minilm`. The model is loaded once per test process.

use std::sync::OnceLock;

use super::*;
use crate::embed::cosine;

fn model_dir() -> std::path::PathBuf {
    std::env::var_os("TOOL_CLI_MINILM_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/minilm")
        })
}

fn files() -> &'static (Vec<u8>, String) {
    static FILES: OnceLock<(Vec<u8>, String)> = OnceLock::new();
    FILES.get_or_init(|| {
        let dir = model_dir();
        let weights = std::fs::read(dir.join("model.safetensors")).unwrap_or_else(|error| {
            panic!(
                "cannot read {}/model.safetensors ({error}): run scripts/install-minilm.sh or set TOOL_CLI_MINILM_DIR",
                dir.display()
            )
        });
        let vocabulary = std::fs::read_to_string(dir.join("vocab.txt")).expect("vocab.txt");
        (weights, vocabulary)
    })
}

fn model() -> &'static MiniLmEmbedder {
    static MODEL: OnceLock<MiniLmEmbedder> = OnceLock::new();
    MODEL.get_or_init(|| {
        let (weights, vocabulary) = files();
        MiniLmEmbedder::from_bytes(weights, vocabulary).expect("valid weights")
    })
}

#[test]
fn tokenization_follows_bert_uncased_wordpiece() {
    let model = model();
    let tokens: Vec<&str> = model
        .tokenizer
        .tokenize("Hello, Wörld! embeddings", 64)
        .into_iter()
        .map(|id| model.tokenizer.token(id).expect("a known id"))
        .collect();
    assert_eq!(
        tokens,
        [
            "[CLS]", "hello", ",", "world", "!", "em", "##bed", "##ding", "##s", "[SEP]"
        ]
    );
    // Truncation keeps [SEP] last, also when it stops inside a word's pieces.
    let long = model
        .tokenizer
        .tokenize(&"word ".repeat(500), DEFAULT_MAX_TOKENS);
    assert_eq!(long.len(), DEFAULT_MAX_TOKENS);
    assert_eq!(long.last(), Some(&model.tokenizer.separator));
    let cut = model.tokenizer.tokenize("Hello, Wörld! embeddings", 7);
    assert_eq!(cut.len(), 7);
    assert_eq!(
        model.tokenizer.token(cut[5]),
        Some("em"),
        "the first six tokens of the full tokenization, then [SEP]"
    );
    assert_eq!(model.tokenizer.token(cut[6]), Some("[SEP]"));
}

#[test]
fn paraphrases_are_close_and_unrelated_sentences_far() {
    // sentence-transformers gives 0.755 and 0.247 for these pairs with this model.
    let model = model();
    let vectors = model.embed_batch(&[
        "A man is eating food.",
        "A man is eating a piece of bread.",
        "A man is riding a horse.",
    ]);
    let close = cosine(&vectors[0], &vectors[1]);
    let far = cosine(&vectors[0], &vectors[2]);
    assert!(
        (close - 0.755).abs() < 0.005 && (far - 0.247).abs() < 0.005,
        "close {close}, far {far}"
    );
}

#[test]
fn a_batch_gives_the_vectors_one_by_one_gives() {
    let model = model();
    let long_description = "Lists the secrets of an Azure Key Vault, with their names, versions \
        and expiry dates; supports paging. "
        .repeat(40);
    let mut texts: Vec<String> = vec![
        "read a file".to_owned(),
        String::new(),
        "   ".to_owned(),
        "will I need an umbrella in Paris this weekend?".to_owned(),
        "keyvault_secret_list keyvault_secret_list List secrets vault subscription".to_owned(),
        "Прочитать содержимое файла".to_owned(),
        "東京の天気を教えて".to_owned(),
        "🚀 deploy the app 🚀".to_owned(),
        "x".to_owned(),
        long_description,
    ];
    // Enough texts of varied lengths for several chunks spread over threads.
    for i in 0..16 {
        texts.push(format!(
            "tool_{i} Gets item {i} of the catalog {}",
            "with more words ".repeat(i % 9)
        ));
    }
    let borrowed: Vec<&str> = texts.iter().map(String::as_str).collect();
    let batch = model.embed_batch(&borrowed);
    assert_eq!(batch.len(), texts.len());
    for (text, batched) in texts.iter().zip(&batch) {
        let alone = model.embed(text);
        assert_eq!(alone.dimensions(), 384);
        let largest = alone
            .values()
            .iter()
            .zip(batched.values())
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(largest <= 1e-5, "{text:?}: differs by {largest}");
    }
    // On one thread (`with_batch_threads(1)`): one pass after another, the same vectors.
    let one_thread = model.embed_on(&borrowed, 1);
    for ((text, a), b) in texts.iter().zip(&one_thread).zip(&batch) {
        let largest = a
            .values()
            .iter()
            .zip(b.values())
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(
            largest <= 1e-5,
            "{text:?} on one thread: differs by {largest}"
        );
    }
    // Blank texts are the zero vector, the others unit length.
    assert!(batch[1].values().iter().all(|v| *v == 0.0));
    assert!(batch[2].values().iter().all(|v| *v == 0.0));
    let norm = batch[0].values().iter().map(|v| v * v).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-5, "norm {norm}");
    assert!(model.embed_batch(&[]).is_empty());
}

#[test]
fn the_fingerprint_follows_the_weights_and_the_token_limit() {
    let (weights, vocabulary) = files();
    let model = model();
    let again = weights::hash_words(
        weights::hash_words(weights::HASH_START, weights),
        vocabulary.as_bytes(),
    );
    assert_eq!(again, model.files_hash, "the same bytes, the same hash");
    // One weight's lowest bit changed, deep inside the data (a fine-tuned copy differs more).
    let mut changed = weights.clone();
    let middle = changed.len() / 2;
    changed[middle] ^= 1;
    let changed = weights::hash_words(
        weights::hash_words(weights::HASH_START, &changed),
        vocabulary.as_bytes(),
    );
    assert_ne!(changed, model.files_hash);
    let fingerprint = model.fingerprint();
    assert_eq!(fingerprint, model.fingerprint());
    let (weights, vocabulary) = files();
    let shorter = MiniLmEmbedder::from_bytes(weights, vocabulary)
        .expect("valid weights")
        .with_max_tokens(32);
    assert_eq!(shorter.max_tokens(), 32);
    assert_ne!(shorter.fingerprint(), fingerprint);
    // Another pooling or a query prefix is another way of running the same weights.
    let cls = MiniLmEmbedder::from_bytes_pooled(weights, vocabulary, Pooling::Cls).unwrap();
    assert_ne!(cls.fingerprint(), fingerprint);
    let prefixed = MiniLmEmbedder::from_bytes(weights, vocabulary)
        .unwrap()
        .with_query_prefix("query: ");
    assert_ne!(prefixed.fingerprint(), fingerprint);
}

#[test]
fn bad_model_files_are_refused_with_what_was_expected() {
    let vocabulary = "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n";
    let error = MiniLmEmbedder::from_bytes(b"abc", vocabulary)
        .err()
        .expect("three bytes are no model");
    assert!(
        error.to_string().contains("not a valid safetensors file"),
        "{error}"
    );

    // A header length that runs past the end.
    let mut bytes = 1_000u64.to_le_bytes().to_vec();
    bytes.extend_from_slice(b"{}");
    let error = MiniLmEmbedder::from_bytes(&bytes, vocabulary)
        .err()
        .expect("refused");
    assert!(
        error.to_string().contains("header runs past the end"),
        "{error}"
    );

    // A valid file with a tensor of the wrong shape and no word table: the table, which says
    // how wide the model is, is what is missing first.
    let header = br#"{"encoder.layer.0.attention.self.query.weight":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}"#;
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header);
    bytes.extend_from_slice(&[0u8; 16]);
    let error = MiniLmEmbedder::from_bytes(&bytes, vocabulary)
        .err()
        .expect("refused");
    assert!(
        error.to_string().contains(
            "embeddings.word_embeddings.weight is missing or is not F32 of shape [5, 384]"
        ),
        "{error}"
    );

    let error = MiniLmEmbedder::from_bytes(&bytes, "hello\nworld\n")
        .err()
        .expect("refused");
    assert!(
        error.to_string().contains("lacks [CLS], [SEP] or [UNK]"),
        "{error}"
    );
}

/// A small BERT of the encoder's width with random weights, as `model.safetensors` bytes:
/// `layers` layers, tensor names under `root` (`""` or `"bert."`), `vocabulary` rows. It
/// computes nothing meaningful; it is what the loader must accept or refuse whatever the
/// weights say, without the 90 MB of the real model.
fn synthetic_weights(layers: usize, root: &str, vocabulary: usize) -> Vec<u8> {
    use super::encoder::{HIDDEN, INTERMEDIATE, MAX_POSITIONS};
    let mut tensors: Vec<(String, Vec<usize>)> = vec![
        (
            format!("{root}embeddings.word_embeddings.weight"),
            vec![vocabulary, HIDDEN],
        ),
        (
            format!("{root}embeddings.position_embeddings.weight"),
            vec![MAX_POSITIONS, HIDDEN],
        ),
        (
            format!("{root}embeddings.token_type_embeddings.weight"),
            vec![2, HIDDEN],
        ),
        (format!("{root}embeddings.LayerNorm.weight"), vec![HIDDEN]),
        (format!("{root}embeddings.LayerNorm.bias"), vec![HIDDEN]),
    ];
    for layer in 0..layers {
        let prefix = format!("{root}encoder.layer.{layer}");
        for part in ["query", "key", "value"] {
            let name = format!("{prefix}.attention.self.{part}");
            tensors.push((format!("{name}.weight"), vec![HIDDEN, HIDDEN]));
            tensors.push((format!("{name}.bias"), vec![HIDDEN]));
        }
        for (name, outputs, inputs) in [
            ("attention.output.dense", HIDDEN, HIDDEN),
            ("intermediate.dense", INTERMEDIATE, HIDDEN),
            ("output.dense", HIDDEN, INTERMEDIATE),
        ] {
            tensors.push((format!("{prefix}.{name}.weight"), vec![outputs, inputs]));
            tensors.push((format!("{prefix}.{name}.bias"), vec![outputs]));
        }
        for norm in ["attention.output.LayerNorm", "output.LayerNorm"] {
            tensors.push((format!("{prefix}.{norm}.weight"), vec![HIDDEN]));
            tensors.push((format!("{prefix}.{norm}.bias"), vec![HIDDEN]));
        }
    }
    safetensors_of(&tensors)
}

/// The `model.safetensors` bytes of `tensors` (name, shape), with small random values (layer
/// norms' scales 1).
fn safetensors_of(tensors: &[(String, Vec<usize>)]) -> Vec<u8> {
    let mut header = serde_json::Map::new();
    let mut data: Vec<u8> = Vec::new();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for (name, shape) in tensors {
        let count: usize = shape.iter().product();
        let start = data.len();
        let layer_norm_weight = name.ends_with("LayerNorm.weight");
        for _ in 0..count {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let value = if layer_norm_weight {
                1.0f32
            } else {
                ((seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.1
            };
            data.extend_from_slice(&value.to_le_bytes());
        }
        header.insert(
            name.clone(),
            serde_json::json!({"dtype": "F32", "shape": shape, "data_offsets": [start, data.len()]}),
        );
    }
    let header = serde_json::to_vec(&header).expect("a map");
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(&header);
    bytes.extend_from_slice(&data);
    bytes
}

/// The vocabulary of `synthetic_weights`: the special tokens and a few words.
const SYNTHETIC_VOCABULARY: &str =
    "[PAD]\n[UNK]\n[CLS]\n[SEP]\nread\na\nfile\nsend\nmail\n##s\nsearch\nrelevant\n:\n";

#[test]
fn a_bert_of_the_same_width_with_other_layers_pooling_and_prefix_loads() {
    let tokens = SYNTHETIC_VOCABULARY.lines().count();
    // Two layers under `bert.`, as a checkpoint saved from a BERT model names them.
    let weights = synthetic_weights(2, "bert.", tokens);
    let mean = MiniLmEmbedder::from_bytes(&weights, SYNTHETIC_VOCABULARY).expect("loads");
    assert_eq!(mean.layers(), 2);
    let cls = MiniLmEmbedder::from_bytes_pooled(&weights, SYNTHETIC_VOCABULARY, Pooling::Cls)
        .expect("loads")
        .with_query_prefix("search relevant: ");
    let text = "read a file";
    let by_mean = mean.embed(text);
    let by_cls = cls.embed(text);
    assert_eq!(by_cls.dimensions(), 384);
    assert!(
        cosine(&by_mean, &by_cls) < 0.999,
        "the [CLS] row is not the mean of the rows"
    );
    // The prefix is for requests only: a tool's text (embed, embed_batch) is embedded as is.
    assert_eq!(cls.embed_batch(&[text])[0], by_cls);
    let query = cls.embed_query(text);
    assert_ne!(query, by_cls);
    assert_eq!(query, cls.embed(&format!("search relevant: {text}")));
    assert_eq!(mean.embed_query(text), by_mean);
    // 10,000 identical words: the tokenizer stops at the token limit, so the model's cost is
    // that of any 48-token text, and the vector that of the words it kept.
    let flood = vec!["read"; 10_000].join(" ");
    assert_eq!(mean.token_count(&flood), DEFAULT_MAX_TOKENS);
    let kept = vec!["read"; DEFAULT_MAX_TOKENS - 2].join(" ");
    assert_eq!(mean.embed(&flood), mean.embed(&kept));
}

#[test]
fn a_truncated_or_mismatched_model_is_refused_with_what_was_expected() {
    let tokens = SYNTHETIC_VOCABULARY.lines().count();
    let weights = synthetic_weights(1, "", tokens);
    // Cut in the middle of the data: the header names ranges past the end.
    let truncated = &weights[..weights.len() / 2];
    let error = MiniLmEmbedder::from_bytes(truncated, SYNTHETIC_VOCABULARY)
        .err()
        .expect("a truncated file is no model");
    assert!(
        error.to_string().contains("the file is truncated"),
        "{error}"
    );
    // Cut inside the header.
    let error = MiniLmEmbedder::from_bytes(&weights[..40], SYNTHETIC_VOCABULARY)
        .err()
        .expect("refused");
    assert!(
        error.to_string().contains("header runs past the end"),
        "{error}"
    );
    // Another model's vocabulary: more tokens than the weights have rows.
    let other = format!("{SYNTHETIC_VOCABULARY}extra\nwords\n");
    let error = MiniLmEmbedder::from_bytes(&weights, &other)
        .err()
        .expect("refused");
    assert_eq!(
        error.to_string(),
        format!(
            "vocab.txt has {} tokens but the weights embed {tokens}; expected the vocab.txt that came with model.safetensors",
            tokens + 2
        )
    );
    // Weights with no encoder layer at all.
    let no_layers = synthetic_weights(0, "", tokens);
    let error = MiniLmEmbedder::from_bytes(&no_layers, SYNTHETIC_VOCABULARY)
        .err()
        .expect("refused");
    assert!(
        error
            .to_string()
            .contains("encoder.layer.0.attention.self.query.weight is missing"),
        "{error}"
    );
}

/// A small MPNet with random weights, named as all-mpnet-base-v2's are (`attention.attn.q`,
/// `encoder.relative_attention_bias`, 514 positions, no token types), `width` wide with `heads`
/// heads and `layers` layers, for the vocabulary `MPNET_VOCABULARY`.
fn synthetic_mpnet(layers: usize, width: usize, heads: usize) -> Vec<u8> {
    use super::encoder::{MAX_POSITIONS, RELATIVE_BUCKETS};
    let vocabulary = MPNET_VOCABULARY.lines().count();
    let mut tensors: Vec<(String, Vec<usize>)> = vec![
        (
            "embeddings.word_embeddings.weight".to_owned(),
            vec![vocabulary, width],
        ),
        (
            "embeddings.position_embeddings.weight".to_owned(),
            vec![MAX_POSITIONS + 2, width],
        ),
        ("embeddings.LayerNorm.weight".to_owned(), vec![width]),
        ("embeddings.LayerNorm.bias".to_owned(), vec![width]),
        (
            "encoder.relative_attention_bias.weight".to_owned(),
            vec![RELATIVE_BUCKETS, heads],
        ),
    ];
    for layer in 0..layers {
        let prefix = format!("encoder.layer.{layer}");
        for (name, outputs, inputs) in [
            ("attention.attn.q", width, width),
            ("attention.attn.k", width, width),
            ("attention.attn.v", width, width),
            ("attention.attn.o", width, width),
            ("intermediate.dense", 4 * width, width),
            ("output.dense", width, 4 * width),
        ] {
            tensors.push((format!("{prefix}.{name}.weight"), vec![outputs, inputs]));
            tensors.push((format!("{prefix}.{name}.bias"), vec![outputs]));
        }
        for norm in ["attention.LayerNorm", "output.LayerNorm"] {
            tensors.push((format!("{prefix}.{norm}.weight"), vec![width]));
            tensors.push((format!("{prefix}.{norm}.bias"), vec![width]));
        }
    }
    safetensors_of(&tensors)
}

/// MPNet's vocabulary opens with its own markers; `[CLS]` and `[SEP]` are there too, untrained.
const MPNET_VOCABULARY: &str =
    "<s>\n<pad>\n</s>\n<unk>\n[UNK]\n[CLS]\n[SEP]\nread\na\nfile\nsend\nmail\n##s\n";

#[test]
fn relative_positions_fall_in_t5_buckets_as_mpnet_computes_them() {
    use super::encoder::relative_position_bucket;
    // (key, query) → bucket: keys before the query (and the query itself) in 0..16, keys after
    // it in 16..32; exact below a distance of 8, then logarithmic up to 128.
    for (key, query, bucket) in [
        (0, 0, 0),
        (0, 1, 1),
        (1, 0, 17),
        (0, 7, 7),
        (7, 0, 23),
        (0, 8, 8),
        (0, 11, 8),
        (0, 12, 9),
        (0, 16, 10),
        (0, 32, 12),
        (64, 0, 30),
        (0, 90, 14),
        (0, 91, 15),
        (0, 500, 15),
        (500, 0, 31),
    ] {
        assert_eq!(
            relative_position_bucket(key, query),
            bucket,
            "key {key}, query {query}"
        );
    }
    // The logarithm in double precision, away from its whole-number steps, agrees everywhere.
    for distance in 8..600usize {
        let logarithmic = 8.0 + ((distance as f64 / 8.0).ln() / 16f64.ln() * 8.0).floor();
        let expected = (logarithmic as usize).min(15);
        assert_eq!(
            relative_position_bucket(0, distance),
            expected,
            "{distance}"
        );
        assert_eq!(
            relative_position_bucket(distance, 0),
            16 + expected,
            "{distance}"
        );
    }
}

#[test]
fn an_mpnet_of_any_width_loads_with_its_own_markers_and_positions() {
    let weights = synthetic_mpnet(2, 64, 4);
    let model = MiniLmEmbedder::from_bytes(&weights, MPNET_VOCABULARY).expect("loads");
    assert_eq!(model.layers(), 2);
    assert_eq!(model.dimensions(), 64);
    // `<s> read a file </s>`: MPNet's markers, not the untrained `[CLS]` and `[SEP]`.
    assert_eq!(
        model.tokenizer.tokenize("read a file", 48),
        vec![0, 7, 8, 9, 2]
    );
    let texts = ["read a file", "send mails", "file a read", "read"];
    let batch = model.embed_batch(&texts);
    for (text, batched) in texts.iter().zip(&batch) {
        assert_eq!(batched.dimensions(), 64);
        let alone = model.embed(text);
        assert!(cosine(&alone, batched) > 0.99999, "{text}");
    }
    // The same words in another order: positions and the relative bias tell them apart.
    assert!(cosine(&batch[0], &batch[2]) < 0.99999);
    // The longest text fits the 512 positions after MPNet's first two.
    let flood = vec!["read"; 1_000].join(" ");
    let long = model.with_max_tokens(512);
    assert_eq!(long.token_count(&flood), 512);
    assert_eq!(long.embed(&flood).dimensions(), 64);
}

#[test]
fn an_mpnet_whose_bias_or_width_does_not_fit_is_refused() {
    // Five heads do not divide 64 units.
    let weights = synthetic_mpnet(1, 64, 5);
    let error = MiniLmEmbedder::from_bytes(&weights, MPNET_VOCABULARY)
        .err()
        .expect("refused");
    assert!(
        error
            .to_string()
            .contains("embeddings.word_embeddings.weight is missing or is not F32"),
        "{error}"
    );
    // Truncated inside its data.
    let weights = synthetic_mpnet(1, 64, 4);
    let error = MiniLmEmbedder::from_bytes(&weights[..weights.len() - 100], MPNET_VOCABULARY)
        .err()
        .expect("refused");
    assert!(
        error.to_string().contains("the file is truncated"),
        "{error}"
    );
    // Another vocabulary: another number of rows.
    let other = format!("{MPNET_VOCABULARY}extra\n");
    let error = MiniLmEmbedder::from_bytes(&weights, &other)
        .err()
        .expect("refused");
    assert!(
        error
            .to_string()
            .starts_with("vocab.txt has 14 tokens but the weights embed 13"),
        "{error}"
    );
}

/// all-mpnet-base-v2's directory: `TOOL_CLI_MPNET_DIR`, else the checkout's `target/mpnet`
/// (where `scripts/install-peers.sh` installs it with `scripts/install-mpnet.sh`).
fn mpnet_dir() -> std::path::PathBuf {
    std::env::var_os("TOOL_CLI_MPNET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/mpnet"))
}

#[test]
fn all_mpnet_base_v2_gives_the_vectors_of_a_reference_implementation() {
    let dir = mpnet_dir();
    let weights = std::fs::read(dir.join("model.safetensors")).unwrap_or_else(|error| {
        panic!(
            "cannot read {}/model.safetensors ({error}): run scripts/install-mpnet.sh target/mpnet or set TOOL_CLI_MPNET_DIR",
            dir.display()
        )
    });
    let vocabulary = std::fs::read_to_string(dir.join("vocab.txt")).expect("vocab.txt");
    let model = MiniLmEmbedder::from_bytes(&weights, &vocabulary).expect("loads");
    assert_eq!((model.layers(), model.dimensions()), (12, 768));
    let texts = [
        "A man is eating food.",
        "A man is eating a piece of bread.",
        "A man is riding a horse.",
    ];
    // The ids Hugging Face's tokenizer gives (`tokenizer.json` of the model).
    assert_eq!(
        model.tokenizer.tokenize(texts[1], 48),
        vec![0, 1041, 2162, 2007, 5987, 1041, 3542, 2001, 7856, 1016, 2]
    );
    let vectors = model.embed_batch(&texts);
    // A NumPy transcription of Hugging Face's MPNet (positions from 2, T5 buckets, ε 1e-5) with
    // sentence-transformers' mean pooling gives these for the same weights (docs/search.md).
    let opening = [0.035_500_81f32, -0.008_431_66, 0.022_024_11, 0.016_262_65];
    for (got, want) in vectors[0].values().iter().zip(opening) {
        assert!((got - want).abs() < 1e-4, "{got} against {want}");
    }
    let close = cosine(&vectors[0], &vectors[1]);
    let far = cosine(&vectors[0], &vectors[2]);
    assert!(
        (close - 0.6601).abs() < 0.001 && (far - 0.2464).abs() < 0.001,
        "close {close}, far {far}"
    );
}
