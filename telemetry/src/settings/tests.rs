use std::collections::HashMap;
use std::time::Duration;

use super::*;
use crate::sampler::Root;

fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect();
    move |name| map.get(name).cloned()
}

fn resolve(
    config: Option<&TelemetryConfig>,
    pairs: &[(&str, &str)],
) -> Result<Option<TelemetrySettings>, SettingsError> {
    TelemetrySettings::resolve(config, &env(pairs), "tool-cli-daemon")
}

fn error_text(pairs: &[(&str, &str)]) -> String {
    resolve(None, pairs).unwrap_err().to_string()
}

#[test]
fn export_is_off_by_default() {
    assert_eq!(resolve(None, &[]).unwrap(), None);
    // Variables that only tune an exporter do not turn it on.
    assert_eq!(
        resolve(
            None,
            &[
                ("OTEL_SERVICE_NAME", "x"),
                ("OTEL_BSP_MAX_QUEUE_SIZE", "10")
            ]
        )
        .unwrap(),
        None
    );
}

#[test]
fn an_endpoint_turns_both_signals_on_with_the_specification_paths() {
    let settings = resolve(
        None,
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")],
    )
    .unwrap()
    .unwrap();
    let traces = settings.traces.unwrap();
    assert_eq!(
        traces.endpoint.display_url(),
        "http://collector:4318/v1/traces"
    );
    assert_eq!(
        settings.metrics.unwrap().endpoint.display_url(),
        "http://collector:4318/v1/metrics"
    );
    assert_eq!(traces.timeout, DEFAULT_REQUEST_TIMEOUT);
    assert_eq!(traces.compression, Compression::None);
    assert_eq!(settings.batch, BatchSettings::default());
    assert_eq!(settings.batch.max_queue_size, 2048);
    assert_eq!(settings.metric_export_interval, Duration::from_secs(60));
    assert_eq!(settings.sampler, Sampler::ParentBased(Root::AlwaysOn));
    assert!(!settings.capture_content);
    assert_eq!(
        settings.resource,
        vec![("service.name".to_owned(), "tool-cli-daemon".to_owned())]
    );
}

#[test]
fn a_base_endpoint_with_a_path_keeps_it_and_a_signal_endpoint_is_used_as_is() {
    let settings = resolve(
        None,
        &[
            (
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                "https://gateway.example/otlp/",
            ),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://127.0.0.1:9999/custom",
            ),
        ],
    )
    .unwrap()
    .unwrap();
    assert_eq!(
        settings.traces.unwrap().endpoint.display_url(),
        "http://127.0.0.1:9999/custom"
    );
    let metrics = settings.metrics.unwrap();
    assert!(metrics.endpoint.secure);
    assert_eq!(
        metrics.endpoint.display_url(),
        "https://gateway.example:443/otlp/v1/metrics"
    );
}

#[test]
fn an_explicit_otlp_exporter_uses_the_default_endpoint() {
    let settings = resolve(
        None,
        &[
            ("OTEL_TRACES_EXPORTER", "otlp"),
            ("OTEL_METRICS_EXPORTER", "none"),
        ],
    )
    .unwrap()
    .unwrap();
    assert_eq!(
        settings.traces.unwrap().endpoint.display_url(),
        "http://localhost:4318/v1/traces"
    );
    assert!(settings.metrics.is_none());
}

#[test]
fn sdk_disabled_wins_over_everything() {
    let block = TelemetryConfig {
        endpoint: Some("http://collector:4318".to_owned()),
        ..TelemetryConfig::default()
    };
    assert_eq!(
        resolve(
            Some(&block),
            &[
                ("OTEL_SDK_DISABLED", "TRUE"),
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")
            ]
        )
        .unwrap(),
        None
    );
    // Both exporters `none` is off too.
    assert_eq!(
        resolve(
            Some(&block),
            &[
                ("OTEL_TRACES_EXPORTER", "none"),
                ("OTEL_METRICS_EXPORTER", "none")
            ]
        )
        .unwrap(),
        None
    );
}

