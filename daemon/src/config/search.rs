//! The config's `search` section: which sentence-embedding model tool search uses.
//!
//! ```json
//! "search": { "model": "/opt/models/all-minilm-l6-v2" }   // a directory
//! "search": { "model": null }                             // the default places (below)
//! "search": { "model": false }                            // no model: lexical + hashing
//! ```
//!
//! Without a directory the daemon looks in `$TOOL_CLI_SEARCH_MODEL`, then in
//! `$XDG_DATA_HOME/tool-cli/models/all-minilm-l6-v2` (`~/.local/share/…`), where
//! `scripts/install-minilm.sh` puts it. Parsing decides nothing about the files: a missing or
//! corrupt model is a warning when the daemon loads it, never a refusal to start.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The environment variable naming the model directory when the config does not.
pub const MODEL_ENV: &str = tool_cli_protocol::env::SEARCH_MODEL;

/// The model's directory under the data directory (`$XDG_DATA_HOME/tool-cli/…`).
const MODEL_SUBDIR: &str = "models/all-minilm-l6-v2";

/// What the config says about the model.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ModelSetting {
    /// Not said (or `null`): the environment variable, then the default directory; no model
    /// and no warning when neither holds one.
    #[default]
    Default,
    /// This directory, which should hold `model.safetensors` and `vocab.txt`.
    Dir(PathBuf),
    /// `false`: no model.
    Off,
}

/// The `search` section.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchConfig {
    /// Which model, if any.
    pub model: ModelSetting,
}

/// Where to load the model from, and whether its absence deserves a warning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelLocation {
    /// The directory.
    pub dir: PathBuf,
    /// Whether someone asked for this directory (the config or the environment): then a
    /// missing model is a warning; a missing model in the default place is not.
    pub asked: bool,
}

impl SearchConfig {
    /// The directory to load the model from, or `None` when the model is off or no place can
    /// be named (neither the environment, `XDG_DATA_HOME` nor `HOME`).
    pub fn model_location(&self, env: &dyn Fn(&str) -> Option<String>) -> Option<ModelLocation> {
        match &self.model {
            ModelSetting::Off => None,
            ModelSetting::Dir(dir) => Some(ModelLocation {
                dir: dir.clone(),
                asked: true,
            }),
            ModelSetting::Default => match env(MODEL_ENV).filter(|dir| !dir.trim().is_empty()) {
                Some(dir) if matches!(dir.trim(), "off" | "false" | "0") => None,
                Some(dir) => Some(ModelLocation {
                    dir: PathBuf::from(dir),
                    asked: true,
                }),
                None => default_model_dir(env).map(|dir| ModelLocation { dir, asked: false }),
            },
        }
    }
}

/// What the daemon's tool search starts with: the model to load (if any) and where the vector
/// cache lives.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchSettings {
    /// The model's directory; `None`: no model.
    pub model: Option<ModelLocation>,
    /// The state directory, which holds the vector cache; `None`: no cache.
    pub cache_dir: Option<PathBuf>,
}

impl SearchSettings {
    /// The settings of `config` in the environment `env` (the cache in the daemon's state
    /// directory, `$XDG_STATE_HOME/tool-cli`).
    pub fn resolve(config: &SearchConfig, env: &dyn Fn(&str) -> Option<String>) -> SearchSettings {
        SearchSettings {
            model: config.model_location(env),
            cache_dir: super::paths::state_dir(env),
        }
    }
}

/// `$XDG_DATA_HOME/tool-cli/models/all-minilm-l6-v2`, else
/// `~/.local/share/tool-cli/models/all-minilm-l6-v2` (a relative `XDG_DATA_HOME` is ignored,
/// as the XDG spec says).
pub fn default_model_dir(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    if let Some(data) = env("XDG_DATA_HOME").filter(|dir| Path::new(dir).is_absolute()) {
        return Some(Path::new(&data).join("tool-cli").join(MODEL_SUBDIR));
    }
    let home = env("HOME").filter(|home| !home.is_empty())?;
    Some(
        Path::new(&home)
            .join(".local/share/tool-cli")
            .join(MODEL_SUBDIR),
    )
}

/// A member of the section and what was wrong with it: `("search.model", "expected …")`.
pub(crate) type SectionError = (String, String);

