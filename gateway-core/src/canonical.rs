//! Canonical JSON and the `sha256/v1:` digest the pins are made of.
//!
//! Two JSON texts that mean the same value must give the same digest, and any change of value
//! must change it. The canonical form follows RFC 8785 (JSON Canonicalization Scheme) where it
//! can and says where it differs:
//!
//! - **Whitespace**: none outside strings.
//! - **Objects**: members sorted by key, comparing keys as sequences of UTF-16 code units
//!   (RFC 8785 §3.2.3; this differs from byte order only for characters above U+FFFF against
//!   U+E000–U+FFFF). A key appears once (the parser upstream kept one of any duplicates).
//! - **Strings**: UTF-8, with exactly these escapes (RFC 8785 §3.2.2.2, as ECMAScript's
//!   `JSON.stringify`): `\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, and `\u00xx` (lowercase hex)
//!   for the other characters below U+0020. Everything else is written as itself: `/`, DEL,
//!   non-ASCII, and every invisible or bidirectional character, so that a zero-width space
//!   changes the digest. No Unicode normalization is applied, on purpose: `é` precomposed and
//!   `e` + combining accent are different texts to a model and are pinned as different.
//! - **Numbers**: a number that is an integer in JSON (`serde_json` holds it as `i64`/`u64`) is
//!   written in plain decimal, exactly. A floating-point number is written as ECMAScript's
//!   `Number.prototype.toString` writes it (RFC 8785 §3.2.2.3): the shortest digits that read
//!   back to the same double, in plain notation from 1e-6 up to 1e21 and in exponent notation
//!   (`1e+21`, `1.5e-7`) outside it; `-0` is written `0`. So `1`, `1.0` and `1e0` are the same
//!   value, as in RFC 8785. **Difference from RFC 8785**: an integer beyond ±2^53 is kept exact
//!   rather than rounded to the nearest double, so two large integers that differ in their
//!   last digits keep different digests (RFC 8785 would merge them; pinning prefers to notice).
//!   A float with more than 15 significant digits is the double `serde_json` read it as
//!   (without its `float_roundtrip` feature that can be one unit in the last place off the
//!   nearest double); the same text always reads the same, so this never makes a false alarm.
//!
//! The digest is `sha256/v1:` followed by the 64 lowercase hex digits of SHA-256 over the UTF-8
//! bytes of the canonical text. The `v1` names this canonical form: a future change to it
//! gets a new prefix rather than silently different digests.

use std::cmp::Ordering;
use std::fmt;

use serde_json::{Map, Number, Value};
use sha2::{Digest as _, Sha256};

/// What every digest of this scheme starts with.
pub const DIGEST_PREFIX: &str = "sha256/v1:";

/// The canonical text of `value` (see the module documentation for the rules).
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

/// The `sha256/v1:` digest of `value`'s canonical text.
pub fn digest(value: &Value) -> Digest {
    digest_of_canonical_text(&canonical_json(value))
}

/// The digest of a text that is already canonical JSON.
fn digest_of_canonical_text(text: &str) -> Digest {
    let hash = Sha256::digest(text.as_bytes());
    let mut hex = String::with_capacity(DIGEST_PREFIX.len() + 64);
    hex.push_str(DIGEST_PREFIX);
    for byte in hash.iter() {
        hex.push(char::from(HEX_DIGITS[usize::from(byte >> 4)]));
        hex.push(char::from(HEX_DIGITS[usize::from(byte & 0xf)]));
    }
    Digest(hex)
}

const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

/// A `sha256/v1:` digest: the prefix and 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Digest(String);

impl Digest {
    /// Reads a digest written by [`Digest::as_str`]; `None` unless it is `sha256/v1:` and
    /// exactly 64 lowercase hex digits.
    pub fn parse(text: &str) -> Option<Digest> {
        let hex = text.strip_prefix(DIGEST_PREFIX)?;
        let well_formed = hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        well_formed.then(|| Digest(text.to_owned()))
    }