#[test]
fn the_config_block_turns_export_on_and_variables_override_its_members() {
    let block: TelemetryConfig = serde_json::from_value(serde_json::json!({
        "endpoint": "http://collector:4318",
        "headers": {"Authorization": "Bearer from-config", "x-team": "tools"},
        "serviceName": "from-config",
        "resourceAttributes": {"deployment.environment": "ci"},
        "scheduleDelayMs": 250,
        "maxQueueSize": 100,
        "maxExportBatchSize": 500,
        "metricsExporter": "none",
        "compression": "gzip",
        "captureContent": true,
        "sampler": "traceidratio",
        "samplerArg": 0.5
    }))
    .unwrap();
    let settings = resolve(
        Some(&block),
        &[
            ("OTEL_SERVICE_NAME", "from-env"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "authorization=Bearer%20from-env",
            ),
            ("OTEL_BSP_MAX_QUEUE_SIZE", "64"),
        ],
    )
    .unwrap()
    .unwrap();
    assert!(settings.metrics.is_none());
    let traces = settings.traces.unwrap();
    assert_eq!(
        traces.headers,
        vec![
            ("x-team".to_owned(), "tools".to_owned()),
            ("authorization".to_owned(), "Bearer from-env".to_owned()),
        ]
    );
    assert_eq!(traces.compression, Compression::Gzip);
    assert_eq!(
        settings.resource[0],
        ("service.name".to_owned(), "from-env".to_owned())
    );
    assert!(
        settings
            .resource
            .contains(&("deployment.environment".to_owned(), "ci".to_owned()))
    );
    assert_eq!(settings.batch.schedule_delay, Duration::from_millis(250));
    assert_eq!(settings.batch.max_queue_size, 64);
    // A batch larger than the queue is clamped to it.
    assert_eq!(settings.batch.max_export_batch_size, 64);
    assert!(settings.capture_content);
    assert_eq!(settings.sampler, Sampler::TraceIdRatio(0.5));
}

#[test]
fn a_block_saying_enabled_false_is_off() {
    let block = TelemetryConfig {
        enabled: Some(false),
        endpoint: Some("http://collector:4318".to_owned()),
        ..TelemetryConfig::default()
    };
    assert_eq!(resolve(Some(&block), &[]).unwrap(), None);
}

#[test]
fn unknown_members_of_the_block_are_refused() {
    let error = serde_json::from_value::<TelemetryConfig>(serde_json::json!({"endpiont": "x"}))
        .unwrap_err()
        .to_string();
    assert!(error.contains("unknown field `endpiont`"), "{error}");
}

#[test]
fn headers_and_resource_attributes_are_percent_decoded() {
    let settings = resolve(
        None,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "api-key=a%2Cb%3Dc , x-tenant = team%20one",
            ),
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                "service.name=ignored,host.role=ci%20runner,service.namespace=tools",
            ),
        ],
    )
    .unwrap()
    .unwrap();
    assert_eq!(
        settings.traces.unwrap().headers,
        vec![
            ("api-key".to_owned(), "a,b=c".to_owned()),
            ("x-tenant".to_owned(), "team one".to_owned()),
        ]
    );
    // OTEL_SERVICE_NAME is unset, so service.name comes from the attributes.
    assert_eq!(
        settings.resource,
        vec![
            ("service.name".to_owned(), "ignored".to_owned()),
            ("host.role".to_owned(), "ci runner".to_owned()),
            ("service.namespace".to_owned(), "tools".to_owned()),
        ]
    );
}

#[test]
fn empty_variables_count_as_unset() {
    assert_eq!(
        resolve(
            None,
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", ""),
                ("OTEL_SDK_DISABLED", " ")
            ]
        )
        .unwrap(),
        None
    );
}

#[test]
fn grpc_is_refused_with_the_reason_and_the_fix() {
    let message = error_text(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
    ]);
    assert!(
        message.starts_with("OTEL_EXPORTER_OTLP_PROTOCOL=grpc:"),
        "{message}"
    );
    assert!(message.contains("http/protobuf"), "{message}");
    assert!(message.contains("4318"), "{message}");
    let message = error_text(&[("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json")]);
    assert!(
        message.starts_with("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json"),
        "{message}"
    );
}

