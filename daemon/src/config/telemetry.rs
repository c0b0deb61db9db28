//! The `telemetry` section of the config file: OpenTelemetry export (docs/observability.md).
//!
//! The section is the crate `tool-cli-telemetry`'s `TelemetryConfig` (unknown members refused);
//! here it is read from the file, with `${VAR}` substituted in `headers` (a collector's key
//! belongs in the environment, not the file), and resolved with the `OTEL_*` variables into the
//! settings the exporter starts with. Parsing is pure: the environment comes in as a lookup.

use serde::Deserialize as _;
use serde_json::Value;
use tool_cli_telemetry::settings::{SettingsError, TelemetryConfig, TelemetrySettings};

/// The `service.name` when neither the config nor `OTEL_SERVICE_NAME` gives one.
pub const DEFAULT_SERVICE_NAME: &str = "tool-cli-daemon";

/// Reads the `telemetry` section; the error is (field, message).
pub(crate) fn parse(
    section: &Value,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<TelemetryConfig, (String, String)> {
    let mut config = TelemetryConfig::deserialize(section).map_err(|err| {
        let message = err.to_string();
        let field = message
            .split('`')
            .nth(1)
            .map(|name| format!("telemetry.{name}"))
            .unwrap_or_else(|| "telemetry".to_owned());
        (field, message)
    })?;
    for (name, value) in config.headers.iter_mut() {
        *value = super::variables::substitute(value, env)
            .map_err(|message| (format!("telemetry.headers.{name}"), message.to_string()))?;
    }
    Ok(config)
}

/// The exporter's settings from the config's section and the `OTEL_*` variables (which win);
/// `Ok(None)` when export is off (the default). A bad value is an error naming the variable or
/// member and what would be right.
pub fn resolve(
    config: Option<&TelemetryConfig>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<TelemetrySettings>, SettingsError> {
    TelemetrySettings::resolve(config, env, DEFAULT_SERVICE_NAME)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn none(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn export_is_off_without_a_section_or_a_variable() {
        assert!(resolve(None, &none).unwrap().is_none());
    }

    #[test]
    fn a_section_turns_export_on_and_its_headers_take_variables() {
        let env = |name: &str| (name == "VENDOR_KEY").then(|| "k-123".to_owned());
        let config = parse(
            &json!({"endpoint": "http://127.0.0.1:4318", "headers": {"api-key": "${VENDOR_KEY}"}}),
            &env,
        )
        .unwrap();
        assert_eq!(config.headers["api-key"], "k-123");
        let settings = resolve(Some(&config), &none).unwrap().expect("on");
        let traces = settings.traces.expect("traces exported");
        assert_eq!(
            traces.endpoint.display_url(),
            "http://127.0.0.1:4318/v1/traces"
        );
    }

    #[test]
    fn an_unknown_member_or_unset_variable_names_the_field() {
        let (field, message) = parse(&json!({"endpont": "x"}), &none).unwrap_err();
        assert_eq!(field, "telemetry.endpont");
        assert!(message.contains("unknown field"), "{message}");
        let (field, _) = parse(&json!({"headers": {"k": "${NOT_SET}"}}), &none).unwrap_err();
        assert_eq!(field, "telemetry.headers.k");
    }

    #[test]
    fn a_bad_variable_is_an_error_naming_it() {
        let env = |name: &str| match name {
            "OTEL_EXPORTER_OTLP_ENDPOINT" => Some("http://127.0.0.1:4318".to_owned()),
            "OTEL_BSP_MAX_QUEUE_SIZE" => Some("lots".to_owned()),
            _ => None,
        };
        let error = resolve(None, &env).unwrap_err().to_string();
        assert!(error.starts_with("OTEL_BSP_MAX_QUEUE_SIZE"), "{error}");
        assert!(error.contains("whole number"), "{error}");
        let env = |name: &str| (name == "OTEL_EXPORTER_OTLP_PROTOCOL").then(|| "grpc".to_owned());
        let error = resolve(None, &env).unwrap_err().to_string();
        assert!(
            error.contains("OTEL_EXPORTER_OTLP_PROTOCOL=grpc"),
            "{error}"
        );
    }
}
