//! A task cut into tokens for the data rule: words (lowercased, with their written form, a
//! capital and a possessive noted), numbers as written (`$1,250.50`, `15%`, `#42`), quoted text,
//! ISO dates and months, and the comparison symbols. Contractions are opened up, because they
//! carry meaning: "haven't" is "have not", "we'll" is "we will". Every token keeps its byte span
//! in the task, so that a part the planner cannot place is named as written. Pure.

/// What a token is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    /// Letters and digits (`a5`, `27`, `usb`).
    Word,
    /// A number as written; `money` when a currency sign led it, `percent` when `%` followed,
    /// `hash` when `#` led it (`#42`).
    Number {
        value: f64,
        money: bool,
        percent: bool,
        hash: bool,
    },
    /// Text in quotes.
    Quoted(String),
    /// An ISO date (`2025-03-01`) or month (`2025-03`).
    Date(String),
    /// `<`, `>`, `<=`, `>=`, `=`, `&`, `+`, `*`, `/`.
    Symbol(String),
}

/// One token.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    pub(crate) kind: Kind,
    /// As written.
    pub(crate) text: String,
    /// Lowercase (for a number, the digits as written without separators).
    pub(crate) lower: String,
    /// Byte span in the task.
    pub(crate) start: usize,
    pub(crate) end: usize,
    /// Written with a capital and not at the start of a sentence (a name, likely).
    pub(crate) capital: bool,
    /// Followed by `'s` or `’s` (or an apostrophe after an `s`).
    pub(crate) possessive: bool,
    /// The first token of a sentence.
    pub(crate) sentence_start: bool,
}

impl Token {
    /// Whether this is a word equal to `word`.
    pub(crate) fn is(&self, word: &str) -> bool {
        self.kind == Kind::Word && self.lower == word
    }

    pub(crate) fn is_word(&self) -> bool {
        self.kind == Kind::Word
    }

    /// The number, when the token is one.
    pub(crate) fn number(&self) -> Option<f64> {
        match self.kind {
            Kind::Number { value, .. } => Some(value),
            _ => None,
        }
    }
}

/// Words a contraction opens into.
fn contraction(suffix: &str) -> Option<&'static str> {
    match suffix {
        "n't" => Some("not"),
        "'ll" => Some("will"),
        "'re" => Some("are"),
        "'ve" => Some("have"),
        "'d" => Some("would"),
        "'m" => Some("am"),
        _ => None,
    }
}

