//! What the exporter is started with: the standard `OTEL_*` environment variables and the
//! equivalent `telemetry` block of the config file, resolved into one [`TelemetrySettings`].
//!
//! Export is off unless asked for: a `telemetry` block (without `"enabled": false`), an OTLP
//! endpoint variable, or `OTEL_TRACES_EXPORTER` / `OTEL_METRICS_EXPORTER` set to `otlp`.
//! `OTEL_SDK_DISABLED=true` turns it off whatever else says. A variable overrides the member of
//! the block it mirrors (the operator's environment has the last word, as in every OpenTelemetry
//! SDK). An empty variable counts as unset, as the specification says.
//!
//! Resolution is pure (the environment comes in as a lookup) so every rule is unit-tested. A bad
//! value is an error naming the variable or member, saying what would be right; a header's value
//! is never repeated in an error (it is usually a credential).

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::sampler::Sampler;

/// Default collector of the OTLP/HTTP exporter (the specification's default).
pub const DEFAULT_ENDPOINT: &str = "http://localhost:4318";
/// Default delay between two span exports (`OTEL_BSP_SCHEDULE_DELAY`).
pub const DEFAULT_SCHEDULE_DELAY: Duration = Duration::from_millis(5000);
/// Default bound of the span queue (`OTEL_BSP_MAX_QUEUE_SIZE`).
pub const DEFAULT_MAX_QUEUE_SIZE: usize = 2048;
/// Default spans per export request (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE`).
pub const DEFAULT_MAX_EXPORT_BATCH_SIZE: usize = 512;
/// Default bound on one span export, retries included (`OTEL_BSP_EXPORT_TIMEOUT`).
pub const DEFAULT_EXPORT_TIMEOUT: Duration = Duration::from_millis(30_000);
/// Default bound on one HTTP request to the collector (`OTEL_EXPORTER_OTLP_TIMEOUT`).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_millis(10_000);
/// Default interval between metric exports (`OTEL_METRIC_EXPORT_INTERVAL`).
pub const DEFAULT_METRIC_EXPORT_INTERVAL: Duration = Duration::from_millis(60_000);
/// Default bound on one metric export (`OTEL_METRIC_EXPORT_TIMEOUT`).
pub const DEFAULT_METRIC_EXPORT_TIMEOUT: Duration = Duration::from_millis(30_000);
/// Largest queue accepted: beyond this a stalled collector would cost hundreds of MB.
pub const MAX_QUEUE_SIZE: usize = 1_000_000;

/// The `telemetry` block of the config file: one member per `OTEL_*` variable.
///
/// ```json
/// "telemetry": {
///   "endpoint": "https://collector.example:4318",
///   "headers": { "authorization": "Bearer ${OTLP_TOKEN}" },
///   "serviceName": "tool-cli-daemon",
///   "resourceAttributes": { "deployment.environment": "ci" },
///   "scheduleDelayMs": 5000, "maxQueueSize": 2048,
///   "metricsExporter": "none"
/// }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TelemetryConfig {
    /// `false` turns export off (like `OTEL_SDK_DISABLED=true`); a block without it is on.
    pub enabled: Option<bool>,
    /// Base URL of the collector's OTLP/HTTP receiver; `/v1/traces` and `/v1/metrics` are added.
    pub endpoint: Option<String>,
    /// Full URL for spans (used as is).
    pub traces_endpoint: Option<String>,
    /// Full URL for metrics (used as is).
    pub metrics_endpoint: Option<String>,
    /// `http/protobuf` (the only one supported).
    pub protocol: Option<String>,
    /// Headers sent with every export (credentials go here; never logged).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Bound on one HTTP request, in milliseconds.
    pub timeout_ms: Option<u64>,
    /// `gzip` or `none`.
    pub compression: Option<String>,
    /// A PEM file of CA certificates trusted for an `https` collector, besides the system's.
    pub certificate: Option<PathBuf>,
    /// `service.name` of the resource.
    pub service_name: Option<String>,
    /// More resource attributes.
    #[serde(default)]
    pub resource_attributes: BTreeMap<String, String>,
    /// Delay between span exports, in milliseconds.
    pub schedule_delay_ms: Option<u64>,
    /// Spans held while the collector is slow; more are dropped and counted.
    pub max_queue_size: Option<usize>,
    /// Spans per export request.
    pub max_export_batch_size: Option<usize>,
    /// Bound on one span export, retries included, in milliseconds.
    pub export_timeout_ms: Option<u64>,
    /// Interval between metric exports, in milliseconds.
    pub metric_export_interval_ms: Option<u64>,
    /// `otlp` or `none`.
    pub traces_exporter: Option<String>,
    /// `otlp` or `none`.
    pub metrics_exporter: Option<String>,
    /// `always_on`, `always_off`, `traceidratio`, `parentbased_always_on` (default), …
    pub sampler: Option<String>,
    /// The ratio of `traceidratio` samplers, in `[0, 1]`.
    pub sampler_arg: Option<f64>,
    /// Whether tool arguments and results go on spans (redacted); off by default.
    pub capture_content: Option<bool>,
}

