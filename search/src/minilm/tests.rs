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
        assert_eq!(alone.dimensions(), HIDDEN);
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

    // A valid file with a tensor of the wrong shape.
    let header = br#"{"encoder.layer.0.attention.self.query.weight":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}"#;
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header);
    bytes.extend_from_slice(&[0u8; 16]);
    let error = MiniLmEmbedder::from_bytes(&bytes, vocabulary)
        .err()
        .expect("refused");
    assert!(
        error
            .to_string()
            .contains("encoder.layer.0.attention.self.query.weight is missing or is not F32 of shape [384, 384]"),
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
