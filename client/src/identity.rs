//! The daemon's proof of identity: what the client computes and checks before it sends a token.
//!
//! A port in a stale `TOOL_CLI_PORT` may now belong to another program, and a bearer token sent
//! there is a token given away. So before its first authenticated request the client asks the
//! listener to prove it holds the token, without revealing it: it sends a fresh random nonce and
//! the token's public id ([`token_id`]), and expects HMAC-SHA256 keyed by the token over
//! [`tool_cli_protocol::identity::message`] (which binds the nonce and the `Host` the client
//! dialed, so a listener cannot relay the challenge to the real daemon on another port). This
//! module is the pure part (ids, nonces, proofs, the constant-time check); the request itself is
//! made by [`crate::connection`].

use std::io::Read as _;

use hmac::{Hmac, KeyInit as _, Mac as _};
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

/// Length in bytes of the nonce (sent as twice as many hex characters).
const NONCE_BYTES: usize = 32;

/// Length in bytes of a proof: one HMAC-SHA256 output.
const PROOF_BYTES: usize = 32;

/// The public id of a token: the first 8 bytes of its SHA-256, as 16 lowercase hex characters.
pub(crate) fn token_id(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes())[..8])
}

/// A fresh nonce, as 64 lowercase hex characters.
///
/// Read from the kernel's random device rather than through `rand`: 32 bytes once per run
/// need no generator of our own, and the client stays smaller without one.
pub(crate) fn new_nonce() -> std::io::Result<String> {
    let mut bytes = [0u8; NONCE_BYTES];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(hex(&bytes))
}

/// The proof a daemon holding `token` gives for `nonce_hex` when dialed at `host`, as lowercase
/// hex: what the daemon sends, so only the tests' scripted daemon needs it (the client compares
/// bytes, see [`proof_matches`]).
#[cfg(test)]
pub(crate) fn proof(token: &str, nonce_hex: &str, host: &str) -> String {
    hex(&proof_bytes(token, nonce_hex, host))
}

fn proof_bytes(token: &str, nonce_hex: &str, host: &str) -> [u8; PROOF_BYTES] {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = Hmac::<Sha256>::new_from_slice(token.as_bytes())
        .expect("HMAC-SHA256 takes keys of any length");
    mac.update(tool_cli_protocol::identity::message(nonce_hex, host).as_bytes());
    mac.finalize().into_bytes().into()
}

/// Whether `presented` (hex, either case) is the proof for this token, nonce and host. The bytes
/// are compared in constant time, so a listener probing with guesses learns nothing from timing.
pub(crate) fn proof_matches(presented: &str, token: &str, nonce_hex: &str, host: &str) -> bool {
    let Some(presented) = decode_hex::<PROOF_BYTES>(presented) else {
        return false;
    };
    bool::from(presented.ct_eq(&proof_bytes(token, nonce_hex, host)))
}

/// Lowercase hex.
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        text.push(char::from(DIGITS[usize::from(byte >> 4)]));
        text.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    text
}

/// Exactly `N` bytes of hex, or `None`.
fn decode_hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let text = text.as_bytes();
    if text.len() != N * 2 {
        return None;
    }
    let digit = |byte: u8| char::from(byte).to_digit(16);
    let mut bytes = [0u8; N];
    for (byte, pair) in bytes.iter_mut().zip(text.chunks_exact(2)) {
        *byte = u8::try_from(digit(pair[0])? * 16 + digit(pair[1])?).ok()?;
    }
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn nonce() -> String {
        format!("{}{}", "00".repeat(16), "ff".repeat(16))
    }

    // The expected values below were computed independently with Python's standard library:
    //   hmac.new(token.encode(), ("tool-cli-identity-v1\n%s\n%s" % (nonce, host)).encode(),
    //            hashlib.sha256).hexdigest()
    //   hashlib.sha256(token.encode()).hexdigest()[:16]

    #[test]
    fn token_id_is_the_first_eight_bytes_of_sha256() {
        assert_eq!(token_id(TOKEN), "a8ae6e6ee929abea");
        assert_eq!(token_id("secret"), "2bb80d537b1da3e3");
        assert!(tool_cli_protocol::identity::is_token_id(&token_id(TOKEN)));
    }

    #[test]
    fn proof_matches_an_independent_hmac_sha256() {
        assert_eq!(
            proof(TOKEN, &nonce(), "127.0.0.1:4567"),
            "5c2d8701f3432caffe72d7ac1c8e497163124afd63d9267f6b5710ea6368f812"
        );
        assert_eq!(
            proof(TOKEN, &nonce(), "localhost"),
            "12f21ac346f2287262836a6dd042b3b6d7370209849ffaa836085b97441cbb4e"
        );
        assert_eq!(
            proof("secret", &nonce(), "[::1]:4242"),
            "7286a82f6fcca72dfc8775d0faf2737b57edf71fae49bada13cd065a1899dabf"
        );
    }

    #[test]
    fn only_the_right_proof_matches() {
        let host = "127.0.0.1:4567";
        let right = "5c2d8701f3432caffe72d7ac1c8e497163124afd63d9267f6b5710ea6368f812";
        assert!(proof_matches(right, TOKEN, &nonce(), host));
        assert!(proof_matches(&right.to_uppercase(), TOKEN, &nonce(), host));
        // Another host, nonce or token: the proof of a relayed or replayed challenge fails.
        assert!(!proof_matches(right, TOKEN, &nonce(), "127.0.0.1:4568"));
        assert!(!proof_matches(right, TOKEN, &"00".repeat(32), host));
        assert!(!proof_matches(right, "secret", &nonce(), host));
        // Malformed: short, long, not hex, empty.
        assert!(!proof_matches(&right[..62], TOKEN, &nonce(), host));
        assert!(!proof_matches(&format!("{right}00"), TOKEN, &nonce(), host));
        assert!(!proof_matches(
            &right.replace('5', "g"),
            TOKEN,
            &nonce(),
            host
        ));
        assert!(!proof_matches("", TOKEN, &nonce(), host));
    }

    #[test]
    fn nonces_are_fresh_lowercase_hex() {
        let first = new_nonce().unwrap();
        let second = new_nonce().unwrap();
        assert!(tool_cli_protocol::identity::is_nonce(&first), "{first}");
        assert_ne!(first, second);
    }

    #[test]
    fn hex_round_trips() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        assert_eq!(decode_hex::<4>("000fA5ff"), Some([0x00, 0x0f, 0xa5, 0xff]));
        assert_eq!(decode_hex::<2>("+1ff"), None);
    }
}