/// Where a setting came from, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// An environment variable.
    Env(&'static str),
    /// A member of the config's `telemetry` block.
    Config(&'static str),
}

impl fmt::Display for Origin {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Env(name) => write!(formatter, "{name}"),
            Origin::Config(member) => write!(formatter, "telemetry.{member}"),
        }
    }
}

/// A setting with a bad value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// The value is not what the setting takes.
    #[error("{origin}: {problem}; expected {expected}")]
    Invalid {
        /// The variable or member.
        origin: Origin,
        /// What is wrong (quoting the value unless it may be a secret).
        problem: String,
        /// What would be right.
        expected: String,
    },
    /// A protocol the exporter does not speak.
    #[error(
        "{origin}={value}: tool-cli exports OTLP over HTTP with protobuf only (no gRPC or JSON \
         client is built in, to keep the daemon small); set it to http/protobuf and point the \
         endpoint at the collector's OTLP/HTTP receiver (port 4318 by default)"
    )]
    UnsupportedProtocol {
        /// The variable or member.
        origin: Origin,
        /// The protocol asked for.
        value: String,
    },
}

/// What the exporter is started with.
#[derive(Clone, PartialEq)]
pub struct TelemetrySettings {
    /// Where spans go; `None` when traces are not exported.
    pub traces: Option<SignalSettings>,
    /// Where metrics go; `None` when metrics are not exported.
    pub metrics: Option<SignalSettings>,
    /// The resource: `service.name` first, then the configured attributes in order.
    pub resource: Vec<(String, String)>,
    /// The span queue and its batches.
    pub batch: BatchSettings,
    /// Interval between metric exports.
    pub metric_export_interval: Duration,
    /// Bound on one metric export.
    pub metric_export_timeout: Duration,
    /// Which traces are recorded.
    pub sampler: Sampler,
    /// Whether tool arguments and results go on spans (redacted).
    pub capture_content: bool,
}

impl fmt::Debug for TelemetrySettings {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("TelemetrySettings")
            .field("traces", &self.traces)
            .field("metrics", &self.metrics)
            .field("resource", &self.resource)
            .field("batch", &self.batch)
            .field("metric_export_interval", &self.metric_export_interval)
            .field("sampler", &self.sampler)
            .field("capture_content", &self.capture_content)
            .finish_non_exhaustive()
    }
}

/// The span queue and its batches (`OTEL_BSP_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchSettings {
    /// Longest a span waits before its batch is sent.
    pub schedule_delay: Duration,
    /// Spans held; more are dropped and counted.
    pub max_queue_size: usize,
    /// Spans per request.
    pub max_export_batch_size: usize,
    /// Bound on one export, retries included.
    pub export_timeout: Duration,
}

