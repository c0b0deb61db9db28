//! A table made here from a toy vocabulary: what a text embeds to, and every way a table can be
//! refused.

use super::*;

fn vocabulary() -> Vec<String> {
    [
        "[PAD]", "[UNK]", "[CLS]", "[SEP]", "rain", "umbrella", "file", "read", "##s", "the",
    ]
    .iter()
    .map(|t| (*t).to_owned())
    .collect()
}

/// Rain and umbrellas share a direction, files and reading another; `the` is nearly nothing.
fn vectors() -> Vec<Vec<f32>> {
    vec![
        vec![0.0, 0.0, 0.0],
        vec![0.0, 0.0, 9.0],
        vec![0.0, 0.0, 9.0],
        vec![0.0, 0.0, 9.0],
        vec![1.0, 0.1, 0.0],
        vec![0.9, 0.0, 0.1],
        vec![0.0, 1.0, 0.0],
        vec![0.1, 0.8, 0.0],
        vec![0.0, 0.0, 0.05],
        vec![0.01, 0.01, 0.0],
    ]
}

fn table() -> Vec<u8> {
    StaticEmbedder::table_bytes(&vocabulary(), &vectors())
}

#[test]
fn a_text_is_the_normalised_mean_of_its_tokens_and_meanings_meet() {
    let embedder = StaticEmbedder::from_bytes(&table()).expect("a valid table");
    assert_eq!(embedder.dimensions(), 3);
    assert_eq!(embedder.tokens(), 10);
    let rain = embedder.embed("the rain");
    let umbrella = embedder.embed("Umbrellas");
    let files = embedder.embed("read the files");
    assert!(crate::embed::cosine(&rain, &umbrella) > 0.9);
    assert!(crate::embed::cosine(&rain, &files) < 0.2);
    // [CLS], [SEP] and unknown words add nothing: an unknown word alone is the zero vector.
    assert!(embedder.embed("zzz").values().iter().all(|v| *v == 0.0));
    assert_eq!(embedder.embed("rain zzz"), embedder.embed("rain"));
}

#[test]
fn a_table_that_is_not_one_truncated_or_of_another_vocabulary_is_refused() {
    let bytes = table();
    assert_eq!(
        StaticEmbedder::from_bytes(b"not a table at all").err(),
        Some(StaticTableError::Format { found: 0 })
    );
    let mut other_version = bytes.clone();
    other_version[8] = 9;
    assert_eq!(
        StaticEmbedder::from_bytes(&other_version).err(),
        Some(StaticTableError::Format { found: 9 })
    );
    let cut = &bytes[..bytes.len() - 1];
    assert!(matches!(
        StaticEmbedder::from_bytes(cut),
        Err(StaticTableError::Truncated { expected, .. }) if expected == bytes.len()
    ));
    assert!(matches!(
        StaticEmbedder::from_bytes(&bytes[..10]),
        Err(StaticTableError::Truncated { .. })
    ));
    // A vocabulary without [CLS] cannot be BERT's.
    let mut no_specials = vocabulary();
    no_specials[2] = "cls".to_owned();
    let refused =
        StaticEmbedder::from_bytes(&StaticEmbedder::table_bytes(&no_specials, &vectors()));
    assert!(matches!(refused, Err(StaticTableError::Vocabulary { .. })));
    // A token listed twice: ids are no longer line numbers.
    let mut twice = vocabulary();
    twice[9] = "rain".to_owned();
    let refused = StaticEmbedder::from_bytes(&StaticEmbedder::table_bytes(&twice, &vectors()));
    assert!(matches!(refused, Err(StaticTableError::Vocabulary { .. })));
    let message = StaticTableError::Truncated {
        bytes: 10,
        expected: 99,
    }
    .to_string();
    assert_eq!(
        message,
        "the table is truncated: 10 bytes, 99 expected from its header"
    );
}

#[test]
fn distillation_reduces_centres_and_weights_rare_tokens_more() {
    // Twelve outputs in four dimensions, the variance mostly along the first two; the first and
    // the last (the most and the least frequent by rank) are the same vector.
    let mut outputs: Vec<(String, Vec<f32>)> = (0..12)
        .map(|i| {
            let x = i as f32;
            (
                format!("t{i}"),
                vec![x, 2.0 * x + (i % 3) as f32, 0.01 * (i % 2) as f32, 1.0],
            )
        })
        .collect();
    outputs[11].1 = outputs[0].1.clone();
    outputs.push(("[unused0]".to_owned(), vec![5.0; 4]));
    let reduced = distilled_vectors(&outputs, 2, 0.1);
    assert_eq!(reduced.len(), 13);
    assert!(reduced.iter().all(|v| v.len() == 2));
    assert!(
        reduced[12].iter().all(|v| *v == 0.0),
        "[unusedN] rows are zero"
    );
    // The same outputs give the same table.
    assert_eq!(reduced, distilled_vectors(&outputs, 2, 0.1));
    // The rarer of two equal outputs weighs more, in the same direction.
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!(norm(&reduced[11]) > 1.2 * norm(&reduced[0]));
    let cosine = reduced[0]
        .iter()
        .zip(&reduced[11])
        .map(|(a, b)| a * b)
        .sum::<f32>()
        / norm(&reduced[0])
        / norm(&reduced[11]);
    assert!(cosine > 0.999);
    // Centred: the first and the fifth row lie on either side of the mean along the first
    // component.
    assert!(reduced[1][0] * reduced[8][0] < 0.0);
}

#[test]
fn the_built_in_table_reads_and_puts_paraphrases_closer_than_unrelated_requests() {
    let table = built_in();
    assert_eq!((table.tokens(), table.dimensions()), (30_522, 128));
    let close = |a: &str, b: &str| crate::embed::cosine(&table.embed(a), &table.embed(b));
    let rain = "will I need an umbrella tomorrow";
    assert!(close(rain, "weather forecast") > close(rain, "delete a file") + 0.1);
    let save = "store this note for later";
    assert!(close(save, "save a memo") > close(save, "convert currency"));
    // Stop words and punctuation alone embed to nothing.
    assert!(
        table
            .embed("who are you?")
            .values()
            .iter()
            .all(|v| *v == 0.0)
    );
    // The default embedder is this table, with its share.
    assert_eq!(BuiltInEmbedder.dimensions(), 128);
    assert_eq!(
        (
            BuiltInEmbedder.semantic_share(),
            BuiltInEmbedder.semantic_share_unmatched()
        ),
        BUILT_IN_SHARE
    );
}
