//! Plain BM25, the baseline the ranking is measured against: one text per tool (its name and
//! description), lowercased and split on anything that is not a letter or digit, no stemming, no
//! stop words, k1 = 1.2, b = 0.75. It is the textbook formula an external benchmark runs, kept
//! deliberately naive so "ours vs BM25" compares against what everyone else would start from.

use std::collections::HashMap;

/// k1 of the textbook formula.
const K1: f32 = 1.2;
/// b of the textbook formula.
const B: f32 = 0.75;

/// A plain BM25 index over (id, text) pairs.
#[derive(Debug, Default)]
pub struct PlainBm25 {
    lengths: Vec<f32>,
    average_length: f32,
    postings: HashMap<String, Vec<(u32, f32)>>,
}

fn tokens(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
}

impl PlainBm25 {
    /// Indexes `texts`; a hit's id is the text's position.
    pub fn new<'a>(texts: impl IntoIterator<Item = &'a str>) -> PlainBm25 {
        let mut index = PlainBm25::default();
        for (id, text) in texts.into_iter().enumerate() {
            let id = u32::try_from(id).expect("fewer than 2^32 documents");
            let mut counts: HashMap<String, f32> = HashMap::new();
            let mut length = 0.0;
            for token in tokens(text) {
                *counts.entry(token).or_default() += 1.0;
                length += 1.0;
            }
            for (token, count) in counts {
                index.postings.entry(token).or_default().push((id, count));
            }
            index.lengths.push(length);
        }
        let documents = index.lengths.len().max(1) as f32;
        index.average_length = index.lengths.iter().sum::<f32>() / documents;
        index
    }

    /// The ids of the best `limit` documents for `query`, best first (ties by id).
    pub fn search(&self, query: &str, limit: usize) -> Vec<usize> {
        let documents = self.lengths.len() as f32;
        let mut scores = vec![0.0f32; self.lengths.len()];
        let mut seen: Vec<String> = Vec::new();
        for token in tokens(query) {
            if seen.contains(&token) {
                continue;
            }
            let Some(postings) = self.postings.get(&token) else {
                seen.push(token);
                continue;
            };
            let frequency = postings.len() as f32;
            let idf = (1.0 + (documents - frequency + 0.5) / (frequency + 0.5)).ln();
            for &(id, count) in postings {
                let relative = self.lengths[id as usize] / self.average_length.max(f32::EPSILON);
                scores[id as usize] +=
                    idf * count * (K1 + 1.0) / (count + K1 * (1.0 - B + B * relative));
            }
            seen.push(token);
        }
        let mut ranked: Vec<usize> = (0..scores.len()).filter(|&i| scores[i] > 0.0).collect();
        ranked.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
        ranked.truncate(limit);
        ranked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_by_textbook_bm25() {
        let index = PlainBm25::new([
            "read_file read a file",
            "get_weather weather of a city",
            "write_file write a file",
        ]);
        assert_eq!(index.search("weather", 10), [1]);
        assert_eq!(index.search("read file", 10)[0], 0);
        assert!(index.search("nothing matches", 10).is_empty());
    }
}
