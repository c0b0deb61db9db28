//! Text analysis shared by the index, the query and the default embedder: splitting identifiers
//! and prose into words, case and diacritic folding, stop words, and a light English stemmer.
//!
//! Tool catalogs mix prose ("Read the complete contents of a file") with identifiers
//! (`read_text_file`, `getFileInfo`, `list-directory`, `v2.repos.get`), so every text goes
//! through the same splitter: separators are anything that is not a letter or a digit, and an
//! identifier is further split at camel-case humps. CJK runs have no spaces, so they become
//! overlapping character bigrams. The stemmer is deliberately light (plurals, `-ing`, `-ed`,
//! `-tion`, a final `e`): an aggressive stemmer conflates too much in short tool descriptions, and
//! the concept table (`concepts.rs`) covers the derivations that matter (`notification` / `notify`).

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use rustc_hash::FxHashMap;

/// Words that carry no meaning for tool retrieval, in documents and queries alike. Standard
/// English function words plus the request phrasing users wrap around a task ("please", "I want",
/// "could you").
#[rustfmt::skip]
const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at",
    "be", "been", "before", "being", "both", "but", "by", "can", "could", "did", "do", "does",
    "doing", "done", "during", "each", "either", "etc", "for", "from", "further", "had", "has",
    "have", "having", "he", "her", "here", "hers", "him", "his", "how", "i", "if", "in", "into",
    "is", "it", "its", "itself", "just", "let", "lets", "like", "may", "me", "might", "mine",
    "more", "most", "must", "my", "myself", "need", "needs", "no", "nor", "not", "now", "of", "off",
    "on", "once", "one", "only", "or", "other", "our", "ours", "out", "over", "own", "please",
    "quite", "rather", "really", "s", "same", "shall", "she", "should", "so", "some", "such",
    "than", "that", "the", "their", "theirs", "them", "then", "there", "these", "they", "this",
    "those", "through", "to", "too", "under", "until", "up", "upon", "us", "very", "via", "want",
    "wanna", "was", "way", "we", "were", "what", "whatever", "when", "where", "whether", "which",
    "while", "who", "whom", "whose", "why", "will", "with", "within", "without", "would", "you",
    "your", "yours", "yourself", "hey", "hi", "thanks", "thank", "kindly", "somebody", "someone",
    "something", "anything", "everything", "thing", "things", "stuff", "gonna", "able", "going",
    "go", "got", "give", "gimme", "know", "tell", "whats", "im", "ive", "id", "dont", "using",
    "use", "used", "uses", "e", "g", "ie", "eg",
];

/// Whether `word` (already folded) is a stop word.
pub(crate) fn is_stop_word(word: &str) -> bool {
    // Every word of every indexed text is checked, so this is a hash lookup, not a scan.
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| STOP_WORDS.iter().copied().collect())
        .contains(word)
}

/// Folds one character for matching: lowercase, and Latin letters with diacritics to their base
/// letter (`é` → `e`, `ß` → `ss` is left alone: one character in, one character out).
fn fold_char(c: char) -> char {
    let lower = if c.is_ascii() {
        c.to_ascii_lowercase()
    } else {
        c.to_lowercase().next().unwrap_or(c)
    };
    match lower {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'ā' | 'ă' | 'ą' => 'a',
        'ç' | 'ć' | 'č' => 'c',
        'ď' | 'đ' => 'd',
        'è' | 'é' | 'ê' | 'ë' | 'ē' | 'ė' | 'ę' | 'ě' => 'e',
        'ì' | 'í' | 'î' | 'ï' | 'ī' | 'į' | 'ı' => 'i',
        'ñ' | 'ń' | 'ň' => 'n',
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'ō' | 'ő' => 'o',
        'ù' | 'ú' | 'û' | 'ü' | 'ū' | 'ů' | 'ű' | 'ų' => 'u',
        'ý' | 'ÿ' => 'y',
        'ś' | 'š' | 'ş' => 's',
        'ź' | 'ż' | 'ž' => 'z',
        'ł' => 'l',
        'ř' => 'r',
        'ť' | 'ţ' => 't',
        other => other,
    }
}