#[test]
fn bad_values_name_the_variable_and_what_would_be_right() {
    // (variables, the variable the message must start with, a phrase of the expected value)
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a str);
    let cases: &[Case<'_>] = &[
        (
            &[("OTEL_BSP_MAX_QUEUE_SIZE", "lots")],
            "OTEL_BSP_MAX_QUEUE_SIZE",
            "whole number",
        ),
        (
            &[("OTEL_BSP_MAX_QUEUE_SIZE", "0")],
            "OTEL_BSP_MAX_QUEUE_SIZE",
            "from 1",
        ),
        (
            &[("OTEL_BSP_SCHEDULE_DELAY", "5s")],
            "OTEL_BSP_SCHEDULE_DELAY",
            "milliseconds",
        ),
        (
            &[("OTEL_EXPORTER_OTLP_TIMEOUT", "0")],
            "OTEL_EXPORTER_OTLP_TIMEOUT",
            "from 1",
        ),
        (
            &[("OTEL_METRIC_EXPORT_INTERVAL", "-5")],
            "OTEL_METRIC_EXPORT_INTERVAL",
            "whole number",
        ),
        (
            &[("OTEL_SDK_DISABLED", "yes")],
            "OTEL_SDK_DISABLED",
            "true or false",
        ),
        (
            &[("OTEL_TRACES_EXPORTER", "console")],
            "OTEL_TRACES_EXPORTER",
            "otlp or none",
        ),
        (
            &[("OTEL_METRICS_EXPORTER", "prometheus")],
            "OTEL_METRICS_EXPORTER",
            "GET /metrics",
        ),
        (
            &[("OTEL_TRACES_SAMPLER", "sometimes")],
            "OTEL_TRACES_SAMPLER",
            "always_on",
        ),
        (
            &[
                ("OTEL_TRACES_SAMPLER", "traceidratio"),
                ("OTEL_TRACES_SAMPLER_ARG", "half"),
            ],
            "OTEL_TRACES_SAMPLER_ARG",
            "ratio",
        ),
        (
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318")],
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "http://",
        ),
        (
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://c")],
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "http://",
        ),
        (
            &[("OTEL_EXPORTER_OTLP_COMPRESSION", "zstd")],
            "OTEL_EXPORTER_OTLP_COMPRESSION",
            "gzip or none",
        ),
        (
            &[("OTEL_RESOURCE_ATTRIBUTES", "team")],
            "OTEL_RESOURCE_ATTRIBUTES",
            "key=value",
        ),
        (
            &[("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "1")],
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
            "true or false",
        ),
    ];
    for (pairs, variable, expected) in cases {
        let message = error_text(pairs);
        assert!(message.starts_with(variable), "{variable}: {message}");
        assert!(message.contains(expected), "{variable}: {message}");
        assert!(!message.ends_with('.'), "{message}");
    }
}

#[test]
fn a_bad_header_never_repeats_its_value() {
    let message = error_text(&[("OTEL_EXPORTER_OTLP_HEADERS", "Bearer sk-live-123456")]);
    assert!(
        message.starts_with("OTEL_EXPORTER_OTLP_HEADERS"),
        "{message}"
    );
    assert!(!message.contains("sk-live"), "{message}");
    let message = error_text(&[("OTEL_EXPORTER_OTLP_HEADERS", "authorization=sk-live%0Amore")]);
    assert!(message.contains("control character"), "{message}");
    assert!(!message.contains("sk-live"), "{message}");
    let message = error_text(&[("OTEL_EXPORTER_OTLP_HEADERS", "bad name=sk-live")]);
    assert!(!message.contains("sk-live"), "{message}");
}

#[test]
fn credentials_in_the_endpoint_url_are_refused() {
    let message = error_text(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "https://user:pw@c:4318")]);
    assert!(message.contains("OTEL_EXPORTER_OTLP_HEADERS"), "{message}");
    assert!(!message.contains("pw@"), "{message}");
}

#[test]
fn config_members_are_named_in_messages() {
    let block = TelemetryConfig {
        protocol: Some("grpc".to_owned()),
        ..TelemetryConfig::default()
    };
    let message = resolve(Some(&block), &[]).unwrap_err().to_string();
    assert!(message.starts_with("telemetry.protocol=grpc"), "{message}");
    let block = TelemetryConfig {
        max_queue_size: Some(0),
        ..TelemetryConfig::default()
    };
    let message = resolve(Some(&block), &[]).unwrap_err().to_string();
    assert!(message.starts_with("telemetry.maxQueueSize"), "{message}");
}

#[test]
fn debug_output_never_shows_header_values() {
    let settings = resolve(
        None,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "authorization=Bearer%20sk-live-999",
            ),
        ],
    )
    .unwrap()
    .unwrap();
    let text = format!("{settings:?}");
    assert!(text.contains("authorization"), "{text}");
    assert!(!text.contains("sk-live-999"), "{text}");
}

#[test]
fn every_variable_read_is_listed() {
    // The list is what docs/observability.md documents: each entry is a real, distinct name.
    let mut names = VARIABLES.to_vec();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), VARIABLES.len());
    assert!(VARIABLES.iter().all(|name| name.starts_with("OTEL_")));
}
