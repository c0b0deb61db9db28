//! BERT's uncased WordPiece tokenizer, as all-MiniLM-L6-v2 was trained with: lowercase, strip
//! Latin accents, split on whitespace and punctuation (each CJK character a word), then greedy
//! longest-match pieces from `vocab.txt`, with `[CLS]` first and `[SEP]` last. The model
//! (`minilm/`, feature `minilm`) and the static token embeddings distilled from it
//! (`static_embed.rs`, always built) read text through it.
//!
//! It stops as soon as the text has `max_tokens` tokens: a tool's description may be 8 KiB, and
//! only its opening is ever embedded.

use std::collections::HashMap;

/// A word longer than this (in characters) is `[UNK]`, as in BERT.
const MAX_WORD_CHARACTERS: usize = 100;

pub(crate) struct Tokenizer {
    vocabulary: HashMap<String, u32>,
    /// The longest entry of the vocabulary, in characters (without a `##`): no piece is longer,
    /// so the longest-match search starts there instead of at the end of a long word.
    longest_piece: usize,
    pub(crate) classification: u32,
    pub(crate) separator: u32,
    pub(crate) unknown: u32,
}

impl Tokenizer {
    /// The tokenizer of `vocab.txt` (one token a line, the line number its id); `None` when the
    /// special tokens are missing.
    pub(crate) fn new(vocabulary: &str) -> Option<Tokenizer> {
        let vocabulary: HashMap<String, u32> = vocabulary
            .lines()
            .enumerate()
            .map(|(id, token)| (token.to_owned(), id as u32))
            .collect();
        let special = |token: &str| vocabulary.get(token).copied();
        let mpnet = special("<s>") == Some(0);
        let longest_piece = vocabulary
            .keys()
            .map(|token| token.strip_prefix("##").unwrap_or(token).chars().count())
            .max()
            .unwrap_or(1);
        Some(Tokenizer {
            // BERT's markers, or MPNet's when its vocabulary opens with them (its `<s>` is id 0;
            // it also lists `[CLS]` and `[SEP]`, which the model was never trained with).
            classification: special(if mpnet { "<s>" } else { "[CLS]" })?,
            separator: special(if mpnet { "</s>" } else { "[SEP]" })?,
            unknown: special("[UNK]")?,
            longest_piece,
            vocabulary,
        })
    }

    /// The id of `token`, if the vocabulary has it.
    pub(crate) fn id(&self, token: &str) -> Option<u32> {
        self.vocabulary.get(token).copied()
    }

    /// The number of entries (rows of the word embedding table).
    pub(crate) fn len(&self) -> usize {
        self.vocabulary.len()
    }

    /// Every entry of the vocabulary, by id (what a distillation embeds one by one).
    #[cfg(feature = "minilm")]
    pub(crate) fn tokens_by_id(&self) -> Vec<String> {
        let mut tokens = vec![String::new(); self.vocabulary.len()];
        for (token, &id) in &self.vocabulary {
            if let Some(slot) = tokens.get_mut(id as usize) {
                slot.clone_from(token);
            }
        }
        tokens
    }

    /// The token of `id`, for tests.
    #[cfg(all(test, feature = "minilm"))]
    pub(crate) fn token(&self, id: u32) -> Option<&str> {
        self.vocabulary
            .iter()
            .find(|(_, v)| **v == id)
            .map(|(k, _)| k.as_str())
    }

    /// The ids of `text`: `[CLS]`, at most `max_tokens − 2` pieces, `[SEP]`.
    #[cfg(feature = "minilm")]
    pub(crate) fn tokenize(&self, text: &str, max_tokens: usize) -> Vec<u32> {
        let limit = max_tokens.max(2) - 1;
        let mut ids = vec![self.classification];
        self.for_each_word(text, |word| {
            self.word_pieces(word, &mut String::new(), &mut ids);
            ids.len() < limit
        });
        ids.truncate(limit);
        ids.push(self.separator);
        ids
    }

    /// Calls `visit` with each word of `text` as BERT's basic tokenizer splits it (folded
    /// characters: a run of letters and digits, or one punctuation or CJK character) until it
    /// returns false.
    pub(crate) fn for_each_word(&self, text: &str, mut visit: impl FnMut(&[char]) -> bool) {
        let mut word: Vec<char> = Vec::new();
        for c in text.chars() {
            let folded = crate::text::fold_for_model(c);
            if folded.is_alphanumeric() && !crate::text::is_cjk(folded) {
                word.push(folded);
                continue;
            }
            if !word.is_empty() {
                if !visit(&word) {
                    return;
                }
                word.clear();
            }
            let separator = folded.is_whitespace() || folded.is_control();
            if !separator && !visit(&[folded]) {
                return;
            }
        }
        if !word.is_empty() {
            visit(&word);
        }
    }

    /// The pieces of one word (`[UNK]` when it cannot be split), appended to `ids`.
    pub(crate) fn pieces_of(&self, word: &[char], ids: &mut Vec<u32>) {
        self.word_pieces(word, &mut String::new(), ids);
    }

    /// Appends the pieces of one word to `ids` (or `[UNK]` when it cannot be split).
    fn word_pieces(&self, characters: &[char], piece: &mut String, ids: &mut Vec<u32>) {
        if characters.len() > MAX_WORD_CHARACTERS {
            ids.push(self.unknown);
            return;
        }
        let first = ids.len();
        let mut start = 0;
        while start < characters.len() {
            let mut end = characters.len().min(start + self.longest_piece);
            let mut found = None;
            while end > start {
                piece.clear();
                if start > 0 {
                    piece.push_str("##");
                }
                piece.extend(&characters[start..end]);
                if let Some(&id) = self.vocabulary.get(piece.as_str()) {
                    found = Some(id);
                    break;
                }
                end -= 1;
            }
            match found {
                Some(id) => ids.push(id),
                None => {
                    ids.truncate(first);
                    ids.push(self.unknown);
                    return;
                }
            }
            start = end;
        }
    }
}