/// Folds one character the way BERT's uncased tokenizer does (lowercase, Latin accents off).
pub(crate) fn fold_for_model(c: char) -> char {
    fold_char(c)
}

/// Whether `c` belongs to a script written without spaces between words, where we index
/// character bigrams instead of words.
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF     // Hiragana, Katakana
        | 0x3400..=0x4DBF   // CJK Extension A
        | 0x4E00..=0x9FFF   // CJK Unified Ideographs
        | 0xAC00..=0xD7AF   // Hangul syllables
        | 0xF900..=0xFAFF) // CJK compatibility ideographs
}

/// One analysed word: the folded surface form and whether it came from a CJK run (CJK bigrams
/// are never stemmed nor stop-listed).
pub(crate) struct Word<'a> {
    pub(crate) folded: &'a str,
    pub(crate) cjk: bool,
}

/// Splits `text` into folded words and calls `emit` for each, in order.
///
/// A chunk of letters and digits is one word; a chunk with camel-case humps (`getFileInfo`,
/// `HTTPServer`) is emitted whole and then as its parts, so both `github` and `git hub` match
/// `GitHub`. A chunk that mixes letters and digits (`s3`, `base64`, `utf8`) is kept whole, and
/// its leading letters are emitted too when they are a word of three letters or more (`base`).
pub(crate) fn split_words(text: &str, emit: impl FnMut(Word<'_>)) {
    // Almost all tool text is ASCII; its fast path works on bytes and allocates nothing per word.
    if text.is_ascii() {
        split_ascii_words(text.as_bytes(), emit);
    } else {
        split_unicode_words(text, emit);
    }
}

fn split_ascii_words(text: &[u8], mut emit: impl FnMut(Word<'_>)) {
    // Words are lowercased into a stack buffer: no allocation per call or per word. Longer
    // words (rare: hashes, base64) are cut to its size.
    let mut buffer = [0u8; 64];
    let mut start = 0;
    while start < text.len() {
        if !text[start].is_ascii_alphanumeric() {
            start += 1;
            continue;
        }
        let mut end = start;
        while end < text.len() && text[end].is_ascii_alphanumeric() {
            end += 1;
        }
        let chunk = &text[start..end.min(start + buffer.len())];
        start = end;
        let mut emit_range = |range: std::ops::Range<usize>| {
            let folded = &mut buffer[..range.len()];
            folded.copy_from_slice(&chunk[range]);
            folded.make_ascii_lowercase();
            // ASCII alphanumerics only, so always valid UTF-8.
            if let Ok(folded) = std::str::from_utf8(folded) {
                emit(Word { folded, cjk: false });
            }
        };
        emit_range(0..chunk.len());
        // The same humps and digit rule as `flush_chunk`, on bytes.
        let mut humps = 0;
        let mut previous_start = 0;
        for i in 1..chunk.len() {
            let (previous, current) = (chunk[i - 1], chunk[i]);
            let next_is_lower = chunk.get(i + 1).is_some_and(u8::is_ascii_lowercase)
                && !(i + 2 == chunk.len() && chunk[i + 1] == b's');
            if current.is_ascii_uppercase()
                && (previous.is_ascii_lowercase()
                    || (previous.is_ascii_uppercase() && next_is_lower))
            {
                emit_range(previous_start..i);
                previous_start = i;
                humps += 1;
            }
        }
        if humps > 0 {
            emit_range(previous_start..chunk.len());
        } else if chunk.iter().any(u8::is_ascii_digit) && chunk[0].is_ascii_alphabetic() {
            let letters = chunk.iter().take_while(|c| c.is_ascii_alphabetic()).count();
            if letters >= 3 {
                emit_range(0..letters);
            }
        }
    }
}

fn split_unicode_words(text: &str, mut emit: impl FnMut(Word<'_>)) {
    let mut chunk: Vec<char> = Vec::with_capacity(32);
    let mut starts: Vec<usize> = Vec::with_capacity(8);
    let mut buffer = String::with_capacity(32);
    let mut cjk_run: Vec<char> = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if is_cjk(c) {
            flush_chunk(&mut chunk, &mut starts, &mut buffer, &mut emit);
            cjk_run.push(c);
            if chars.peek().is_none_or(|next| !is_cjk(*next)) {
                flush_cjk(&mut cjk_run, &mut buffer, &mut emit);
            }
        } else if c.is_alphanumeric() {
            chunk.push(c);
        } else {
            flush_chunk(&mut chunk, &mut starts, &mut buffer, &mut emit);
        }
    }
    flush_chunk(&mut chunk, &mut starts, &mut buffer, &mut emit);
}

fn flush_cjk(run: &mut Vec<char>, buffer: &mut String, emit: &mut impl FnMut(Word<'_>)) {
    if run.len() == 1 {
        buffer.clear();
        buffer.push(run[0]);
        emit(Word {
            folded: buffer,
            cjk: true,
        });
    }
    for pair in run.windows(2) {
        buffer.clear();
        buffer.extend(pair);
        emit(Word {
            folded: buffer,
            cjk: true,
        });
    }
    run.clear();
}

fn flush_chunk(
    chunk: &mut Vec<char>,
    starts: &mut Vec<usize>,
    buffer: &mut String,
    emit: &mut impl FnMut(Word<'_>),
) {
    if chunk.is_empty() {
        return;
    }
    buffer.clear();
    buffer.extend(chunk.iter().copied().map(fold_char));
    emit(Word {
        folded: buffer,
        cjk: false,
    });
    // Camel-case humps: a split before an uppercase letter that follows a lowercase one
    // (`getFile`), and before the last capital of a run followed by lowercase (`HTTPServer`).
    starts.clear();
    starts.push(0);
    for i in 1..chunk.len() {
        let (previous, current) = (chunk[i - 1], chunk[i]);
        // `PRs`, `IDs`, `URLs`: a plural `s` after an acronym is not a new word.
        let next_is_lower = chunk.get(i + 1).is_some_and(|n| n.is_lowercase())
            && !(i + 2 == chunk.len() && chunk[i + 1] == 's');
        if current.is_uppercase()
            && (previous.is_lowercase() || (previous.is_uppercase() && next_is_lower))
        {
            starts.push(i);
        }
    }
    if starts.len() > 1 {
        starts.push(chunk.len());
        for bounds in starts.windows(2) {
            buffer.clear();
            buffer.extend(chunk[bounds[0]..bounds[1]].iter().copied().map(fold_char));
            emit(Word {
                folded: buffer,
                cjk: false,
            });
        }
    } else if chunk.iter().any(char::is_ascii_digit) && chunk[0].is_alphabetic() {
        let letters = chunk.iter().take_while(|c| c.is_alphabetic()).count();
        if letters >= 3 {
            buffer.clear();
            buffer.extend(chunk[..letters].iter().copied().map(fold_char));
            emit(Word {
                folded: buffer,
                cjk: false,
            });
        }
    }
    chunk.clear();
}

/// Irregular forms the suffix rules cannot reach, mapped to the stem of their base form.
const IRREGULAR: &[(&str, &str)] = &[
    ("sent", "send"),
    ("wrote", "writ"),
    ("written", "writ"),
    ("made", "mak"),
    ("found", "find"),
    ("ran", "run"),
    ("bought", "buy"),
    ("sold", "sell"),
    ("took", "tak"),
    ("taken", "tak"),
    ("gave", "giv"),
    ("given", "giv"),
    ("children", "child"),
    ("people", "person"),
    ("men", "man"),
    ("women", "woman"),
    ("data", "data"),
    ("media", "media"),
    ("analyses", "analysis"),
    ("indices", "index"),
    ("indexes", "index"),
    ("used", "use"),
    ("uses", "use"),
    ("using", "use"),
    ("this", "this"),
    ("news", "news"),
    ("status", "status"),
    ("statuses", "status"),
    ("alias", "alias"),
    ("aliases", "alias"),
    ("address", "address"),
    ("addresses", "address"),
    ("process", "process"),
    ("processes", "process"),
    ("embedding", "embed"),
    ("embedded", "embed"),
    ("embeddings", "embed"),
];

fn is_vowel(c: u8) -> bool {
    matches!(c, b'a' | b'e' | b'i' | b'o' | b'u' | b'y')
}

fn has_vowel(word: &str) -> bool {
    word.bytes().any(is_vowel)
}

/// Light English stemmer for lowercase ASCII words; other words are returned unchanged.
///
/// Rules, in order: irregular forms; plurals (`-ies` → `y`, `-sses`/`-xes`/`-ches`/`-shes`/`-zes`
/// lose `es`, a final `s` after anything but `s`, `u`, `i`); `-ing` and `-ed` when a syllable
/// remains, undoubling a final double consonant (`running` → `run`); `-ation`/`-tion` → `t`
/// (`creation` → `creat`, matching `create`); a final `e` on words of four letters or more
/// (`create`, `created`, `creating` all become `creat`).
pub(crate) fn stem(word: &str, out: &mut String) {
    out.clear();
    if !word.is_ascii() || word.len() <= 2 || word.bytes().any(|b| b.is_ascii_digit()) {
        out.push_str(word);
        return;
    }
    static IRREGULAR_FORMS: OnceLock<HashMap<&'static str, &'static str>> = OnceLock::new();
    let irregular = IRREGULAR_FORMS.get_or_init(|| IRREGULAR.iter().copied().collect());
    if let Some(stemmed) = irregular.get(word) {
        out.push_str(stemmed);
        return;
    }
    let mut w = word;
    // Plurals and third person.
    let owned;
    if let Some(base) = w.strip_suffix("ies").filter(|b| b.len() >= 2) {
        owned = format!("{base}y");
        w = &owned;
    } else if w.ends_with("sses")
        || w.ends_with("xes")
        || w.ends_with("ches")
        || w.ends_with("shes")
        || w.ends_with("zzes")
    {
        w = &w[..w.len() - 2];
    } else if (w.len() >= 4 || (w.len() == 3 && !has_vowel(&w[..2])))
        && w.ends_with('s')
        && !w.ends_with("ss")
        && !w.ends_with("us")
        && !w.ends_with("is")
    {
        w = &w[..w.len() - 1];
    }
    // Verb suffixes: strip when what remains still has a vowel and three letters.
    let mut stripped_verb_suffix = false;
    for suffix in ["ing", "ed"] {
        if let Some(base) = w.strip_suffix(suffix)
            && base.len() >= 3
            && has_vowel(base)
            && !w.ends_with("eed")
        {
            w = base;
            stripped_verb_suffix = true;
            break;
        }
    }
    if stripped_verb_suffix {
        let bytes = w.as_bytes();
        let n = bytes.len();
        if n >= 4
            && bytes[n - 1] == bytes[n - 2]
            && matches!(
                bytes[n - 1],
                b'b' | b'd' | b'g' | b'm' | b'n' | b'p' | b'r' | b't'
            )
        {
            w = &w[..n - 1];
        }
    }
    // `-ation` / `-tion` → `-at` / `-t`, so the noun meets its verb (`deletion` / `delete`).
    if let Some(base) = w.strip_suffix("ion")
        && base.ends_with('t')
        && base.len() >= 5
    {
        w = base;
    }
    if w.len() >= 4 && w.ends_with('e') {
        w = &w[..w.len() - 1];
    }
    out.push_str(w);
}

/// A term of the index: a stemmed word or a CJK bigram.
///
/// Calls `emit(term, is_stop_word)` for every term of `text`. Stop words are reported rather
/// than dropped: the query's action words include some (`which`, `what`).
pub(crate) fn analyze(text: &str, mut emit: impl FnMut(&str, bool)) {
    let mut term = String::with_capacity(32);
    split_words(text, |word| {
        if word.cjk {
            emit(word.folded, false);
            return;
        }
        let stop = analyze_word(word.folded, &mut term);
        emit(&term, stop);
    });
}

/// A word's term and whether it is a stop word.
type AnalysedWord = (Box<str>, bool);

/// The most words `analyze_word` remembers per thread; past it the memo starts over, so memory
/// stays bounded whatever is indexed.
const WORD_MEMO_CAPACITY: usize = 1 << 16;

thread_local! {
    /// Folded word → (term, is a stop word). Tool texts repeat a small vocabulary (Zipf), so
    /// most words of a rebuild are analysed once and looked up after that.
    static WORD_MEMO: RefCell<FxHashMap<Box<str>, AnalysedWord>> =
        RefCell::new(FxHashMap::default());
}

/// Writes the term of the folded word `folded` into `term` and returns whether it is a stop word.
pub(crate) fn analyze_word(folded: &str, term: &mut String) -> bool {
    let known = WORD_MEMO.with_borrow(|memo| {
        memo.get(folded).map(|(stemmed, stop)| {
            term.clear();
            term.push_str(stemmed);
            *stop
        })
    });
    if let Some(stop) = known {
        return stop;
    }
    let stop = is_stop_word(folded);
    stem(folded, term);
    WORD_MEMO.with_borrow_mut(|memo| {
        if memo.len() >= WORD_MEMO_CAPACITY {
            memo.clear();
        }
        memo.insert(folded.into(), (term.as_str().into(), stop));
    });
    stop
}

/// Collects the terms of `text` that are not stop words.
#[cfg(test)]
pub(crate) fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    analyze(text, |term, stop| {
        if !stop {
            out.push(term.to_owned());
        }
    });
    out
}

/// The longest prefix of `text` of at most `max_bytes` bytes that ends on a character boundary.
pub(crate) fn truncate_at_char_boundary(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stemmed(word: &str) -> String {
        let mut out = String::new();
        stem(word, &mut out);
        out
    }

    #[test]
    fn identifiers_split_on_snake_camel_kebab_dots_and_keep_digit_words() {
        assert_eq!(terms("read_text_file"), ["read", "text", "fil"]);
        assert_eq!(terms("getFileInfo"), ["getfileinfo", "get", "fil", "info"]);
        assert_eq!(terms("HTTPServer"), ["httpserver", "http", "server"]);
        assert_eq!(terms("list-directory"), ["list", "directory"]);
        assert_eq!(terms("v2.repos.get"), ["v2", "repo", "get"]);
        assert_eq!(terms("s3 base64"), ["s3", "base64", "bas"]);
        assert_eq!(terms("open PRs and VMs"), ["open", "pr", "vm"]);
    }

    #[test]
    fn inflections_meet_their_base_form() {
        for (a, b) in [
            ("files", "file"),
            ("creating", "create"),
            ("created", "create"),
            ("creation", "create"),
            ("deletion", "delete"),
            ("queries", "query"),
            ("branches", "branch"),
            ("running", "run"),
            ("setting", "set"),
            ("messages", "message"),
            ("sent", "send"),
            ("caches", "cache"),
        ] {
            assert_eq!(stemmed(a), stemmed(b), "{a} vs {b}");
        }
        // Words a naive stemmer would mangle stay whole.
        for word in ["status", "string", "analysis", "address", "news", "need"] {
            assert_eq!(stemmed(word), word.trim_end_matches('e'));
        }
    }

    #[test]
    fn case_and_diacritics_fold_and_stop_words_are_reported() {
        assert_eq!(terms("Résumé CAFÉ"), ["resum", "caf"]);
        assert_eq!(terms("please show me the files"), ["show", "fil"]);
    }

    #[test]
    fn non_latin_scripts_become_words_or_bigrams() {
        assert_eq!(terms("файлы"), ["файлы"]);
        assert_eq!(terms("ملف"), ["ملف"]);
        assert_eq!(terms("读取文件"), ["读取", "取文", "文件"]);
        assert_eq!(terms("天"), ["天"]);
        assert!(terms("🚀 ✨").is_empty());
    }

    #[test]
    fn the_ascii_fast_path_splits_like_the_unicode_path() {
        let collect = |ascii: bool, text: &str| {
            let mut words = Vec::new();
            let push = |w: Word<'_>| words.push(w.folded.to_owned());
            if ascii {
                split_ascii_words(text.as_bytes(), push);
            } else {
                split_unicode_words(text, push);
            }
            words
        };
        for text in [
            "getFileInfo HTTPServer read_text_file v2.repos.get s3 base64 utf8Decode",
            "  __x__ A aB Ab ABc URLsForIDs 123abc abc123def ",
        ] {
            assert_eq!(collect(true, text), collect(false, text), "{text}");
        }
    }

    #[test]
    fn truncation_respects_character_boundaries() {
        assert_eq!(truncate_at_char_boundary("héllo", 2), "h");
        assert_eq!(truncate_at_char_boundary("abc", 10), "abc");
    }
}
