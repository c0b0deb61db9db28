//! A small base64 decoder for MCP binary content (`blob` of a resource, `data` of an image).
//!
//! The client only ever decodes, and only to write `--out` files or to report a size, so twenty
//! lines here beat a dependency. It accepts the standard and the URL-safe alphabets, with or
//! without padding, and ignores whitespace (some servers wrap long blobs at 76 columns).

/// Decodes base64 text; the error says which character was wrong and where.
pub(crate) fn decode(text: &str) -> Result<Vec<u8>, String> {
    let mut output = Vec::with_capacity(text.len() / 4 * 3);
    let mut accumulator: u32 = 0;
    let mut bits = 0u32;
    let mut padding_seen = false;
    for (index, byte) in text.bytes().enumerate() {
        let sextet = match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => {
                padding_seen = true;
                continue;
            }
            b' ' | b'\t' | b'\r' | b'\n' => continue,
            _ => {
                return Err(format!(
                    "invalid base64 character {:?} at offset {index}",
                    char::from(byte)
                ));
            }
        };
        if padding_seen {
            return Err(format!(
                "base64 data continues after padding at offset {index}"
            ));
        }
        accumulator = (accumulator << 6) | u32::from(sextet);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            output.push((accumulator >> bits) as u8);
            accumulator &= (1 << bits) - 1;
        }
    }
    // Six leftover bits cannot encode a byte: the text was cut off.
    if bits >= 6 {
        return Err("base64 data is truncated".to_owned());
    }
    Ok(output)
}

/// The number of bytes `text` decodes to, without decoding it; for sizes in placeholders.
pub(crate) fn decoded_len(text: &str) -> usize {
    let symbols = text
        .bytes()
        .filter(|byte| !byte.is_ascii_whitespace() && *byte != b'=')
        .count();
    symbols * 6 / 8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_rfc_4648_vectors() {
        for (encoded, decoded) in [
            ("", ""),
            ("Zg==", "f"),
            ("Zm8=", "fo"),
            ("Zm9v", "foo"),
            ("Zm9vYg==", "foob"),
            ("Zm9vYmE=", "fooba"),
            ("Zm9vYmFy", "foobar"),
            ("Zm9vYg", "foob"),
            ("Zm9v\nYmFy\n", "foobar"),
        ] {
            assert_eq!(decode(encoded).unwrap(), decoded.as_bytes(), "{encoded:?}");
            assert_eq!(decoded_len(encoded), decoded.len(), "{encoded:?}");
        }
    }

    #[test]
    fn decodes_binary_in_both_alphabets() {
        assert_eq!(decode("iVBORw0KGgo=").unwrap(), b"\x89PNG\r\n\x1a\n");
        assert_eq!(decode("+/8=").unwrap(), [0xfb, 0xff]);
        assert_eq!(decode("-_8=").unwrap(), [0xfb, 0xff]);
    }

    #[test]
    fn refuses_garbage() {
        assert!(decode("Zm9v!").unwrap_err().contains("offset 4"));
        assert!(decode("Zg==Zg==").unwrap_err().contains("after padding"));
        assert!(decode("Z").unwrap_err().contains("truncated"));
    }
}
