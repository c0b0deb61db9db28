//! The `sessions` section of the config file: the session watchdog's default caps.
//!
//! ```json
//! { "mcpServers": { … },
//!   "sessions": { "maxCalls": 200, "maxWallTimeMs": 1800000 } }
//! ```
//!
//! Every session (`openSession`, or one opened by its first call) is capped by these unless
//! `openSession` gives its own `maxCalls` / `maxWallTimeMs`, which replace them for that session.
//! Absent, a session is not capped. Parsing is pure and unit-tested; the errors name the member
//! (`sessions.maxCalls`) and say what would be right.

use std::time::Duration;

use serde_json::Value;

/// The `sessions` section, validated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionsConfig {
    /// Most calls a session makes, unless it sets its own cap.
    pub max_calls: Option<u64>,
    /// Longest life of a session, unless it sets its own cap.
    pub max_wall: Option<Duration>,
}

/// The members the section takes.
const MEMBERS: &[&str] = &["maxCalls", "maxWallTimeMs"];

/// Parses the `sessions` value of the config; a member and what was wrong with it otherwise.
pub(crate) fn parse(value: &Value) -> Result<SessionsConfig, (String, String)> {
    let Some(section) = value.as_object() else {
        return Err((
            "sessions".to_owned(),
            "expected an object such as {\"maxCalls\": 200, \"maxWallTimeMs\": 1800000}".to_owned(),
        ));
    };
    if let Some(unknown) = section.keys().find(|key| !MEMBERS.contains(&key.as_str())) {
        return Err((
            format!("sessions.{unknown}"),
            format!(
                "unknown member; the section takes {}",
                MEMBERS.join(" and ")
            ),
        ));
    }
    let cap = |name: &str| -> Result<Option<u64>, (String, String)> {
        match section.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => match value.as_u64() {
                Some(cap) if cap >= 1 => Ok(Some(cap)),
                _ => Err((
                    format!("sessions.{name}"),
                    format!(
                        "expected a whole number of at least 1, not {value} (leave it out for \
                         no cap)"
                    ),
                )),
            },
        }
    };
    Ok(SessionsConfig {
        max_calls: cap("maxCalls")?,
        max_wall: cap("maxWallTimeMs")?.map(Duration::from_millis),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_caps_are_read_and_either_may_be_left_out() {
        let config = parse(&json!({"maxCalls": 200, "maxWallTimeMs": 1500})).unwrap();
        assert_eq!(config.max_calls, Some(200));
        assert_eq!(config.max_wall, Some(Duration::from_millis(1500)));
        assert_eq!(parse(&json!({})).unwrap(), SessionsConfig::default());
        let only_calls = parse(&json!({"maxCalls": 3, "maxWallTimeMs": null})).unwrap();
        assert_eq!(only_calls.max_wall, None);
    }

    #[test]
    fn bad_values_name_the_member_and_what_would_be_right() {
        for (value, field, words) in [
            (json!([]), "sessions", "expected an object"),
            (json!({"maxCalls": 0}), "sessions.maxCalls", "at least 1"),
            (json!({"maxCalls": -5}), "sessions.maxCalls", "at least 1"),
            (
                json!({"maxCalls": 2.5}),
                "sessions.maxCalls",
                "whole number",
            ),
            (
                json!({"maxWallTimeMs": "1h"}),
                "sessions.maxWallTimeMs",
                "whole number",
            ),
            (
                json!({"maxcalls": 2}),
                "sessions.maxcalls",
                "maxCalls and maxWallTimeMs",
            ),
        ] {
            let (got_field, message) = parse(&value).unwrap_err();
            assert_eq!(got_field, field, "{value}");
            assert!(message.contains(words), "{value}: {message}");
        }
    }
}
