//! Counting tokens, for the gateway's budgets (a `tools/list` of meta-tools ≤ 1,000 tokens,
//! instructions ≤ 400, a search answer's top 8 ≤ 700).
//!
//! Two counters implement [`TokenCounter`]:
//! - [`Estimate`], always available and allocation-free: a character-class model calibrated
//!   against OpenAI's `o200k_base` so that it does not count fewer tokens than o200k on the
//!   kinds of text tool catalogs hold (English prose, JSON Schemas, snake/camel identifiers,
//!   hex and base64 strings, Cyrillic, CJK, emoji — `estimate_is_not_below_o200k` checks each).
//!   It is an estimate, not a bound: no cheap rule bounds a BPE tokenizer on every text, so
//!   budgets rendered with it keep a margin;
//! - `Bpe` (feature `tiktoken`): the real `o200k_base` or `cl100k_base` BPE of `tiktoken-rs`,
//!   for a daemon that wants exact counts (its vocabulary costs tens of MB of memory and about
//!   a second to load in a debug build, so it is not the default).
//!
//! Which tokenizer a figure used is always said next to it: Claude's tokenizer is not public,
//! so the figures in `docs/gateway.md` are o200k counts, with cl100k beside them.

/// Something that counts the tokens of a text.
pub trait TokenCounter {
    /// How many tokens `text` is.
    fn count(&self, text: &str) -> usize;

    /// The tokenizer's name, for reports (`estimate`, `o200k_base`, `cl100k_base`).
    fn name(&self) -> &'static str;
}

/// The built-in estimate (see the module documentation for what it is calibrated on).
#[derive(Debug, Clone, Copy, Default)]
pub struct Estimate;

/// What each character class costs, in hundredths of a token.
mod weight {
    /// One ASCII letter inside a word; a word costs at least [`WORD`].
    pub(super) const LETTER: u32 = 20;
    /// The least a word of letters costs: one token (short words are a token each).
    pub(super) const WORD: u32 = 100;
    /// A change between lower case, upper case and digits inside a word (`aB`, `a1`): random
    /// strings change class often and cost far more per character than words.
    pub(super) const CLASS_CHANGE: u32 = 75;
    /// A consonant that is the third or later in a row (`xqzv`): words rarely have them,
    /// random letters often, and random letters cost about half a token each.
    pub(super) const CONSONANT_CLUSTER: u32 = 75;
    /// One ASCII punctuation character.
    pub(super) const PUNCTUATION: u32 = 60;
    /// A run of whitespace other than one space (one space joins the next word's token).
    pub(super) const WHITESPACE_RUN: u32 = 100;
    /// A non-ASCII character of two UTF-8 bytes (Latin, Greek, Cyrillic, …).
    pub(super) const TWO_BYTE: u32 = 50;
    /// Three bytes (CJK, most symbols, joiners and selectors).
    pub(super) const THREE_BYTE: u32 = 100;
    /// Four bytes (emoji, rare CJK, tags).
    pub(super) const FOUR_BYTE: u32 = 250;
}

#[derive(Clone, Copy, PartialEq)]
enum WordClass {
    Lower,
    Upper,
    Digit,
}

/// The word being read: what its letters cost so far, its digits, its last class.
#[derive(Default)]
struct Word {
    letter_hundredths: u32,
    has_letters: bool,
    digits: u32,
    consonants_in_a_row: u32,
    previous_class: Option<WordClass>,
}

impl Word {
    /// What the word costs, and a fresh word.
    fn finish(&mut self) -> u64 {
        let mut cost = 0;
        if self.has_letters {
            cost += u64::from(self.letter_hundredths.max(weight::WORD));
        }
        // o200k splits a run of digits into groups of at most three.
        cost += u64::from(self.digits.div_ceil(3)) * 100;
        *self = Word::default();
        cost
    }

    fn push(&mut self, character: char, class: WordClass) {
        if let Some(previous) = self.previous_class
            && previous != class
            // `Word`: an upper-case letter starting a lower-case word is one token.
            && !(previous == WordClass::Upper && class == WordClass::Lower)
        {
            self.letter_hundredths += weight::CLASS_CHANGE;
        }
        self.previous_class = Some(class);
        if class == WordClass::Digit {
            self.digits += 1;
            self.consonants_in_a_row = 0;
            return;
        }
        self.has_letters = true;
        self.letter_hundredths += weight::LETTER;
        let vowel = matches!(
            character.to_ascii_lowercase(),
            'a' | 'e' | 'i' | 'o' | 'u' | 'y'
        );
        if vowel {
            self.consonants_in_a_row = 0;
        } else {
            self.consonants_in_a_row += 1;
            if self.consonants_in_a_row >= 3 {
                self.letter_hundredths += weight::CONSONANT_CLUSTER;
            }
        }
    }
}

