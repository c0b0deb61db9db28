//! RFC 3339 timestamps in UTC with milliseconds, written and read without a date crate.
//!
//! Traces need exactly two things of calendar time: writing `2026-05-14T09:15:04.382Z` for a
//! moment, and reading such a stamp (or a plain date, or one with an offset) back into a moment
//! for `--since` and for grouping by day. Both are a page of arithmetic on days since the epoch
//! (Howard Hinnant's `days_from_civil` and its inverse), so the daemon and the client carry no
//! time-zone database for it. Moments are milliseconds since the Unix epoch, as `i64`.

const MILLIS_PER_DAY: i64 = 86_400_000;

/// `2026-05-14T09:15:04.382Z` for a moment in milliseconds since the Unix epoch.
pub fn format_millis(epoch_ms: i64) -> String {
    let days = epoch_ms.div_euclid(MILLIS_PER_DAY);
    let in_day = epoch_ms.rem_euclid(MILLIS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    let (hours, rest) = (in_day / 3_600_000, in_day % 3_600_000);
    let (minutes, rest) = (rest / 60_000, rest % 60_000);
    let (seconds, millis) = (rest / 1000, rest % 1000);
    format!("{year:04}-{month:02}-{day:02}T{hours:02}:{minutes:02}:{seconds:02}.{millis:03}Z")
}

/// The UTC day of a moment: `2026-05-14`.
pub fn day_of(epoch_ms: i64) -> String {
    let (year, month, day) = civil_from_days(epoch_ms.div_euclid(MILLIS_PER_DAY));
    format!("{year:04}-{month:02}-{day:02}")
}

/// Reads an RFC 3339 date-time (`2026-05-14T09:15:04.382Z`, `2026-05-14 11:15:04+02:00`; any
/// number of fraction digits, milliseconds kept) into milliseconds since the epoch.
pub fn parse_date_time(text: &str) -> Option<i64> {
    let (date, rest) = (text.get(..10)?, text.get(10..)?);
    let days = parse_date(date)?;
    let rest = rest.strip_prefix(['T', 't', ' '])?;
    let bytes = rest.as_bytes();
    if bytes.len() < 8 || bytes[2] != b':' || bytes[5] != b':' {
        return None;
    }
    let hours = digits(rest.get(0..2)?)?;
    let minutes = digits(rest.get(3..5)?)?;
    let seconds = digits(rest.get(6..8)?)?;
    if hours > 23 || minutes > 59 || seconds > 60 {
        return None;
    }
    // A leap second (60) is read as the second before it: a moment is milliseconds on a clock
    // without leap seconds.
    let seconds = seconds.min(59);
    let mut rest = &rest[8..];
    let mut millis = 0;
    if let Some(fraction) = rest.strip_prefix('.') {
        let length = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if length == 0 {
            return None;
        }
        let kept = &fraction[..length.min(3)];
        millis = digits(kept)? * 10_i64.pow(3 - kept.len() as u32);
        rest = &fraction[length..];
    }
    let offset_minutes = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            if rest.len() != 6 || rest.as_bytes()[3] != b':' {
                return None;
            }
            let (hours, minutes) = (digits(rest.get(1..3)?)?, digits(rest.get(4..6)?)?);
            if hours > 23 || minutes > 59 {
                return None;
            }
            sign * (hours * 60 + minutes)
        }
    };
    let local = days * MILLIS_PER_DAY + ((hours * 60 + minutes) * 60 + seconds) * 1000 + millis;
    Some(local - offset_minutes * 60_000)
}

/// Reads a date-time as [`parse_date_time`] does, or a plain date (`2026-05-14`, meaning its
/// first millisecond in UTC).
pub fn parse_date_or_time(text: &str) -> Option<i64> {
    if text.len() == 10 {
        return parse_date(text).map(|days| days * MILLIS_PER_DAY);
    }
    parse_date_time(text)
}

/// `YYYY-MM-DD` to days since the epoch, checking the day exists.
fn parse_date(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
        return None;
    }
    let year = digits(text.get(0..4)?)?;
    let month = digits(text.get(5..7)?)?;
    let day = digits(text.get(8..10)?)?;
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    Some(days_from_civil(year, month, day))
}

/// The value of a run of ASCII digits (no sign, no spaces).
fn digits(text: &str) -> Option<i64> {
    if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_from_march = if month > 2 { month - 3 } else { month + 9 };
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The date of a day since 1970-01-01: `(year, month, day)`.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let days = days + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_moments() {
        assert_eq!(format_millis(0), "1970-01-01T00:00:00.000Z");
        // 2026-05-14T09:15:04.382Z, computed independently (`date -u -d @1778750104`).
        assert_eq!(format_millis(1_778_750_104_382), "2026-05-14T09:15:04.382Z");
        assert_eq!(format_millis(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(format_millis(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(day_of(1_778_750_104_382), "2026-05-14");
    }

    #[test]
    fn parsing_inverts_formatting_over_many_days() {
        let mut moment = -86_400_000 * 400;
        while moment < 4_102_444_800_000 {
            let text = format_millis(moment);
            assert_eq!(parse_date_time(&text), Some(moment), "{text}");
            moment += 86_400_000 * 13 + 3_723_456;
        }
    }

    #[test]
    fn reads_offsets_fractions_and_plain_dates() {
        let utc = parse_date_time("2026-05-14T09:15:04.382Z").unwrap();
        assert_eq!(parse_date_time("2026-05-14T11:15:04.382+02:00"), Some(utc));
        assert_eq!(parse_date_time("2026-05-14 09:15:04.382123z"), Some(utc));
        assert_eq!(parse_date_time("2026-05-14T09:15:04.3Z"), Some(utc - 82));
        assert_eq!(parse_date_time("2026-05-14T09:15:04Z"), Some(utc - 382));
        assert_eq!(
            parse_date_or_time("2026-05-14"),
            Some(utc - ((9 * 60 + 15) * 60 + 4) * 1000 - 382)
        );
    }

    #[test]
    fn refuses_what_is_not_a_moment() {
        for text in [
            "",
            "yesterday",
            "2026-5-14",
            "2026-02-30",
            "2025-02-29",
            "2026-13-01",
            "2026-05-14T09:15:04",
            "2026-05-14T24:00:00Z",
            "2026-05-14T09:15:04.Z",
            "2026-05-14T09:15:04+0200",
            "2026-05-14T09:15:04Zjunk",
            "２０２６-05-14",
        ] {
            assert_eq!(parse_date_or_time(text), None, "{text:?}");
        }
        assert_eq!(parse_date_or_time("2024-02-29").map(|_| ()), Some(()));
    }
}
