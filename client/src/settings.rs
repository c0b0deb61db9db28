//! The two settings a user can give both on the command line and in the environment: the request
//! timeout (`--timeout` / `TOOL_CLI_TIMEOUT_MS`) and whether the listener must prove its identity
//! (`--no-identity` / `TOOL_CLI_REQUIRE_IDENTITY`). Pure functions of the texts given, shared by
//! the argument parser and [`Client::from_env`](crate::Client::from_env).

use tool_cli_protocol::MAX_TIMEOUT_MS;

use crate::error::Error;

/// The timeout the user gave, in milliseconds: `--timeout` wins over `TOOL_CLI_TIMEOUT_MS`;
/// `None` when neither is given (an empty variable counts as unset), so that each server's
/// configured `timeoutMs` applies to its calls. Values above the protocol's maximum are clamped
/// with a warning rather than refused, because a long timeout is a reasonable wish that we can
/// partly honour; zero and non-numbers are refused.
pub(crate) fn timeout_ms(
    flag: Option<&str>,
    env: Option<&str>,
    warnings: &mut Vec<String>,
) -> Result<Option<u64>, Error> {
    let (text, source) = match (flag, env) {
        (Some(text), _) => (text, "--timeout"),
        (None, Some(text)) if !text.trim().is_empty() => (text, "TOOL_CLI_TIMEOUT_MS"),
        _ => return Ok(None),
    };
    let milliseconds: u64 = text.trim().parse().map_err(|_| {
        Error::Usage(format!(
            "{source} must be a whole number of milliseconds between 1 and {MAX_TIMEOUT_MS}, \
             got {text:?}"
        ))
    })?;
    if milliseconds == 0 {
        return Err(Error::Usage(format!(
            "{source} must be at least 1 millisecond, got 0"
        )));
    }
    if milliseconds > MAX_TIMEOUT_MS {
        warnings.push(format!(
            "{source} {milliseconds} is above the maximum; using {MAX_TIMEOUT_MS} ms"
        ));
        return Ok(Some(MAX_TIMEOUT_MS));
    }
    Ok(Some(milliseconds))
}

/// Whether a listener must prove it holds the token before the token is sent: yes unless
/// `--no-identity` is given or `TOOL_CLI_REQUIRE_IDENTITY` is `0`, `false`, `no` or `off`.
/// Anything else but `1`, `true`, `yes`, `on` or empty is refused, so a typo never weakens the
/// check silently.
pub(crate) fn require_identity(no_identity_flag: bool, env: Option<&str>) -> Result<bool, Error> {
    if no_identity_flag {
        return Ok(false);
    }
    let Some(text) = env.map(str::trim).filter(|text| !text.is_empty()) else {
        return Ok(true);
    };
    match text.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(Error::Usage(format!(
            "TOOL_CLI_REQUIRE_IDENTITY must be 1 (the default: the listener must prove it holds \
             the token) or 0 (also accept a tool-cli 1.x bridge that does not prove it), got \
             {text:?}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeout_from_flag_env_or_none() {
        let mut warnings = Vec::new();
        assert_eq!(
            timeout_ms(None, Some("1234"), &mut warnings).unwrap(),
            Some(1234)
        );
        assert_eq!(
            timeout_ms(Some("99"), Some("1234"), &mut warnings).unwrap(),
            Some(99)
        );
        assert_eq!(timeout_ms(None, Some(" "), &mut warnings).unwrap(), None);
        assert_eq!(timeout_ms(None, None, &mut warnings).unwrap(), None);
        assert!(warnings.is_empty());
    }

    #[test]
    fn large_timeout_is_clamped_with_a_warning() {
        let mut warnings = Vec::new();
        assert_eq!(
            timeout_ms(Some("999999"), None, &mut warnings).unwrap(),
            Some(MAX_TIMEOUT_MS)
        );
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("300000"));
    }

    #[test]
    fn bad_timeouts_name_their_source() {
        for bad in ["abc", "-5", "0", "1.5", "", "99999999999999999999999"] {
            let message = timeout_ms(Some(bad), None, &mut Vec::new())
                .unwrap_err()
                .to_string();
            assert!(message.contains("--timeout"), "{bad}: {message}");
        }
        let message = timeout_ms(None, Some("soon"), &mut Vec::new())
            .unwrap_err()
            .to_string();
        assert!(message.contains("TOOL_CLI_TIMEOUT_MS"), "{message}");
    }

    #[test]
    fn identity_is_required_unless_turned_off() {
        assert!(require_identity(false, None).unwrap());
        assert!(require_identity(false, Some("")).unwrap());
        assert!(require_identity(false, Some("1")).unwrap());
        assert!(require_identity(false, Some("TRUE")).unwrap());
        for off in ["0", "false", "no", "Off"] {
            assert!(!require_identity(false, Some(off)).unwrap(), "{off}");
        }
        assert!(!require_identity(true, Some("1")).unwrap());
        let message = require_identity(false, Some("nope"))
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("TOOL_CLI_REQUIRE_IDENTITY must be"),
            "{message}"
        );
    }
}