impl Default for BatchSettings {
    fn default() -> BatchSettings {
        BatchSettings {
            schedule_delay: DEFAULT_SCHEDULE_DELAY,
            max_queue_size: DEFAULT_MAX_QUEUE_SIZE,
            max_export_batch_size: DEFAULT_MAX_EXPORT_BATCH_SIZE,
            export_timeout: DEFAULT_EXPORT_TIMEOUT,
        }
    }
}

/// Where one signal goes and how.
#[derive(Clone, PartialEq)]
pub struct SignalSettings {
    /// The full URL requests are posted to.
    pub endpoint: Endpoint,
    /// Headers sent with each request; values are secrets (`Debug` shows names only).
    pub headers: Vec<(String, String)>,
    /// Bound on one HTTP request.
    pub timeout: Duration,
    /// Body compression.
    pub compression: Compression,
    /// Extra CA certificates for an `https` endpoint.
    pub certificate: Option<PathBuf>,
}

impl fmt::Debug for SignalSettings {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        formatter
            .debug_struct("SignalSettings")
            .field("endpoint", &self.endpoint)
            .field("headers", &header_names)
            .field("timeout", &self.timeout)
            .field("compression", &self.compression)
            .field("certificate", &self.certificate)
            .finish()
    }
}

/// Body compression of export requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Plain protobuf.
    None,
    /// `Content-Encoding: gzip`.
    Gzip,
}

/// A validated collector URL, split for the HTTP client.
#[derive(Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `http` or `https`.
    pub secure: bool,
    /// Host name or address (IPv6 without brackets).
    pub host: String,
    /// Port (the scheme's default when the URL names none).
    pub port: u16,
    /// Path and query, starting with `/`.
    pub path_and_query: String,
}

impl Endpoint {
    /// The URL without userinfo, for `health` and messages.
    pub fn display_url(&self) -> String {
        let scheme = if self.secure { "https" } else { "http" };
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        format!("{scheme}://{host}:{}{}", self.port, self.path_and_query)
    }

    /// The `Host` header value.
    pub fn authority(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        format!("{host}:{}", self.port)
    }
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}", self.display_url())
    }
}

/// Which signal a setting is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Signal {
    Traces,
    Metrics,
}

impl Signal {
    fn path(self) -> &'static str {
        match self {
            Signal::Traces => "v1/traces",
            Signal::Metrics => "v1/metrics",
        }
    }
}

/// The variables of one signal.
struct SignalVariables {
    endpoint: &'static str,
    protocol: &'static str,
    headers: &'static str,
    timeout: &'static str,
    compression: &'static str,
    certificate: &'static str,
    exporter: &'static str,
}

const TRACES: SignalVariables = SignalVariables {
    endpoint: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    protocol: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    headers: "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    timeout: "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
    compression: "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
    certificate: "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
    exporter: "OTEL_TRACES_EXPORTER",
};

const METRICS: SignalVariables = SignalVariables {
    endpoint: "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    protocol: "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
    headers: "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
    timeout: "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT",
    compression: "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION",
    certificate: "OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE",
    exporter: "OTEL_METRICS_EXPORTER",
};

/// Every variable read, for `docs/observability.md` and the tests.
pub const VARIABLES: &[&str] = &[
    "OTEL_SDK_DISABLED",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
    "OTEL_EXPORTER_OTLP_TIMEOUT",
    "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
    "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT",
    "OTEL_EXPORTER_OTLP_COMPRESSION",
    "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
    "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION",
    "OTEL_EXPORTER_OTLP_CERTIFICATE",
    "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
    "OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE",
    "OTEL_SERVICE_NAME",
    "OTEL_RESOURCE_ATTRIBUTES",
    "OTEL_BSP_SCHEDULE_DELAY",
    "OTEL_BSP_MAX_QUEUE_SIZE",
    "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
    "OTEL_BSP_EXPORT_TIMEOUT",
    "OTEL_METRIC_EXPORT_INTERVAL",
    "OTEL_METRIC_EXPORT_TIMEOUT",
    "OTEL_TRACES_EXPORTER",
    "OTEL_METRICS_EXPORTER",
    "OTEL_TRACES_SAMPLER",
    "OTEL_TRACES_SAMPLER_ARG",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
];