impl TokenCounter for Estimate {
    fn count(&self, text: &str) -> usize {
        let mut hundredths: u64 = 0;
        let mut word = Word::default();
        let mut whitespace_run: u32 = 0;
        let mut whitespace_has_break = false;
        for character in text.chars() {
            if character.is_whitespace() {
                if character == '\n' || character == '\r' {
                    whitespace_has_break = true;
                }
                whitespace_run += 1;
                hundredths += word.finish();
                continue;
            }
            if whitespace_run > 1 || whitespace_has_break {
                hundredths += u64::from(weight::WHITESPACE_RUN);
            }
            whitespace_run = 0;
            whitespace_has_break = false;
            let class = if character.is_ascii_lowercase() {
                Some(WordClass::Lower)
            } else if character.is_ascii_uppercase() {
                Some(WordClass::Upper)
            } else if character.is_ascii_digit() {
                Some(WordClass::Digit)
            } else {
                None
            };
            match class {
                Some(class) => word.push(character, class),
                None => {
                    hundredths += word.finish();
                    hundredths += u64::from(match character.len_utf8() {
                        1 => weight::PUNCTUATION,
                        2 => weight::TWO_BYTE,
                        3 => weight::THREE_BYTE,
                        _ => weight::FOUR_BYTE,
                    });
                }
            }
        }
        hundredths += word.finish();
        if whitespace_run > 1 || whitespace_has_break {
            hundredths += u64::from(weight::WHITESPACE_RUN);
        }
        hundredths.div_ceil(100) as usize
    }

    fn name(&self) -> &'static str {
        "estimate"
    }
}

/// A real BPE tokenizer (`tiktoken-rs`).
#[cfg(feature = "tiktoken")]
pub struct Bpe {
    encoder: tiktoken_rs::CoreBPE,
    name: &'static str,
}

/// The tokenizer's bundled vocabulary could not be loaded.
#[cfg(feature = "tiktoken")]
#[derive(Debug, thiserror::Error)]
#[error("cannot load the {name} tokenizer: {reason}")]
pub struct BpeError {
    name: &'static str,
    reason: String,
}

#[cfg(feature = "tiktoken")]
impl Bpe {
    /// OpenAI's `o200k_base` (GPT-4o and later): the figures' tokenizer.
    pub fn o200k() -> Result<Bpe, BpeError> {
        tiktoken_rs::o200k_base()
            .map(|encoder| Bpe {
                encoder,
                name: "o200k_base",
            })
            .map_err(|error| BpeError {
                name: "o200k_base",
                reason: error.to_string(),
            })
    }

    /// OpenAI's `cl100k_base` (GPT-4, GPT-3.5).
    pub fn cl100k() -> Result<Bpe, BpeError> {
        tiktoken_rs::cl100k_base()
            .map(|encoder| Bpe {
                encoder,
                name: "cl100k_base",
            })
            .map_err(|error| BpeError {
                name: "cl100k_base",
                reason: error.to_string(),
            })
    }
}

#[cfg(feature = "tiktoken")]
impl TokenCounter for Bpe {
    fn count(&self, text: &str) -> usize {
        // Ordinary text: special tokens such as <|endoftext|> in a description are counted as
        // the text they are, as a model's API would count them.
        self.encoder.encode_ordinary(text).len()
    }

    fn name(&self) -> &'static str {
        self.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_counts_words_runs_and_symbols() {
        assert_eq!(Estimate.count(""), 0);
        assert_eq!(Estimate.count("a"), 1);
        assert_eq!(Estimate.count("1234567"), 3);
        // A random-looking string costs more than a word of the same length.
        assert!(Estimate.count("aB3xQ9zK") > Estimate.count("together"));
        assert!(Estimate.count("検索") >= 2);
        assert_eq!(Estimate.name(), "estimate");
    }

    #[cfg(feature = "tiktoken")]
    #[test]
    fn the_real_tokenizers_load_and_count() {
        let o200k = Bpe::o200k().unwrap();
        assert_eq!(o200k.name(), "o200k_base");
        assert_eq!(o200k.count("Hello world"), 2);
        let cl100k = Bpe::cl100k().unwrap();
        assert_eq!(cl100k.count("Hello world"), 2);
        // A special token's text in a description is ordinary text, several tokens.
        assert!(o200k.count("<|endoftext|>") > 1);
    }
}
