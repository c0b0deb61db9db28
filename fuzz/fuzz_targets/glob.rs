//! The policy's `glob_match` (`*` any run including `/`, `?` one character, everything else
//! literal) against a straightforward dynamic-programming matcher. They decide which tools a
//! scoped token or a config policy permits, so a disagreement is an access-control bug.

#![no_main]

use libfuzzer_sys::fuzz_target;
use tool_cli_daemon::policy::glob_match;

fn reference(pattern: &[char], text: &[char]) -> bool {
    // matches[j]: pattern[..i] matches text[..j], for the current i.
    let mut matches = vec![false; text.len() + 1];
    matches[0] = true;
    for &p in pattern {
        let mut next = vec![false; text.len() + 1];
        if p == '*' {
            let mut any = false;
            for j in 0..=text.len() {
                any |= matches[j];
                next[j] = any;
            }
        } else {
            for j in 1..=text.len() {
                next[j] = matches[j - 1] && (p == '?' || p == text[j - 1]);
            }
        }
        matches = next;
    }
    matches[text.len()]
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    // The first NUL splits the pattern from the text.
    let (pattern, text) = input.split_once('\0').unwrap_or((input, ""));
    if pattern.len() > 256 || text.len() > 1024 {
        return;
    }
    let expected = reference(
        &pattern.chars().collect::<Vec<_>>(),
        &text.chars().collect::<Vec<_>>(),
    );
    assert_eq!(
        glob_match(pattern, text),
        expected,
        "glob_match({pattern:?}, {text:?})"
    );
});
