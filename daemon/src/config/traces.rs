//! The `traces` section of the config file, and where the trace file goes when it names none.
//!
//! ```json
//! { "mcpServers": { … },
//!   "traces": { "path": "~/logs/tool-cli.jsonl", "enabled": true, "verbose": false,
//!               "maxBytes": 10485760, "keep": 5 } }
//! ```
//!
//! Parsing is pure (the environment comes in as a lookup), so every rule is unit-tested; the
//! errors name the member (`traces.maxBytes`) and say what would be right, and `config.rs`
//! (`parse.rs`) adds the file.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// Default `maxBytes`: 10 MiB, a few weeks of an agent's calls.
pub const DEFAULT_MAX_BYTES: u64 = 10 * 1024 * 1024;

/// Default `keep`: rotated files kept besides the current one.
pub const DEFAULT_KEEP: u32 = 5;

/// Smallest `maxBytes`: a few lines; anything smaller would rotate on every call.
pub const MIN_MAX_BYTES: u64 = 1024;

/// Largest `keep`.
pub const MAX_KEEP: u32 = 100;

/// The `traces` section, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracesConfig {
    /// The trace file; `None` means `traces.jsonl` in the state directory.
    pub path: Option<PathBuf>,
    /// Whether calls are traced at all.
    pub enabled: bool,
    /// Whether lines carry the (redacted) arguments and results.
    pub verbose: bool,
    /// The size at which the file is rotated.
    pub max_bytes: u64,
    /// How many rotated files are kept.
    pub keep: u32,
}

impl Default for TracesConfig {
    fn default() -> Self {
        TracesConfig {
            path: None,
            enabled: true,
            verbose: false,
            max_bytes: DEFAULT_MAX_BYTES,
            keep: DEFAULT_KEEP,
        }
    }
}

/// What the trace writer is started with: the config resolved against the flags and the
/// environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceSettings {
    /// The current trace file.
    pub path: PathBuf,
    /// Whether lines carry the (redacted) arguments and results.
    pub verbose: bool,
    /// The size at which the file is rotated.
    pub max_bytes: u64,
    /// How many rotated files are kept.
    pub keep: u32,
}

/// Why traces cannot be written although they are on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// Neither `XDG_STATE_HOME` nor `HOME` says where the state directory is.
    #[error(
        "no state directory for the trace file: neither XDG_STATE_HOME nor HOME is set; set \
         one, or give traces.path in the config or --traces PATH"
    )]
    NoStateDirectory,
}