/// Reads the environment through `lookup`, treating an empty value as unset.
struct Environment<'a> {
    lookup: &'a dyn Fn(&str) -> Option<String>,
}

impl Environment<'_> {
    fn get(&self, name: &'static str) -> Option<(Origin, String)> {
        (self.lookup)(name)
            .filter(|value| !value.trim().is_empty())
            .map(|value| (Origin::Env(name), value.trim().to_owned()))
    }
}

impl TelemetrySettings {
    /// Resolves the config's `telemetry` block (if any) and the environment (`lookup`, e.g.
    /// `|name| std::env::var(name).ok()`) into settings; `Ok(None)` when export is off.
    /// `default_service_name` is `service.name` when neither says otherwise.
    pub fn resolve(
        config: Option<&TelemetryConfig>,
        lookup: &dyn Fn(&str) -> Option<String>,
        default_service_name: &str,
    ) -> Result<Option<TelemetrySettings>, SettingsError> {
        let env = Environment { lookup };
        let empty = TelemetryConfig::default();
        let block = config.unwrap_or(&empty);

        // Every value is checked even when export ends up off, so a typo shows at start-up.
        let disabled_by_env = match env.get("OTEL_SDK_DISABLED") {
            Some((origin, value)) => parse_bool(origin, &value)?,
            None => false,
        };
        let traces_exporter = exporter(
            env.get(TRACES.exporter),
            block.traces_exporter.as_deref(),
            "tracesExporter",
        )?;
        let metrics_exporter = exporter(
            env.get(METRICS.exporter),
            block.metrics_exporter.as_deref(),
            "metricsExporter",
        )?;
        let asked_by_env = [
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            TRACES.endpoint,
            METRICS.endpoint,
        ]
        .iter()
        .any(|name| env.get(name).is_some())
            || traces_exporter.explicit_otlp_from_env
            || metrics_exporter.explicit_otlp_from_env;
        let asked_by_config = config.is_some() && block.enabled != Some(false);
        let traces = signal(&env, block, Signal::Traces, &TRACES)?;
        let metrics = signal(&env, block, Signal::Metrics, &METRICS)?;
        let resource = resource(&env, block, default_service_name)?;
        let batch = batch(&env, block)?;
        let metric_export_interval = milliseconds(
            env.get("OTEL_METRIC_EXPORT_INTERVAL"),
            block
                .metric_export_interval_ms
                .map(|ms| (Origin::Config("metricExportIntervalMs"), ms)),
            DEFAULT_METRIC_EXPORT_INTERVAL,
            true,
        )?;
        let metric_export_timeout = milliseconds(
            env.get("OTEL_METRIC_EXPORT_TIMEOUT"),
            None,
            DEFAULT_METRIC_EXPORT_TIMEOUT,
            true,
        )?;
        let sampler = sampler(&env, block)?;
        let capture_content = match env.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT") {
            Some((origin, value)) => parse_bool(origin, &value)?,
            None => block.capture_content.unwrap_or(false),
        };

        if disabled_by_env || !(asked_by_env || asked_by_config) {
            return Ok(None);
        }
        let traces = traces_exporter.on.then_some(traces);
        let metrics = metrics_exporter.on.then_some(metrics);
        if traces.is_none() && metrics.is_none() {
            return Ok(None);
        }
        Ok(Some(TelemetrySettings {
            traces,
            metrics,
            resource,
            batch,
            metric_export_interval,
            metric_export_timeout,
            sampler,
            capture_content,
        }))
    }
}

/// A signal's exporter choice.
struct ExporterChoice {
    on: bool,
    explicit_otlp_from_env: bool,
}

