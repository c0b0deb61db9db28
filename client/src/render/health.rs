//! The tables of `tool-cli health` and `tool-cli token list`, and the few time formats they use
//! (durations, UTC timestamps, expiries), computed without a calendar library.

use std::fmt::Write as _;

use tool_cli_protocol::methods::{
    BreakerHealth, HealthResult, LatencySummary, ListTokensResult, MintTokenResult, ServerHealth,
    ServerState,
};

use super::{NAME_COLUMN_MAX, SUMMARY_WIDTH, flatten, truncate};
use crate::sanitize;

/// Whether a server counts against `tool-cli health`: it is enabled and not `ready`. A server
/// still `connecting` counts too, so a script waiting for the daemon can poll until exit 0;
/// a state this version does not know counts, since it is not known to be ready.
pub(crate) fn is_unhealthy(state: ServerState) -> bool {
    !matches!(state, ServerState::Ready | ServerState::Disabled)
}

/// Marks a row of `tool-cli health` whose server is unhealthy. A plain character rather than a
/// colour: the reader is often an agent, and the output is often a pipe.
const UNHEALTHY_MARK: &str = "!";

/// `tool-cli health`: a table with one row per server, unhealthy rows marked with `!`, and each
/// server's last error on its own indented line.
pub(crate) fn health(result: &HealthResult) -> String {
    if result.servers.is_empty() {
        return "no servers are configured; add some to the daemon's config file \
                (TOOL_CLI_CONFIG)\n"
            .to_owned();
    }
    let header = [
        "SERVER",
        "STATE",
        "RESTARTS",
        "UPTIME",
        "CALLS/ERRORS",
        "IN-FLIGHT/QUEUED",
        "P50/P95",
        "BREAKER",
    ]
    .map(str::to_owned)
    .to_vec();
    let rows: Vec<Vec<String>> = result.servers.iter().map(health_row).collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|column| {
            std::iter::once(&header)
                .chain(&rows)
                .map(|row| row[column].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let format_row = |mark: &str, row: &[String]| -> String {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        let line = format!("{mark:<1} {}", cells.join("  "));
        format!("{}\n", line.trim_end())
    };

    let mut text = format_row("", &header);
    for (server, row) in result.servers.iter().zip(&rows) {
        let mark = if is_unhealthy(server.state) {
            UNHEALTHY_MARK
        } else {
            ""
        };
        text.push_str(&format_row(mark, row));
        if let Some(error) = &server.last_error {
            let _ = writeln!(
                text,
                "    last error: {}",
                flatten(error, SUMMARY_WIDTH * 2)
            );
        }
    }
    text
}

/// The cells of one server's row, in the order of the header.
fn health_row(server: &ServerHealth) -> Vec<String> {
    vec![
        truncate(&sanitize::line(&server.name), NAME_COLUMN_MAX),
        server.state.as_str().to_owned(),
        server.restarts.to_string(),
        server
            .uptime_ms
            .map(human_duration)
            .unwrap_or_else(|| "-".to_owned()),
        format!("{}/{}", server.calls, server.errors),
        format!("{}/{}", server.in_flight, server.queued),
        latency(server.latency_ms.as_ref()),
        breaker(&server.breaker),
    ]
}

/// `12ms/80ms`, or `-` before any call has been measured.
pub(super) fn latency(summary: Option<&LatencySummary>) -> String {
    match summary {
        Some(summary) if summary.samples > 0 => format!(
            "{}/{}",
            human_milliseconds(summary.p50),
            human_milliseconds(summary.p95)
        ),
        _ => "-".to_owned(),
    }
}

/// `closed`, `halfOpen`, or `open, retry in 12s`.
pub(super) fn breaker(breaker: &BreakerHealth) -> String {
    match breaker.retry_after_ms {
        Some(retry_after_ms) if breaker.state == "open" => {
            // Rounded up, so that "retry in 1s" is never too early.
            let seconds = retry_after_ms.div_ceil(1000);
            format!("open, retry in {}", human_duration(seconds * 1000))
        }
        _ => breaker.state.clone(),
    }
}

/// A latency: `0.4ms`, `12ms`, `1.5s`.
pub(super) fn human_milliseconds(milliseconds: f64) -> String {
    if milliseconds < 10.0 {
        format!("{milliseconds:.1}ms")
    } else if milliseconds < 1000.0 {
        format!("{milliseconds:.0}ms")
    } else {
        format!("{:.1}s", milliseconds / 1000.0)
    }
}

/// A duration to the second, its two largest units: `42s`, `3m12s`, `2h05m`, `3d04h`.
pub(crate) fn human_duration(milliseconds: u64) -> String {
    let seconds = milliseconds / 1000;
    let (minutes, hours, days) = (seconds / 60, seconds / 3600, seconds / 86_400);
    if minutes == 0 {
        format!("{seconds}s")
    } else if hours == 0 {
        format!("{minutes}m{:02}s", seconds % 60)
    } else if days == 0 {
        format!("{hours}h{:02}m", minutes % 60)
    } else {
        format!("{days}d{:02}h", hours % 24)
    }
}

/// The stderr line after `tool-cli token mint`, whose stdout is only the token:
/// `minted token <id>: <scope>, expires 2025-01-02 03:04:05 UTC (in 1h00m)`.
pub(crate) fn minted_summary(minted: &MintTokenResult, now_seconds: u64) -> String {
    let lifetime = match minted.expires_at {
        Some(expires_at) => format!("expires {}", expiry(expires_at, now_seconds)),
        None => "never expires (it lives until the daemon stops)".to_owned(),
    };
    format!(
        "minted token {}: {}, {lifetime}",
        minted.token_id,
        flatten(&minted.scope, SUMMARY_WIDTH * 2)
    )
}

/// `tool-cli token list`: one row per live minted token, the scope last because it is the
/// longest and varies most.
pub(crate) fn tokens(result: &ListTokensResult, now_seconds: u64) -> String {
    if result.tokens.is_empty() {
        return "no minted tokens; mint one with `tool-cli token mint`\n".to_owned();
    }
    let rows: Vec<Vec<String>> = result
        .tokens
        .iter()
        .map(|token| {
            vec![
                token.token_id.clone(),
                token
                    .label
                    .as_deref()
                    .map(|label| flatten(label, NAME_COLUMN_MAX))
                    .unwrap_or_else(|| "-".to_owned()),
                token
                    .expires_at
                    .map(|expires_at| expiry(expires_at, now_seconds))
                    .unwrap_or_else(|| "never".to_owned()),
                flatten(&token.scope, SUMMARY_WIDTH * 2),
            ]
        })
        .collect();
    table(&["ID", "LABEL", "EXPIRES", "SCOPE"], &rows)
}

/// Left-aligned columns two spaces apart, trailing spaces trimmed.
pub(super) fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let header: Vec<String> = header.iter().map(|cell| (*cell).to_owned()).collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|column| {
            std::iter::once(&header)
                .chain(rows)
                .map(|row| row[column].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut text = String::new();
    for row in std::iter::once(&header).chain(rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        let _ = writeln!(text, "{}", cells.join("  ").trim_end());
    }
    text
}

/// An expiry time: `2025-01-02 03:04:05 UTC (in 1h00m)`, or `(expired)` once past.
pub(crate) fn expiry(expires_at: u64, now_seconds: u64) -> String {
    let when = match expires_at.checked_sub(now_seconds) {
        Some(left) if left > 0 => format!("in {}", human_duration(left.saturating_mul(1000))),
        _ => "expired".to_owned(),
    };
    format!("{} ({when})", utc_timestamp(expires_at))
}

/// Seconds since the Unix epoch as `YYYY-MM-DD HH:MM:SS UTC`: UTC because the client has no
/// time-zone database, and a fixed format that sorts and compares as text.
pub(crate) fn utc_timestamp(epoch_seconds: u64) -> String {
    let (days, seconds) = (epoch_seconds / 86_400, epoch_seconds % 86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, for days on or after the epoch).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let shifted = days + 719_468;
    let era = shifted / 146_097;
    let day_of_era = shifted - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tool_cli_protocol::methods::TransportKind;

    use super::*;

    fn server_health(name: &str, state: ServerState) -> ServerHealth {
        ServerHealth {
            tools: None,
            sampling: None,
            name: name.into(),
            state,
            transport: TransportKind::Stdio,
            last_error: None,
            restarts: 0,
            uptime_ms: None,
            calls: 0,
            errors: 0,
            cancelled: 0,
            in_flight: 0,
            queued: 0,
            latency_ms: None,
            breaker: BreakerHealth {
                state: "closed".into(),
                retry_after_ms: None,
            },
        }
    }

    #[test]
    fn health_table_marks_unhealthy_rows_and_shows_last_errors() {
        let mut demo = server_health("demo", ServerState::Ready);
        demo.uptime_ms = Some(192_400);
        demo.calls = 42;
        demo.errors = 1;
        demo.in_flight = 2;
        demo.queued = 3;
        demo.latency_ms = Some(LatencySummary {
            p50: 12.3,
            p95: 1480.0,
            samples: 42,
        });
        let mut github = server_health("github", ServerState::CircuitOpen);
        github.restarts = 5;
        github.uptime_ms = Some(7_500_000);
        github.calls = 9;
        github.errors = 9;
        github.latency_ms = Some(LatencySummary {
            p50: 0.42,
            p95: 3.0,
            samples: 9,
        });
        github.breaker = BreakerHealth {
            state: "open".into(),
            retry_after_ms: Some(11_200),
        };
        github.last_error = Some("upstream: rate limited\n  try later".into());
        let mut off = server_health("off", ServerState::Disabled);
        off.transport = TransportKind::Http;
        let result = HealthResult {
            servers: vec![demo, github, off],
            traces: None,
            search: None,
            telemetry: None,
        };
        assert_eq!(
            health(&result),
            "  SERVER  STATE        RESTARTS  UPTIME  CALLS/ERRORS  IN-FLIGHT/QUEUED  P50/P95      BREAKER
  demo    ready        0         3m12s   42/1          2/3               12ms/1.5s    closed
! github  circuitOpen  5         2h05m   9/9           0/0               0.4ms/3.0ms  open, retry in 12s
    last error: upstream: rate limited try later
  off     disabled     0         -       0/0           0/0               -            closed
"
        );
    }

    #[test]
    fn every_state_but_ready_and_disabled_is_unhealthy() {
        for state in [ServerState::Ready, ServerState::Disabled] {
            assert!(!is_unhealthy(state), "{state:?}");
        }
        for state in [
            ServerState::Connecting,
            ServerState::Failed,
            ServerState::Exited,
            ServerState::Restarting,
            ServerState::Down,
            ServerState::Degraded,
            ServerState::CircuitOpen,
            ServerState::Unknown,
        ] {
            assert!(is_unhealthy(state), "{state:?}");
        }
    }

    #[test]
    fn health_without_servers_says_where_to_add_them() {
        let text = health(&HealthResult {
            servers: vec![],
            traces: None,
            search: None,
            telemetry: None,
        });
        assert!(text.contains("no servers are configured"), "{text}");
    }

    #[test]
    fn health_parses_the_wire_format() {
        let result: HealthResult = serde_json::from_value(json!({"servers": [{
            "name": "demo", "state": "restarting", "transport": "stdio",
            "lastError": "exit code 1", "restarts": 2, "calls": 3, "errors": 1,
            "inFlight": 0, "queued": 0, "breaker": {"state": "halfOpen"}
        }]}))
        .unwrap();
        let text = health(&result);
        assert!(
            text.contains("! demo    restarting  2         -       3/1"),
            "{text}"
        );
        assert!(
            text.contains("halfOpen\n    last error: exit code 1\n"),
            "{text}"
        );
    }

    #[test]
    fn human_durations_keep_two_units() {
        assert_eq!(human_duration(0), "0s");
        assert_eq!(human_duration(999), "0s");
        assert_eq!(human_duration(42_000), "42s");
        assert_eq!(human_duration(192_000), "3m12s");
        assert_eq!(human_duration(3_600_000), "1h00m");
        assert_eq!(human_duration(7_500_000), "2h05m");
        assert_eq!(human_duration(273_600_000), "3d04h");
    }

    #[test]
    fn breaker_rounds_the_retry_up() {
        let open = |retry_after_ms| BreakerHealth {
            state: "open".into(),
            retry_after_ms: Some(retry_after_ms),
        };
        assert_eq!(breaker(&open(1)), "open, retry in 1s");
        assert_eq!(breaker(&open(1000)), "open, retry in 1s");
        assert_eq!(breaker(&open(90_001)), "open, retry in 1m31s");
        let without_hint = BreakerHealth {
            state: "open".into(),
            retry_after_ms: None,
        };
        assert_eq!(breaker(&without_hint), "open");
    }

    #[test]
    fn utc_timestamps_match_an_independent_calendar() {
        // Expected values from Python's datetime.fromtimestamp(t, UTC).
        for (seconds, text) in [
            (0, "1970-01-01 00:00:00 UTC"),
            (951_782_400, "2000-02-29 00:00:00 UTC"),
            (951_868_799, "2000-02-29 23:59:59 UTC"),
            (1_763_760_896, "2025-11-21 21:34:56 UTC"),
            (4_102_444_800, "2100-01-01 00:00:00 UTC"),
            (253_402_300_799, "9999-12-31 23:59:59 UTC"),
        ] {
            assert_eq!(utc_timestamp(seconds), text);
        }
    }

    #[test]
    fn minted_summary_names_id_scope_and_expiry() {
        let now = 1_763_760_896;
        let mut minted = MintTokenResult {
            token: "t".repeat(64),
            token_id: "a8ae6e6ee929abea".into(),
            scope: "servers demo; read-only tools".into(),
            expires_at: Some(now + 3600),
        };
        let summary = minted_summary(&minted, now);
        assert_eq!(
            summary,
            "minted token a8ae6e6ee929abea: servers demo; read-only tools, expires \
             2025-11-21 22:34:56 UTC (in 1h00m)"
        );
        assert!(
            !summary.contains(&minted.token),
            "the secret stays on stdout"
        );
        minted.expires_at = None;
        assert!(
            minted_summary(&minted, now)
                .ends_with(", never expires (it lives until the daemon stops)")
        );
    }

    #[test]
    fn token_table_lists_id_label_expiry_and_scope() {
        use tool_cli_protocol::methods::TokenInfo;
        let now = 1_763_760_896;
        let result = ListTokensResult {
            tokens: vec![
                TokenInfo {
                    token_id: "0011223344556677".into(),
                    scope: "every server; read-only tools".into(),
                    label: Some("reviewer".into()),
                    expires_at: Some(now + 90),
                },
                TokenInfo {
                    token_id: "8899aabbccddeeff".into(),
                    scope: "servers demo".into(),
                    label: None,
                    expires_at: None,
                },
            ],
        };
        assert_eq!(
            tokens(&result, now),
            "ID                LABEL     EXPIRES                             SCOPE\n\
             0011223344556677  reviewer  2025-11-21 21:36:26 UTC (in 1m30s)  every server; \
             read-only tools\n\
             8899aabbccddeeff  -         never                               servers demo\n"
        );
        assert!(tokens(&ListTokensResult { tokens: vec![] }, now).starts_with("no minted tokens"));
        assert_eq!(expiry(now, now), "2025-11-21 21:34:56 UTC (expired)");
    }
}