/// The settings the writer starts with, or `None` when traces are off: `--no-traces` wins,
/// then `--traces PATH` (which also turns them on), then the config.
pub fn resolve(
    config: &TracesConfig,
    flag_path: Option<PathBuf>,
    no_traces: bool,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<TraceSettings>, SettingsError> {
    if no_traces || (flag_path.is_none() && !config.enabled) {
        return Ok(None);
    }
    let path = match flag_path.or_else(|| config.path.clone()) {
        Some(path) => path,
        None => super::paths::state_dir(env)
            .ok_or(SettingsError::NoStateDirectory)?
            .join(tool_cli_protocol::trace::TRACE_FILE_NAME),
    };
    Ok(Some(TraceSettings {
        path,
        verbose: config.verbose,
        max_bytes: config.max_bytes,
        keep: config.keep,
    }))
}

/// A member of the section and what was wrong with it: `("traces.keep", "must be …")`.
pub(crate) type SectionError = (String, String);

/// Parses the `traces` value of the config. `config_dir` anchors a relative `path`; `env`
/// expands `${VAR}` and a leading `~/` in it.
pub(crate) fn parse(
    value: &Value,
    config_dir: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<TracesConfig, SectionError> {
    let field = |name: &str| format!("traces.{name}");
    let Some(section) = value.as_object() else {
        return Err((
            "traces".to_owned(),
            format!(
                "expected an object such as {{\"enabled\": true, \"maxBytes\": 10485760}}, got \
                 {}",
                describe(value)
            ),
        ));
    };
    let mut config = TracesConfig::default();
    for (name, member) in section {
        match name.as_str() {
            "path" => config.path = Some(parse_path(member, config_dir, env)?),
            "enabled" => config.enabled = boolean(member).ok_or_else(|| boolean_error(name))?,
            "verbose" => config.verbose = boolean(member).ok_or_else(|| boolean_error(name))?,
            "maxBytes" => {
                config.max_bytes = member
                    .as_u64()
                    .filter(|&bytes| bytes >= MIN_MAX_BYTES)
                    .ok_or_else(|| {
                        (
                            field(name),
                            format!(
                                "expected a number of bytes of at least {MIN_MAX_BYTES}, e.g. \
                                 10485760 for 10 MiB; got {}",
                                describe(member)
                            ),
                        )
                    })?;
            }
            "keep" => {
                config.keep = member
                    .as_u64()
                    .filter(|&keep| keep <= u64::from(MAX_KEEP))
                    .and_then(|keep| u32::try_from(keep).ok())
                    .ok_or_else(|| {
                        (
                            field(name),
                            format!(
                                "expected how many rotated files to keep, from 0 to {MAX_KEEP}; \
                                 got {}",
                                describe(member)
                            ),
                        )
                    })?;
            }
            _ => {
                return Err((
                    field(name),
                    "unknown member; expected one of path, enabled, verbose, maxBytes, keep"
                        .to_owned(),
                ));
            }
        }
    }
    Ok(config)
}

fn boolean(value: &Value) -> Option<bool> {
    value.as_bool()
}

fn boolean_error(name: &str) -> SectionError {
    (
        format!("traces.{name}"),
        "expected true or false".to_owned(),
    )
}

fn parse_path(
    value: &Value,
    config_dir: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<PathBuf, SectionError> {
    let error = |message: String| ("traces.path".to_owned(), message);
    let Some(text) = value.as_str().filter(|text| !text.trim().is_empty()) else {
        return Err(error(format!(
            "expected the trace file's path as a non-empty string, got {}",
            describe(value)
        )));
    };
    crate::config::config_path(text, config_dir, env).map_err(|problem| error(problem.to_string()))
}

/// A short description of a JSON value for messages: its type, and its text when short.
fn describe(value: &Value) -> String {
    let text = value.to_string();
    if text.len() <= 40 {
        text
    } else {
        match value {
            Value::Object(_) => "an object".to_owned(),
            Value::Array(_) => "an array".to_owned(),
            _ => "a long value".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/me".to_owned()),
            "LOGS" => Some("/var/log/me".to_owned()),
            _ => None,
        }
    }

    fn parse_ok(value: Value) -> TracesConfig {
        parse(&value, Some(Path::new("/etc/tool-cli")), &env).unwrap()
    }

    fn parse_err(value: Value) -> SectionError {
        parse(&value, Some(Path::new("/etc/tool-cli")), &env).unwrap_err()
    }

    #[test]
    fn defaults_and_every_member() {
        assert_eq!(parse_ok(json!({})), TracesConfig::default());
        let config = parse_ok(json!({"path": "${LOGS}/t.jsonl", "enabled": false,
            "verbose": true, "maxBytes": 4096, "keep": 0}));
        assert_eq!(
            config,
            TracesConfig {
                path: Some("/var/log/me/t.jsonl".into()),
                enabled: false,
                verbose: true,
                max_bytes: 4096,
                keep: 0,
            }
        );
        assert_eq!(
            parse_ok(json!({"path": "~/t.jsonl"})).path,
            Some("/home/me/t.jsonl".into())
        );
        assert_eq!(
            parse_ok(json!({"path": "logs/t.jsonl"})).path,
            Some("/etc/tool-cli/logs/t.jsonl".into()),
            "relative to the config file"
        );
    }

    #[test]
    fn bad_members_name_the_path_and_what_would_be_right() {
        let cases = [
            (json!([]), "traces", "expected an object"),
            (json!({"maxBytes": 10}), "traces.maxBytes", "at least 1024"),
            (json!({"maxBytes": "10MB"}), "traces.maxBytes", "\"10MB\""),
            (json!({"keep": -1}), "traces.keep", "from 0 to 100"),
            (json!({"keep": 101}), "traces.keep", "from 0 to 100"),
            (json!({"enabled": "yes"}), "traces.enabled", "true or false"),
            (json!({"verbose": 1}), "traces.verbose", "true or false"),
            (json!({"path": ""}), "traces.path", "non-empty string"),
            (json!({"path": "${NOPE}/t"}), "traces.path", "${NOPE}"),
            (json!({"maxbytes": 4096}), "traces.maxbytes", "maxBytes"),
        ];
        for (value, field, needle) in cases {
            let (got_field, message) = parse_err(value.clone());
            assert_eq!(got_field, field, "{value}");
            assert!(message.contains(needle), "{value}: {message}");
        }
        let (_, message) = parse(&json!({"path": "t.jsonl"}), None, &env).unwrap_err();
        assert!(message.contains("expected an absolute path"), "{message}");
    }

    #[test]
    fn flags_win_over_the_config() {
        let config = TracesConfig::default();
        let settings = resolve(&config, None, false, &env).unwrap().unwrap();
        assert_eq!(
            settings.path,
            PathBuf::from("/home/me/.local/state/tool-cli/traces.jsonl")
        );
        assert_eq!(resolve(&config, None, true, &env), Ok(None));
        let off = TracesConfig {
            enabled: false,
            ..TracesConfig::default()
        };
        assert_eq!(resolve(&off, None, false, &env), Ok(None));
        let forced = resolve(&off, Some("/tmp/t.jsonl".into()), false, &env)
            .unwrap()
            .unwrap();
        assert_eq!(forced.path, PathBuf::from("/tmp/t.jsonl"));
        assert_eq!(
            resolve(&config, None, false, &|_| None),
            Err(SettingsError::NoStateDirectory)
        );
    }
}