fn exporter(
    env: Option<(Origin, String)>,
    config: Option<&str>,
    member: &'static str,
) -> Result<ExporterChoice, SettingsError> {
    let from_env = env.is_some();
    let (origin, value) = match env {
        Some((origin, value)) => (origin, value),
        None => match config {
            Some(value) => (Origin::Config(member), value.trim().to_owned()),
            None => {
                return Ok(ExporterChoice {
                    on: true,
                    explicit_otlp_from_env: false,
                });
            }
        },
    };
    // The specification allows a list; only one exporter at a time is supported here.
    match value.to_ascii_lowercase().as_str() {
        "otlp" => Ok(ExporterChoice {
            on: true,
            explicit_otlp_from_env: from_env,
        }),
        "none" => Ok(ExporterChoice {
            on: false,
            explicit_otlp_from_env: false,
        }),
        _ => Err(SettingsError::Invalid {
            origin,
            problem: format!("{value:?} is not an exporter tool-cli has"),
            expected: "otlp or none (console, zipkin and prometheus exporters are not built \
                       in; the daemon serves Prometheus text at GET /metrics)"
                .to_owned(),
        }),
    }
}

fn signal(
    env: &Environment<'_>,
    block: &TelemetryConfig,
    signal: Signal,
    names: &SignalVariables,
) -> Result<SignalSettings, SettingsError> {
    let (member, signal_member) = match signal {
        Signal::Traces => ("tracesEndpoint", block.traces_endpoint.as_deref()),
        Signal::Metrics => ("metricsEndpoint", block.metrics_endpoint.as_deref()),
    };
    let endpoint = if let Some((origin, url)) = env.get(names.endpoint) {
        parse_endpoint(origin, &url, None)?
    } else if let Some((origin, url)) = env.get("OTEL_EXPORTER_OTLP_ENDPOINT") {
        parse_endpoint(origin, &url, Some(signal))?
    } else if let Some(url) = signal_member {
        parse_endpoint(Origin::Config(member), url, None)?
    } else if let Some(url) = block.endpoint.as_deref() {
        parse_endpoint(Origin::Config("endpoint"), url, Some(signal))?
    } else {
        parse_endpoint(Origin::Config("endpoint"), DEFAULT_ENDPOINT, Some(signal))?
    };

    for (origin, value) in [
        env.get(names.protocol),
        env.get("OTEL_EXPORTER_OTLP_PROTOCOL"),
        block
            .protocol
            .clone()
            .map(|value| (Origin::Config("protocol"), value)),
    ]
    .into_iter()
    .flatten()
    .take(1)
    {
        check_protocol(origin, &value)?;
    }

    let mut headers: Vec<(String, String)> = block
        .headers
        .iter()
        .map(|(name, value)| check_header(Origin::Config("headers"), name, value))
        .collect::<Result<_, _>>()?;
    for name in ["OTEL_EXPORTER_OTLP_HEADERS", names.headers] {
        if let Some((origin, text)) = env.get(name) {
            for (key, value) in parse_key_values(origin, &text, true)? {
                let (key, value) = check_header(origin, &key, &value)?;
                // A later source replaces a header of the same name (case-insensitively).
                headers.retain(|(existing, _)| !existing.eq_ignore_ascii_case(&key));
                headers.push((key, value));
            }
        }
    }

    let timeout = milliseconds(
        env.get(names.timeout)
            .or_else(|| env.get("OTEL_EXPORTER_OTLP_TIMEOUT")),
        block.timeout_ms.map(|ms| (Origin::Config("timeoutMs"), ms)),
        DEFAULT_REQUEST_TIMEOUT,
        true,
    )?;
    let compression = match env
        .get(names.compression)
        .or_else(|| env.get("OTEL_EXPORTER_OTLP_COMPRESSION"))
        .or_else(|| {
            block
                .compression
                .clone()
                .map(|value| (Origin::Config("compression"), value))
        }) {
        None => Compression::None,
        Some((origin, value)) => match value.to_ascii_lowercase().as_str() {
            "gzip" => Compression::Gzip,
            "none" => Compression::None,
            _ => {
                return Err(SettingsError::Invalid {
                    origin,
                    problem: format!("{value:?} is not a compression tool-cli has"),
                    expected: "gzip or none".to_owned(),
                });
            }
        },
    };
    let certificate = env
        .get(names.certificate)
        .or_else(|| env.get("OTEL_EXPORTER_OTLP_CERTIFICATE"))
        .map(|(_, path)| PathBuf::from(path))
        .or_else(|| block.certificate.clone());
    Ok(SignalSettings {
        endpoint,
        headers,
        timeout,
        compression,
        certificate,
    })
}

