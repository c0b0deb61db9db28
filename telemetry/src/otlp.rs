//! Spans and metric snapshots into the official OTLP protobuf messages (`opentelemetry-proto`),
//! and the resource every export carries. Pure: the exporter thread calls these, never a call's
//! path.

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{
    AnyValue, ArrayValue, InstrumentationScope, KeyValue, any_value,
};
use opentelemetry_proto::tonic::metrics::v1::{
    AggregationTemporality, Histogram, HistogramDataPoint, Metric, ResourceMetrics, ScopeMetrics,
    metric,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{
    ResourceSpans, ScopeSpans, Span, Status, span, status,
};

use crate::metrics::{Instrument, Metrics};
use crate::span::{AttributeValue, SpanKind, SpanRecord, Status as SpanStatus};

/// The instrumentation scope's name on every span and metric.
pub const SCOPE_NAME: &str = "tool-cli-telemetry";

/// W3C `sampled` flag, and the OTLP flag saying the parent's remoteness is known.
const FLAG_SAMPLED: u32 = 0x01;

fn text(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.to_owned())),
        }),
        ..Default::default()
    }
}

fn attribute(key: &str, value: &AttributeValue) -> KeyValue {
    let value = match value {
        AttributeValue::String(text) => any_value::Value::StringValue(text.clone()),
        AttributeValue::Int(number) => any_value::Value::IntValue(*number),
        AttributeValue::Double(number) => any_value::Value::DoubleValue(*number),
        AttributeValue::Bool(flag) => any_value::Value::BoolValue(*flag),
        AttributeValue::StringArray(texts) => any_value::Value::ArrayValue(ArrayValue {
            values: texts
                .iter()
                .map(|text| AnyValue {
                    value: Some(any_value::Value::StringValue(text.clone())),
                })
                .collect(),
        }),
    };
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue { value: Some(value) }),
        ..Default::default()
    }
}

/// The resource of every export: the configured attributes (`service.name` first), the
/// instance and the SDK.
pub fn resource(attributes: &[(String, String)], instance_id: &str) -> Resource {
    let mut all: Vec<KeyValue> = attributes
        .iter()
        .map(|(key, value)| text(key, value))
        .collect();
    if !attributes
        .iter()
        .any(|(key, _)| key == "service.instance.id")
    {
        all.push(text("service.instance.id", instance_id));
    }
    all.push(text("telemetry.sdk.name", SCOPE_NAME));
    all.push(text("telemetry.sdk.language", "rust"));
    all.push(text("telemetry.sdk.version", env!("CARGO_PKG_VERSION")));
    Resource {
        attributes: all,
        ..Default::default()
    }
}

fn scope() -> InstrumentationScope {
    InstrumentationScope {
        name: SCOPE_NAME.to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        ..Default::default()
    }
}

/// One span as OTLP carries it.
pub fn span(record: &SpanRecord) -> Span {
    Span {
        trace_id: record.trace_id.to_bytes().to_vec(),
        span_id: record.span_id.to_bytes().to_vec(),
        trace_state: record
            .trace_state
            .as_ref()
            .map(|state| state.as_str().to_owned())
            .unwrap_or_default(),
        parent_span_id: record
            .parent_span_id
            .map(|parent| parent.to_bytes().to_vec())
            .unwrap_or_default(),
        flags: if record.sampled { FLAG_SAMPLED } else { 0 },
        name: record.name.clone(),
        kind: match record.kind {
            SpanKind::Internal => span::SpanKind::Internal,
            SpanKind::Server => span::SpanKind::Server,
            SpanKind::Client => span::SpanKind::Client,
        } as i32,
        start_time_unix_nano: record.start_unix_nanos,
        end_time_unix_nano: record.end_unix_nanos,
        attributes: record
            .attributes
            .iter()
            .map(|item| attribute(item.key, &item.value))
            .collect(),
        status: match &record.status {
            SpanStatus::Unset => None,
            SpanStatus::Error(message) => Some(Status {
                message: message.clone(),
                code: status::StatusCode::Error as i32,
            }),
        },
        ..Default::default()
    }
}

/// One export request for `spans`.
pub fn trace_request(resource: &Resource, spans: &[SpanRecord]) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(resource.clone()),
            scope_spans: vec![ScopeSpans {
                scope: Some(scope()),
                spans: spans.iter().map(span).collect(),
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

/// One export request for every series of every instrument, cumulative, stamped `now`.
/// `None` when nothing was recorded yet.
pub fn metrics_request(
    resource: &Resource,
    metrics: &Metrics,
    now_unix_nanos: u64,
) -> Option<ExportMetricsServiceRequest> {
    let exported: Vec<Metric> = Instrument::ALL
        .iter()
        .filter_map(|instrument| {
            let series = metrics.snapshot(*instrument);
            if series.is_empty() {
                return None;
            }
            let bounds = instrument.bounds().to_vec();
            Some(Metric {
                name: instrument.name().to_owned(),
                description: instrument.description().to_owned(),
                unit: instrument.unit().to_owned(),
                data: Some(metric::Data::Histogram(Histogram {
                    data_points: series
                        .into_iter()
                        .map(|series| HistogramDataPoint {
                            attributes: series
                                .attributes
                                .iter()
                                .map(|(key, value)| text(key, value))
                                .collect(),
                            start_time_unix_nano: series.start_unix_nanos,
                            time_unix_nano: now_unix_nanos,
                            count: series.count,
                            sum: Some(series.sum),
                            bucket_counts: series.bucket_counts,
                            explicit_bounds: bounds.clone(),
                            min: series.min,
                            max: series.max,
                            ..Default::default()
                        })
                        .collect(),
                    aggregation_temporality: AggregationTemporality::Cumulative as i32,
                })),
                ..Default::default()
            })
        })
        .collect();
    if exported.is_empty() {
        return None;
    }
    Some(ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(resource.clone()),
            scope_metrics: vec![ScopeMetrics {
                scope: Some(scope()),
                metrics: exported,
                ..Default::default()
            }],
            ..Default::default()
        }],
    })
}