    /// The digest as text (`sha256/v1:…`).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(number) => write_number(out, number),
        Value::String(text) => write_string(out, text),
        Value::Array(items) => {
            out.push('[');
            for (position, item) in items.iter().enumerate() {
                if position > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(members) => write_object(out, members),
    }
}

fn write_object(out: &mut String, members: &Map<String, Value>) {
    let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
    sorted.sort_by(|(left, _), (right, _)| compare_utf16(left, right));
    out.push('{');
    for (position, (key, value)) in sorted.into_iter().enumerate() {
        if position > 0 {
            out.push(',');
        }
        write_string(out, key);
        out.push(':');
        write_value(out, value);
    }
    out.push('}');
}

/// RFC 8785's key order: by UTF-16 code units.
pub(crate) fn compare_utf16(left: &str, right: &str) -> Ordering {
    left.encode_utf16().cmp(right.encode_utf16())
}

fn write_string(out: &mut String, text: &str) {
    out.push('"');
    for character in text.chars() {
        match character {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            control if u32::from(control) < 0x20 => {
                let code = u32::from(control) as usize;
                out.push_str("\\u00");
                out.push(char::from(HEX_DIGITS[code >> 4]));
                out.push(char::from(HEX_DIGITS[code & 0xf]));
            }
            other => out.push(other),
        }
    }
    out.push('"');
}

fn write_number(out: &mut String, number: &Number) {
    if let Some(integer) = number.as_u64() {
        out.push_str(&integer.to_string());
    } else if let Some(integer) = number.as_i64() {
        out.push_str(&integer.to_string());
    } else if let Some(float) = number.as_f64() {
        out.push_str(&ecmascript_number(float));
    } else {
        // Only reachable with serde_json's `arbitrary_precision`, which this workspace does
        // not enable; the number's own text is the best faithful rendering then.
        out.push_str(&number.to_string());
    }
}

/// ECMAScript's `Number.prototype.toString(x)` for a finite double (ECMA-262 §6.1.6.1.20).
fn ecmascript_number(value: f64) -> String {
    if value == 0.0 {
        return "0".to_owned();
    }
    if !value.is_finite() {
        // serde_json never holds a NaN or an infinity; write what JSON.stringify would.
        return "null".to_owned();
    }
    if value < 0.0 {
        return format!("-{}", ecmascript_number(-value));
    }
    // Rust's `{:e}` gives the shortest digits that read back to the same double:
    // `d.ddddde±x`. ECMAScript's algorithm wants those digits (k of them) and the position n
    // of the decimal point: value = 0.digits × 10^n.
    let scientific = format!("{value:e}");
    let (mantissa, exponent) = scientific
        .split_once('e')
        .expect("`{:e}` always writes an exponent");
    let exponent: i32 = exponent.parse().expect("`{:e}` writes a decimal exponent");
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let digit_count = digits.len() as i32;
    let point = exponent + 1;
    if digit_count <= point && point <= 21 {
        let mut text = digits;
        text.extend(std::iter::repeat_n('0', (point - digit_count) as usize));
        text
    } else if 0 < point && point <= 21 {
        let (whole, fraction) = digits.split_at(point as usize);
        format!("{whole}.{fraction}")
    } else if -6 < point && point <= 0 {
        format!("0.{}{}", "0".repeat((-point) as usize), digits)
    } else {
        let sign = if point - 1 < 0 { '-' } else { '+' };
        let magnitude = (point - 1).abs();
        if digit_count == 1 {
            format!("{digits}e{sign}{magnitude}")
        } else {
            let (first, rest) = digits.split_at(1);
            format!("{first}.{rest}e{sign}{magnitude}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canonical_of(text: &str) -> String {
        canonical_json(&serde_json::from_str(text).unwrap())
    }

    #[test]
    fn objects_are_sorted_and_whitespace_is_dropped() {
        assert_eq!(
            canonical_of(r#"{ "b" : [1, 2, {"d": 1, "c": 2}], "a": "x" }"#),
            r#"{"a":"x","b":[1,2,{"c":2,"d":1}]}"#
        );
    }

    #[test]
    fn keys_sort_by_utf16_code_units_as_rfc_8785_says() {
        // U+1F600 is D83D DE00 in UTF-16, which sorts before U+FB01 (FB01); in UTF-8 byte
        // order it would sort after.
        let value = json!({"\u{fb01}": 1, "\u{1f600}": 2, "a": 3});
        assert_eq!(
            canonical_json(&value),
            "{\"a\":3,\"\u{1f600}\":2,\"\u{fb01}\":1}"
        );
    }

    #[test]
    fn strings_escape_exactly_what_rfc_8785_escapes() {
        let value = json!("q\" b\\ \u{8}\u{c}\n\r\t \u{1} \u{1f} / \u{7f} é \u{200b}");
        assert_eq!(
            canonical_json(&value),
            "\"q\\\" b\\\\ \\b\\f\\n\\r\\t \\u0001 \\u001f / \u{7f} é \u{200b}\""
        );
        // An escaped form in the input means the same string.
        assert_eq!(canonical_of(r#""\u00e9\/""#), "\"é/\"");
    }

    #[test]
    fn numbers_follow_ecmascript_for_floats_and_stay_exact_for_integers() {
        let cases = [
            ("1", "1"),
            ("1.0", "1"),
            ("1e0", "1"),
            ("-0.0", "0"),
            ("0.1", "0.1"),
            ("-2.5", "-2.5"),
            ("1e21", "1e+21"),
            ("1e20", "100000000000000000000"),
            ("123456789012345.5", "123456789012345.5"),
            ("0.000001", "0.000001"),
            ("0.0000001", "1e-7"),
            ("1.5e-7", "1.5e-7"),
            ("1.7976931348623157e308", "1.7976931348623157e+308"),
            ("5e-324", "5e-324"),
            ("4.35", "4.35"),
            ("0.30000000000000004", "0.30000000000000004"),
            ("9007199254740993", "9007199254740993"),
            ("18446744073709551615", "18446744073709551615"),
            ("-9223372036854775808", "-9223372036854775808"),
        ];
        for (input, expected) in cases {
            assert_eq!(canonical_of(input), expected, "canonical form of {input}");
        }
    }

    #[test]
    fn floats_are_written_as_ecmascript_writes_them() {
        // Samples from RFC 8785 Appendix B (IEEE 754 bit patterns → expected text).
        // Bit patterns and the text Node.js's String(x) gives for them (RFC 8785 Appendix B
        // uses the same algorithm).
        let samples: [(u64, &str); 23] = [
            (0x0000_0000_0000_0000, "0"),
            (0x8000_0000_0000_0000, "0"),
            (0x0000_0000_0000_0001, "5e-324"),
            (0x7fef_ffff_ffff_ffff, "1.7976931348623157e+308"),
            (0x4340_0000_0000_0000, "9007199254740992"),
            (0x4430_0000_0000_0000, "295147905179352830000"),
            (0x3eb0_c6f7_a0b5_ed8c, "9.999999999999997e-7"),
            (0x4415_af1d_78b5_8c40, "100000000000000000000"),
            (0x44b5_2d02_c7e1_4af6, "1e+23"),
            (0x44b5_2d02_c7e1_4af5, "9.999999999999997e+22"),
            (0x3fd3_3333_3333_3334, "0.30000000000000004"),
            (0x405e_dd2f_1a9f_be77, "123.456"),
            (0xbe7a_d7f2_9abc_af48, "-1e-7"),
            (0x3eb0_c6f7_a0b5_ed8d, "0.000001"),
            (0x43f0_0000_0000_0000, "18446744073709552000"),
            (0x3fd5_5555_5555_5555, "0.3333333333333333"),
            (0x44df_e185_ca57_c517, "6.02214076e+23"),
            (0x4011_6666_6666_6666, "4.35"),
            (0x7e6d_dd4b_aa00_9303, "1e+301"),
            (0x0000_0000_0000_0003, "1.5e-323"),
            (0x3f20_1f31_f46e_d246, "0.000123"),
            (0x3c36_b082_c214_8b8e, "1.23e-18"),
            (0x4341_c379_37e0_8001, "10000000000000002"),
        ];
        for (bits, expected) in samples {
            assert_eq!(
                ecmascript_number(f64::from_bits(bits)),
                expected,
                "{bits:#x}"
            );
        }
    }

    #[test]
    fn digests_are_prefixed_hex_and_parse_back() {
        let value = json!({"a": 1});
        let found = digest(&value);
        assert!(found.as_str().starts_with("sha256/v1:"));
        assert_eq!(found.as_str().len(), DIGEST_PREFIX.len() + 64);
        assert_eq!(Digest::parse(found.as_str()), Some(found.clone()));
        // SHA-256 of `{"a":1}`.
        assert_eq!(
            found.as_str(),
            "sha256/v1:015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862"
        );
        assert_eq!(Digest::parse("sha256/v1:ABC"), None);
        assert_eq!(Digest::parse(&found.as_str().to_uppercase()), None);
        assert_eq!(Digest::parse("md5:0123"), None);
    }

    #[test]
    fn reordered_and_reformatted_documents_share_a_digest() {
        let left: Value =
            serde_json::from_str(r#"{"x": [1.0, {"b": true, "a": null}], "y": "é"}"#).unwrap();
        let right: Value = serde_json::from_str(
            "{\n  \"y\" : \"\\u00e9\",\n  \"x\" : [ 1, {\"a\":null,\"b\":true} ]\n}",
        )
        .unwrap();
        assert_eq!(digest(&left), digest(&right));
        let changed: Value =
            serde_json::from_str(r#"{"x": [1.0, {"b": true, "a": null}], "y": "e\u0301"}"#)
                .unwrap();
        assert_ne!(digest(&left), digest(&changed));
    }
}