fn check_protocol(origin: Origin, value: &str) -> Result<(), SettingsError> {
    match value {
        "http/protobuf" => Ok(()),
        "grpc" | "http/json" => Err(SettingsError::UnsupportedProtocol {
            origin,
            value: value.to_owned(),
        }),
        _ => Err(SettingsError::Invalid {
            origin,
            problem: format!("{value:?} is not an OTLP protocol"),
            expected: "http/protobuf".to_owned(),
        }),
    }
}

/// A header name and value as HTTP allows them; the value is never quoted back.
fn check_header(
    origin: Origin,
    name: &str,
    value: &str,
) -> Result<(String, String), SettingsError> {
    let name = name.trim();
    let token = !name.is_empty()
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte));
    if !token {
        return Err(SettingsError::Invalid {
            origin,
            problem: format!("{name:?} is not a valid HTTP header name"),
            expected: "letters, digits and !#$%&'*+-.^_`|~".to_owned(),
        });
    }
    let value = value.trim();
    if value
        .bytes()
        .any(|byte| (byte < 0x20 && byte != b'\t') || byte == 0x7f)
    {
        return Err(SettingsError::Invalid {
            origin,
            problem: format!("the value of header {name:?} holds a control character"),
            expected: "printable text (percent-encode anything else in OTEL_* variables)"
                .to_owned(),
        });
    }
    Ok((name.to_ascii_lowercase(), value.to_owned()))
}

/// `key=value,key=value` with percent-encoded values (W3C Baggage syntax, as the specification
/// uses for `OTEL_EXPORTER_OTLP_HEADERS` and `OTEL_RESOURCE_ATTRIBUTES`). `secret_values` keeps
/// the values out of messages.
fn parse_key_values(
    origin: Origin,
    text: &str,
    secret_values: bool,
) -> Result<Vec<(String, String)>, SettingsError> {
    let mut pairs = Vec::new();
    for (index, entry) in text.split(',').enumerate() {
        let entry = entry.trim();
        if entry.is_empty() {
            continue;
        }
        let Some((key, value)) = entry.split_once('=') else {
            let problem = if secret_values {
                format!("entry {} has no '='", index + 1)
            } else {
                format!("entry {} ({entry:?}) has no '='", index + 1)
            };
            return Err(SettingsError::Invalid {
                origin,
                problem,
                expected: "key=value pairs separated by commas, values percent-encoded".to_owned(),
            });
        };
        let key = key.trim();
        if key.is_empty() {
            return Err(SettingsError::Invalid {
                origin,
                problem: format!("entry {} has an empty key", index + 1),
                expected: "key=value pairs separated by commas".to_owned(),
            });
        }
        let decoded = percent_encoding::percent_decode_str(value.trim())
            .decode_utf8()
            .map_err(|_| SettingsError::Invalid {
                origin,
                problem: format!("the value of {key:?} is not UTF-8 once percent-decoded"),
                expected: "percent-encoded UTF-8".to_owned(),
            })?;
        pairs.push((key.to_owned(), decoded.into_owned()));
    }
    Ok(pairs)
}