/// Cuts the task into tokens.
pub(crate) fn tokens(task: &str) -> Vec<Token> {
    let chars: Vec<(usize, char)> = task.char_indices().collect();
    let end_of = |index: usize| chars.get(index).map_or(task.len(), |(at, _)| *at);
    let mut out: Vec<Token> = Vec::new();
    let mut index = 0;
    let mut sentence_start = true;
    while index < chars.len() {
        let (at, c) = chars[index];
        // Quoted text: "…", “…”, or '…' opened after a space (not an apostrophe).
        let closing = match c {
            '"' => Some('"'),
            '\u{201c}' => Some('\u{201d}'),
            '\'' | '\u{2018}'
                if index == 0
                    || chars[index - 1].1.is_whitespace()
                    || chars[index - 1].1 == '(' =>
            {
                Some(if c == '\'' { '\'' } else { '\u{2019}' })
            }
            _ => None,
        };
        if let Some(closing) = closing
            && let Some(offset) = chars[index + 1..].iter().position(|(_, d)| *d == closing)
        {
            let close = index + 1 + offset;
            let inner = task[end_of(index + 1)..chars[close].0].trim().to_owned();
            // A single quote must close before a non-letter ("'on hold'", not "'Ada's").
            let closes_cleanly = closing != '\''
                || chars
                    .get(close + 1)
                    .is_none_or(|(_, d)| !d.is_alphanumeric());
            if !inner.is_empty() && closes_cleanly {
                out.push(Token {
                    kind: Kind::Quoted(inner.clone()),
                    lower: inner.to_lowercase(),
                    text: inner,
                    start: at,
                    end: end_of(close + 1),
                    capital: false,
                    possessive: false,
                    sentence_start,
                });
                sentence_start = false;
                index = close + 1;
                continue;
            }
        }
        if matches!(c, '.' | '?' | '!' | ';' | ':')
            && !chars
                .get(index + 1)
                .is_some_and(|(_, d)| d.is_ascii_digit())
        {
            if matches!(c, '.' | '?' | '!') {
                sentence_start = true;
            }
            index += 1;
            continue;
        }
        if matches!(c, '<' | '>' | '=' | '&' | '+' | '*' | '/' | '×' | '÷' | '%') {
            let mut text = c.to_string();
            if matches!(c, '<' | '>') && chars.get(index + 1).is_some_and(|(_, d)| *d == '=') {
                text.push('=');
                index += 1;
            }
            out.push(Token {
                kind: Kind::Symbol(text.clone()),
                lower: text.clone(),
                text,
                start: at,
                end: end_of(index + 1),
                capital: false,
                possessive: false,
                sentence_start,
            });
            sentence_start = false;
            index += 1;
            continue;
        }
        // A number: an optional sign of money or `#`, digits with separators, an optional `%`.
        let money_sign = matches!(c, '$' | '€' | '£' | '¥' | '₹');
        let starts_number = c.is_ascii_digit()
            || ((money_sign || c == '#')
                && chars.get(index + 1).is_some_and(|(_, d)| {
                    d.is_ascii_digit()
                        || (*d == ' '
                            && chars
                                .get(index + 2)
                                .is_some_and(|(_, e)| e.is_ascii_digit()))
                }));
        if starts_number {
            let begin = index;
            let mut cursor = index;
            if !c.is_ascii_digit() {
                cursor += 1;
                while chars.get(cursor).is_some_and(|(_, d)| *d == ' ') {
                    cursor += 1;
                }
            }
            let digits_start = cursor;
            while chars.get(cursor).is_some_and(|(_, d)| {
                d.is_ascii_digit()
                    || (matches!(d, ',' | '.')
                        && chars
                            .get(cursor + 1)
                            .is_some_and(|(_, e)| e.is_ascii_digit()))
            }) {
                cursor += 1;
            }
            let written: String = chars[digits_start..cursor]
                .iter()
                .map(|(_, d)| *d)
                .collect();
            // An ISO date or month: 2025-03-01, 2025-03.
            if c.is_ascii_digit()
                && written.len() == 4
                && chars.get(cursor).is_some_and(|(_, d)| *d == '-')
            {
                let mut end = cursor;
                while chars
                    .get(end)
                    .is_some_and(|(_, d)| d.is_ascii_digit() || *d == '-')
                {
                    end += 1;
                }
                let text: String = chars[begin..end].iter().map(|(_, d)| *d).collect();
                let parts: Vec<&str> = text.split('-').collect();
                let iso = match parts.as_slice() {
                    [_, m] if m.len() == 2 => true,
                    [_, m, d] if m.len() == 2 && d.len() == 2 => true,
                    _ => false,
                };
                if iso {
                    out.push(Token {
                        kind: Kind::Date(text.clone()),
                        lower: text.clone(),
                        text,
                        start: at,
                        end: end_of(end),
                        capital: false,
                        possessive: false,
                        sentence_start,
                    });
                    sentence_start = false;
                    index = end;
                    continue;
                }
            }
            // Digits glued to letters (`A5`, `27th`, `2nd`) are a word.
            let suffixed = chars
                .get(cursor)
                .is_some_and(|(_, d)| matches!(d, 'k' | 'K' | 'm' | 'M'))
                && chars
                    .get(cursor + 1)
                    .is_none_or(|(_, d)| !d.is_alphanumeric());
            let glued = chars.get(cursor).is_some_and(|(_, d)| d.is_alphabetic()) && !suffixed;
            if !glued {
                let mut value: f64 = written.replace(',', "").parse().unwrap_or(0.0);
                let mut percent = false;
                let mut end = cursor;
                if chars.get(end).is_some_and(|(_, d)| *d == '%') {
                    percent = true;
                    end += 1;
                }
                // "1.5k", "2m".
                if !percent
                    && let Some((_, suffix)) = chars.get(end)
                    && matches!(suffix, 'k' | 'K' | 'm' | 'M')
                    && chars.get(end + 1).is_none_or(|(_, d)| !d.is_alphanumeric())
                {
                    value *= if matches!(suffix, 'k' | 'K') {
                        1e3
                    } else {
                        1e6
                    };
                    end += 1;
                }
                let text: String = chars[begin..end].iter().map(|(_, d)| *d).collect();
                out.push(Token {
                    kind: Kind::Number {
                        value,
                        money: money_sign,
                        percent,
                        hash: c == '#',
                    },
                    lower: written.replace(',', ""),
                    text,
                    start: at,
                    end: end_of(end),
                    capital: false,
                    possessive: false,
                    sentence_start,
                });
                sentence_start = false;
                index = end;
                continue;
            }
        }
        if c.is_alphanumeric() {
            let begin = index;
            let mut cursor = index;
            while chars.get(cursor).is_some_and(|(_, d)| d.is_alphanumeric()) {
                cursor += 1;
            }
            let text: String = chars[begin..cursor].iter().map(|(_, d)| *d).collect();
            // An apostrophe after the word: a possessive or a contraction.
            let mut possessive = false;
            let mut opened: Option<&'static str> = None;
            let mut end = cursor;
            if let Some((_, apostrophe)) = chars.get(cursor)
                && matches!(apostrophe, '\'' | '\u{2019}')
            {
                let rest: String = chars[cursor + 1..]
                    .iter()
                    .take_while(|(_, d)| d.is_alphabetic())
                    .map(|(_, d)| d.to_ascii_lowercase())
                    .collect();
                if rest == "s" {
                    possessive = true;
                    end = cursor + 2;
                } else if rest.is_empty() && text.to_lowercase().ends_with('s') {
                    possessive = true;
                    end = cursor + 1;
                } else if rest == "t" && text.to_lowercase().ends_with('n') {
                    opened = Some("not");
                    end = cursor + 2;
                } else if let Some(word) = contraction(&format!("'{rest}")) {
                    opened = Some(word);
                    end = cursor + 1 + rest.chars().count();
                }
            }
            // "don't", "haven't", "won't": the word before n't, then "not".
            let mut word_text = text.clone();
            let mut negated = false;
            if opened == Some("not") {
                negated = true;
                if let Some(stem) = word_text.strip_suffix(['n', 'N']) {
                    word_text = stem.to_owned();
                }
                word_text = match word_text.to_lowercase().as_str() {
                    "wo" => "will".to_owned(),
                    "ca" => "can".to_owned(),
                    "sha" => "shall".to_owned(),
                    _ => word_text,
                };
            }
            let lower = word_text.to_lowercase();
            let capital = text.chars().next().is_some_and(char::is_uppercase)
                && (text.chars().skip(1).any(char::is_lowercase) || text.chars().count() == 1)
                && !sentence_start;
            out.push(Token {
                kind: Kind::Word,
                lower,
                text: word_text,
                start: at,
                end: end_of(if opened.is_some() && !negated {
                    cursor
                } else {
                    end
                }),
                capital,
                possessive,
                sentence_start,
            });
            sentence_start = false;
            if let Some(word) = opened {
                out.push(Token {
                    kind: Kind::Word,
                    lower: word.to_owned(),
                    text: word.to_owned(),
                    start: end_of(cursor),
                    end: end_of(end),
                    capital: false,
                    possessive: false,
                    sentence_start: false,
                });
            }
            index = end;
            continue;
        }
        index += 1;
    }
    out
}