/// Parses the `search` value of the config. `config_dir` anchors a relative directory; `env`
/// expands `${VAR}` and a leading `~/`.
pub(crate) fn parse(
    value: &Value,
    config_dir: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<SearchConfig, SectionError> {
    let Some(section) = value.as_object() else {
        return Err((
            "search".to_owned(),
            format!(
                "expected an object such as {{\"model\": \"/path/to/all-minilm-l6-v2\"}}, got {value}"
            ),
        ));
    };
    let mut config = SearchConfig::default();
    for (name, member) in section {
        match name.as_str() {
            "model" => config.model = parse_model(member, config_dir, env)?,
            _ => {
                return Err((
                    format!("search.{name}"),
                    "unknown member; expected model".to_owned(),
                ));
            }
        }
    }
    Ok(config)
}

fn parse_model(
    value: &Value,
    config_dir: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ModelSetting, SectionError> {
    let error = |message: String| ("search.model".to_owned(), message);
    let text = match value {
        Value::Null => return Ok(ModelSetting::Default),
        Value::Bool(false) => return Ok(ModelSetting::Off),
        Value::String(text) if !text.trim().is_empty() => text,
        other => {
            return Err(error(format!(
                "expected the model's directory as a string, null for the default places, or \
                 false for no model; got {other}"
            )));
        }
    };
    crate::config::config_path(text, config_dir, env)
        .map(ModelSetting::Dir)
        .map_err(|problem| error(problem.to_string()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        }
    }

    #[test]
    fn the_model_is_a_directory_null_or_false() {
        let none = env(&[("HOME", "/home/me")]);
        let dir = Path::new("/etc/tool-cli");
        assert_eq!(
            parse(&json!({"model": "/opt/m"}), Some(dir), &none)
                .unwrap()
                .model,
            ModelSetting::Dir("/opt/m".into())
        );
        assert_eq!(
            parse(&json!({"model": "models/m"}), Some(dir), &none)
                .unwrap()
                .model,
            ModelSetting::Dir("/etc/tool-cli/models/m".into())
        );
        assert_eq!(
            parse(&json!({"model": "~/m"}), None, &none).unwrap().model,
            ModelSetting::Dir("/home/me/m".into())
        );
        assert_eq!(
            parse(&json!({"model": null}), None, &none).unwrap().model,
            ModelSetting::Default
        );
        assert_eq!(
            parse(&json!({"model": false}), None, &none).unwrap().model,
            ModelSetting::Off
        );
        assert_eq!(
            parse(&json!({}), None, &none).unwrap(),
            SearchConfig::default()
        );
    }

    #[test]
    fn bad_members_are_named_with_what_would_be_right() {
        let none = env(&[]);
        let (field, message) = parse(&json!({"model": true}), None, &none).unwrap_err();
        assert_eq!(field, "search.model");
        assert!(message.contains("false for no model"), "{message}");
        let (field, message) = parse(&json!({"modle": "x"}), None, &none).unwrap_err();
        assert_eq!(field, "search.modle");
        assert!(message.contains("expected model"), "{message}");
        let (field, _) = parse(&json!({"model": "rel"}), None, &none).unwrap_err();
        assert_eq!(field, "search.model");
        let (field, _) = parse(&json!("x"), None, &none).unwrap_err();
        assert_eq!(field, "search");
    }

    #[test]
    fn the_default_is_the_environment_then_the_data_directory() {
        let config = SearchConfig::default();
        assert_eq!(
            config.model_location(&env(&[(MODEL_ENV, "/m"), ("HOME", "/h")])),
            Some(ModelLocation {
                dir: "/m".into(),
                asked: true
            })
        );
        assert_eq!(
            config.model_location(&env(&[(MODEL_ENV, "off"), ("HOME", "/h")])),
            None
        );
        assert_eq!(
            config.model_location(&env(&[("XDG_DATA_HOME", "/d"), ("HOME", "/h")])),
            Some(ModelLocation {
                dir: "/d/tool-cli/models/all-minilm-l6-v2".into(),
                asked: false
            })
        );
        assert_eq!(
            config.model_location(&env(&[("XDG_DATA_HOME", "rel"), ("HOME", "/h")])),
            Some(ModelLocation {
                dir: "/h/.local/share/tool-cli/models/all-minilm-l6-v2".into(),
                asked: false
            })
        );
        assert_eq!(config.model_location(&env(&[])), None);
        let off = SearchConfig {
            model: ModelSetting::Off,
        };
        assert_eq!(off.model_location(&env(&[(MODEL_ENV, "/m")])), None);
    }
}