fn parse_endpoint(
    origin: Origin,
    text: &str,
    append_signal: Option<Signal>,
) -> Result<Endpoint, SettingsError> {
    let invalid = |problem: String| SettingsError::Invalid {
        origin,
        problem,
        expected: "an http:// or https:// URL such as http://localhost:4318".to_owned(),
    };
    let url = url::Url::parse(text.trim())
        .map_err(|error| invalid(format!("{text:?} is not a URL ({error})")))?;
    let secure = match url.scheme() {
        "http" => false,
        "https" => true,
        other => {
            return Err(invalid(format!(
                "the scheme {other:?} is not http or https"
            )));
        }
    };
    if !url.username().is_empty() || url.password().is_some() {
        // A password in a URL ends up in logs; headers are the place for credentials.
        return Err(SettingsError::Invalid {
            origin,
            problem: "the URL carries a user name or password".to_owned(),
            expected: "credentials in OTEL_EXPORTER_OTLP_HEADERS (or telemetry.headers), not in \
                       the URL"
                .to_owned(),
        });
    }
    let host = match url.host() {
        Some(url::Host::Domain(domain)) => domain.to_owned(),
        Some(url::Host::Ipv4(address)) => address.to_string(),
        Some(url::Host::Ipv6(address)) => address.to_string(),
        None => return Err(invalid(format!("{text:?} names no host"))),
    };
    let port = url
        .port_or_known_default()
        .ok_or_else(|| invalid(format!("{text:?} names no port")))?;
    let mut path = url.path().to_owned();
    if let Some(signal) = append_signal {
        if !path.ends_with('/') {
            path.push('/');
        }
        path.push_str(signal.path());
    }
    if let Some(query) = url.query() {
        path.push('?');
        path.push_str(query);
    }
    Ok(Endpoint {
        secure,
        host,
        port,
        path_and_query: path,
    })
}

fn resource(
    env: &Environment<'_>,
    block: &TelemetryConfig,
    default_service_name: &str,
) -> Result<Vec<(String, String)>, SettingsError> {
    let mut attributes: Vec<(String, String)> = block
        .resource_attributes
        .iter()
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    if let Some((origin, text)) = env.get("OTEL_RESOURCE_ATTRIBUTES") {
        for (key, value) in parse_key_values(origin, &text, false)? {
            attributes.retain(|(existing, _)| existing != &key);
            attributes.push((key, value));
        }
    }
    // `OTEL_SERVICE_NAME` wins over a `service.name` in the attributes, as the spec says.
    let service_name = env
        .get("OTEL_SERVICE_NAME")
        .map(|(_, name)| name)
        .or_else(|| block.service_name.clone())
        .or_else(|| {
            attributes
                .iter()
                .find(|(key, _)| key == "service.name")
                .map(|(_, value)| value.clone())
        })
        .unwrap_or_else(|| default_service_name.to_owned());
    attributes.retain(|(key, _)| key != "service.name");
    attributes.insert(0, ("service.name".to_owned(), service_name));
    Ok(attributes)
}

fn batch(env: &Environment<'_>, block: &TelemetryConfig) -> Result<BatchSettings, SettingsError> {
    let schedule_delay = milliseconds(
        env.get("OTEL_BSP_SCHEDULE_DELAY"),
        block
            .schedule_delay_ms
            .map(|ms| (Origin::Config("scheduleDelayMs"), ms)),
        DEFAULT_SCHEDULE_DELAY,
        false,
    )?;
    let max_queue_size = count(
        env.get("OTEL_BSP_MAX_QUEUE_SIZE"),
        block
            .max_queue_size
            .map(|size| (Origin::Config("maxQueueSize"), size)),
        DEFAULT_MAX_QUEUE_SIZE,
        "spans",
    )?;
    let max_export_batch_size = count(
        env.get("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"),
        block
            .max_export_batch_size
            .map(|size| (Origin::Config("maxExportBatchSize"), size)),
        DEFAULT_MAX_EXPORT_BATCH_SIZE,
        "spans",
    )?;
    let export_timeout = milliseconds(
        env.get("OTEL_BSP_EXPORT_TIMEOUT"),
        block
            .export_timeout_ms
            .map(|ms| (Origin::Config("exportTimeoutMs"), ms)),
        DEFAULT_EXPORT_TIMEOUT,
        true,
    )?;
    Ok(BatchSettings {
        schedule_delay,
        max_queue_size,
        // A batch larger than the queue could never fill; the specification clamps it too.
        max_export_batch_size: max_export_batch_size.min(max_queue_size),
        export_timeout,
    })
}

