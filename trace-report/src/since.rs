//! `--since`: a duration back from now (`30m`, `24h`, `7d`, `1h30m`) or an RFC 3339 date or
//! date-time, turned into a cutoff moment.
//!
//! The daemon (for `tracesReport`) and the client (for `--file`, and to refuse a bad value
//! before it contacts anything) read it with this one function, so both accept the same words.

use crate::time;

/// Why a `since` value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SinceError {
    /// Empty or blank.
    #[error(
        "since is empty; expected a duration such as 30m, 24h or 7d, or an RFC 3339 date such as \
         2026-05-01 or 2026-05-01T12:00:00Z"
    )]
    Empty,
    /// Neither a duration nor a date.
    #[error(
        "since {text:?} is neither a duration (a number and a unit s, m, h, d or w, e.g. 30m, \
         24h, 7d, 1h30m) nor an RFC 3339 date (2026-05-01, or 2026-05-01T12:00:00Z with its \
         offset)"
    )]
    Unrecognized {
        /// The value given.
        text: String,
    },
    /// A duration longer than anyone keeps traces.
    #[error("since {text:?} reaches back more than 100 years; expected a shorter duration")]
    TooLong {
        /// The value given.
        text: String,
    },
}

/// The longest duration accepted, in milliseconds: 100 years keeps every sum far from overflow.
const LONGEST_MS: i64 = 100 * 366 * 86_400_000;

/// The cutoff moment `text` means at `now_ms` (milliseconds since the epoch).
pub fn parse_since(text: &str, now_ms: i64) -> Result<i64, SinceError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(SinceError::Empty);
    }
    if let Some(moment) = time::parse_date_or_time(text) {
        return Ok(moment);
    }
    let unrecognized = || SinceError::Unrecognized {
        text: text.to_owned(),
    };
    let too_long = || SinceError::TooLong {
        text: text.to_owned(),
    };
    let mut total: i64 = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let length = rest.bytes().take_while(u8::is_ascii_digit).count();
        if length == 0 || length > 12 {
            return Err(if length > 12 {
                too_long()
            } else {
                unrecognized()
            });
        }
        let number: i64 = rest[..length].parse().map_err(|_| unrecognized())?;
        let unit_ms = match rest.as_bytes().get(length) {
            Some(b's') => 1000,
            Some(b'm') => 60_000,
            Some(b'h') => 3_600_000,
            Some(b'd') => 86_400_000,
            Some(b'w') => 7 * 86_400_000,
            _ => return Err(unrecognized()),
        };
        total = number
            .checked_mul(unit_ms)
            .and_then(|part| total.checked_add(part))
            .filter(|&sum| sum <= LONGEST_MS)
            .ok_or_else(too_long)?;
        rest = &rest[length + 1..];
    }
    Ok(now_ms - total)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_778_750_104_382;

    #[test]
    fn durations_count_back_from_now() {
        assert_eq!(parse_since("30m", NOW), Ok(NOW - 30 * 60_000));
        assert_eq!(parse_since("24h", NOW), Ok(NOW - 24 * 3_600_000));
        assert_eq!(parse_since(" 7d ", NOW), Ok(NOW - 7 * 86_400_000));
        assert_eq!(parse_since("2w", NOW), Ok(NOW - 14 * 86_400_000));
        assert_eq!(parse_since("90s", NOW), Ok(NOW - 90_000));
        assert_eq!(
            parse_since("1h30m", NOW),
            Ok(NOW - 90 * 60_000),
            "units combine"
        );
        assert_eq!(parse_since("0h", NOW), Ok(NOW));
    }

    #[test]
    fn dates_and_times_are_absolute() {
        assert_eq!(
            parse_since("2026-05-14", NOW),
            Ok(NOW - ((9 * 60 + 15) * 60 + 4) * 1000 - 382)
        );
        assert_eq!(parse_since("2026-05-14T09:15:04.382Z", 0), Ok(NOW));
    }

    #[test]
    fn garbage_is_refused_with_what_would_be_right() {
        for text in [
            "yesterday",
            "24",
            "h",
            "24 h",
            "-1h",
            "1.5h",
            "24hours",
            "1y",
            "2026-05-99",
        ] {
            let error = parse_since(text, NOW).unwrap_err();
            assert!(
                matches!(error, SinceError::Unrecognized { .. }),
                "{text}: {error:?}"
            );
            let message = error.to_string();
            assert!(
                message.contains("24h") && message.contains("2026-05-01"),
                "{message}"
            );
        }
        assert_eq!(parse_since("  ", NOW), Err(SinceError::Empty));
        assert!(matches!(
            parse_since("99999999999999999999d", NOW),
            Err(SinceError::TooLong { .. })
        ));
        assert!(matches!(
            parse_since("40000d", NOW),
            Err(SinceError::TooLong { .. })
        ));
    }
}