/// A written form a person would recognise: the task's own text from the first token to the
/// last.
pub(crate) fn said(task: &str, tokens: &[Token]) -> String {
    match (tokens.first(), tokens.last()) {
        (Some(first), Some(last)) => task[first.start..last.end].trim().to_owned(),
        _ => String::new(),
    }
}

/// The tokens' written forms joined by spaces ("Ada Okafro").
pub(crate) fn said_words(tokens: &[Token]) -> String {
    tokens
        .iter()
        .map(|t| t.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The words of a value as the tokenizer would cut them, lowercased (`Chef's Knife` →
/// `chef knife`, `Home & Kitchen` → `home & kitchen`).
pub(crate) fn value_words(value: &str) -> Vec<String> {
    tokens(value).into_iter().map(|t| t.lower).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lowers(task: &str) -> Vec<String> {
        tokens(task).into_iter().map(|t| t.lower).collect()
    }

    #[test]
    fn words_numbers_and_contractions() {
        assert_eq!(
            lowers("Who hasn't ordered? We'll see; what's Ada's e-mail"),
            [
                "who", "has", "not", "ordered", "we", "will", "see", "what", "ada", "e", "mail"
            ]
        );
        let found = tokens("over $1,250.50 or 15% of #42 and 1.5k");
        let numbers: Vec<_> = found.iter().filter_map(Token::number).collect();
        assert_eq!(numbers, [1250.5, 15.0, 42.0, 1500.0]);
        assert!(matches!(found[1].kind, Kind::Number { money: true, .. }));
        assert!(matches!(found[3].kind, Kind::Number { percent: true, .. }));
        assert!(matches!(found[5].kind, Kind::Number { hash: true, .. }));
    }

    #[test]
    fn quotes_dates_names_and_glued_digits() {
        let found = tokens("Orders with status 'on hold' since 2025-03-01 for Ada Okafor's A5");
        assert_eq!(found[3].kind, Kind::Quoted("on hold".into()));
        assert_eq!(found[5].kind, Kind::Date("2025-03-01".into()));
        let ada = found.iter().find(|t| t.lower == "ada").unwrap();
        assert!(ada.capital);
        let okafor = found.iter().find(|t| t.lower == "okafor").unwrap();
        assert!(okafor.possessive);
        assert!(found.iter().any(|t| t.lower == "a5" && t.is_word()));
        assert!(!found[0].capital, "the first word of a sentence is no name");
        assert_eq!(value_words("Chef's Knife"), ["chef", "knife"]);
        assert_eq!(value_words("Home & Kitchen"), ["home", "&", "kitchen"]);
        assert_eq!(
            value_words("Noise-Cancelling Headphones"),
            ["noise", "cancelling", "headphones"]
        );
    }

    #[test]
    fn an_apostrophe_inside_a_name_is_no_quote() {
        let found = tokens("What's Chef's Knife's price in 'Home & Kitchen'?");
        assert!(
            found
                .iter()
                .any(|t| t.kind == Kind::Quoted("Home & Kitchen".into()))
        );
        let task = "customer \"x'; DROP TABLE orders; --\"";
        let found = tokens(task);
        assert_eq!(
            found[1].kind,
            Kind::Quoted("x'; DROP TABLE orders; --".into())
        );
        assert_eq!(said(task, &found[1..]), "\"x'; DROP TABLE orders; --\"");
    }
}