fn sampler(env: &Environment<'_>, block: &TelemetryConfig) -> Result<Sampler, SettingsError> {
    let (origin, name) = match env.get("OTEL_TRACES_SAMPLER") {
        Some(found) => found,
        None => match &block.sampler {
            Some(name) => (Origin::Config("sampler"), name.clone()),
            None => return Ok(Sampler::default()),
        },
    };
    let argument = match env.get("OTEL_TRACES_SAMPLER_ARG") {
        Some((arg_origin, text)) => {
            Some(text.parse::<f64>().map_err(|_| SettingsError::Invalid {
                origin: arg_origin,
                problem: format!("{text:?} is not a number"),
                expected: "a ratio from 0 to 1, such as 0.25".to_owned(),
            })?)
        }
        None => block.sampler_arg,
    };
    Sampler::parse(&name, argument).map_err(|expected| SettingsError::Invalid {
        origin,
        problem: format!("{name:?} with argument {argument:?} is not a sampler tool-cli has"),
        expected,
    })
}

fn parse_bool(origin: Origin, value: &str) -> Result<bool, SettingsError> {
    match value.to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(SettingsError::Invalid {
            origin,
            problem: format!("{value:?} is not a boolean"),
            expected: "true or false".to_owned(),
        }),
    }
}

/// A duration in milliseconds from a variable (text) or a member (number); `positive` refuses 0.
fn milliseconds(
    env: Option<(Origin, String)>,
    config: Option<(Origin, u64)>,
    default: Duration,
    positive: bool,
) -> Result<Duration, SettingsError> {
    let expected = || {
        if positive {
            "a whole number of milliseconds from 1 to 3600000".to_owned()
        } else {
            "a whole number of milliseconds from 0 to 3600000".to_owned()
        }
    };
    let (origin, ms) = match env {
        Some((origin, text)) => {
            let ms = text.parse::<u64>().map_err(|_| SettingsError::Invalid {
                origin,
                problem: format!("{text:?} is not a whole number"),
                expected: expected(),
            })?;
            (origin, ms)
        }
        None => match config {
            Some(found) => found,
            None => return Ok(default),
        },
    };
    if ms > 3_600_000 || (positive && ms == 0) {
        return Err(SettingsError::Invalid {
            origin,
            problem: format!("{ms} is out of range"),
            expected: expected(),
        });
    }
    Ok(Duration::from_millis(ms))
}

fn count(
    env: Option<(Origin, String)>,
    config: Option<(Origin, usize)>,
    default: usize,
    unit: &str,
) -> Result<usize, SettingsError> {
    let expected = || format!("a whole number of {unit} from 1 to {MAX_QUEUE_SIZE}");
    let (origin, value) = match env {
        Some((origin, text)) => {
            let value = text.parse::<usize>().map_err(|_| SettingsError::Invalid {
                origin,
                problem: format!("{text:?} is not a whole number"),
                expected: expected(),
            })?;
            (origin, value)
        }
        None => match config {
            Some(found) => found,
            None => return Ok(default),
        },
    };
    if value == 0 || value > MAX_QUEUE_SIZE {
        return Err(SettingsError::Invalid {
            origin,
            problem: format!("{value} is out of range"),
            expected: expected(),
        });
    }
    Ok(value)
}

#[cfg(test)]
mod tests;
