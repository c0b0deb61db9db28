//! The Prometheus text exposition format (version 0.0.4) of the daemon's samples. Pure: plain
//! values in, text out.

use std::fmt::Write as _;

use super::process::ProcessSample;
use super::{LATENCY_BUCKETS, ToolSample};

/// One server as the page shows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ServerSample {
    pub(crate) name: String,
    /// `ready`, `connecting`, `restarting`, `down`, `disabled` or `exited`.
    pub(crate) state: &'static str,
    /// `closed`, `open` or `halfOpen`.
    pub(crate) breaker: &'static str,
    pub(crate) restarts: u64,
    pub(crate) in_flight: u64,
    pub(crate) queued: u64,
    pub(crate) tools: u64,
    pub(crate) uptime_seconds: Option<f64>,
}

/// A per-server family: name, type, help, and how to read it off a sample.
type ServerFamily = (
    &'static str,
    &'static str,
    &'static str,
    fn(&ServerSample) -> f64,
);

/// A per-tool counter family: name, help, and how to read it off a sample.
type ToolFamily = (&'static str, &'static str, fn(&ToolSample) -> u64);

const STATES: [&str; 6] = [
    "ready",
    "connecting",
    "restarting",
    "down",
    "disabled",
    "exited",
];
const BREAKER_STATES: [&str; 3] = ["closed", "open", "halfOpen"];

/// Escapes a label value: backslash, double quote and newline.
fn label(value: &str) -> String {
    let mut escaped = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => escaped.push_str("\\\\"),
            '"' => escaped.push_str("\\\""),
            '\n' => escaped.push_str("\\n"),
            c => escaped.push(c),
        }
    }
    escaped
}

/// A float as Prometheus writes it.
fn number(value: f64) -> String {
    if value.is_infinite() {
        if value > 0.0 { "+Inf" } else { "-Inf" }.to_owned()
    } else {
        format!("{value}")
    }
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// The whole page.
pub(crate) fn render(
    servers: &[ServerSample],
    tools: &[ToolSample],
    process: &ProcessSample,
) -> String {
    let mut out = String::new();

    header(
        &mut out,
        "tool_cli_build_info",
        "gauge",
        "The daemon's version; always 1.",
    );
    let _ = writeln!(
        out,
        "tool_cli_build_info{{version=\"{}\"}} 1",
        env!("CARGO_PKG_VERSION")
    );

    header(&mut out, "tool_cli_servers", "gauge", "Configured servers.");
    let _ = writeln!(out, "tool_cli_servers {}", servers.len());

    header(
        &mut out,
        "tool_cli_server_state",
        "gauge",
        "1 for the state each server is in, 0 for the others.",
    );
    for server in servers {
        for state in STATES {
            let _ = writeln!(
                out,
                "tool_cli_server_state{{server=\"{}\",state=\"{state}\"}} {}",
                label(&server.name),
                u8::from(server.state == state)
            );
        }
    }
    header(
        &mut out,
        "tool_cli_server_breaker_state",
        "gauge",
        "1 for the state each server's circuit breaker is in, 0 for the others.",
    );
    for server in servers {
        for state in BREAKER_STATES {
            let _ = writeln!(
                out,
                "tool_cli_server_breaker_state{{server=\"{}\",state=\"{state}\"}} {}",
                label(&server.name),
                u8::from(server.breaker == state)
            );
        }
    }
    let per_server: [ServerFamily; 4] = [
        (
            "tool_cli_server_restarts_total",
            "counter",
            "Times each server was restarted (crash, failed start or on request).",
            |s| s.restarts as f64,
        ),
        (
            "tool_cli_server_in_flight_calls",
            "gauge",
            "Calls executing on each server now.",
            |s| s.in_flight as f64,
        ),
        (
            "tool_cli_server_queued_calls",
            "gauge",
            "Calls waiting for a slot on each server now.",
            |s| s.queued as f64,
        ),
        (
            "tool_cli_server_tools",
            "gauge",
            "Tools each server offers (the last list known).",
            |s| s.tools as f64,
        ),
    ];
    for (name, kind, help, value) in per_server {
        header(&mut out, name, kind, help);
        for server in servers {
            let _ = writeln!(
                out,
                "{name}{{server=\"{}\"}} {}",
                label(&server.name),
                number(value(server))
            );
        }
    }
    header(
        &mut out,
        "tool_cli_server_uptime_seconds",
        "gauge",
        "How long each connected server's current connection has been up.",
    );
    for server in servers {
        if let Some(uptime) = server.uptime_seconds {
            let _ = writeln!(
                out,
                "tool_cli_server_uptime_seconds{{server=\"{}\"}} {}",
                label(&server.name),
                number(uptime)
            );
        }
    }

    let per_tool: [ToolFamily; 3] = [
        (
            "tool_cli_tool_calls_total",
            "Finished tool calls (dry-runs excluded); server is empty for a call that never resolved one.",
            |t| t.calls,
        ),
        (
            "tool_cli_tool_errors_total",
            "Tool calls that did not succeed (an error, or a result with isError).",
            |t| t.errors,
        ),
        (
            "tool_cli_tool_refused_total",
            "Tool calls refused before anything was sent (policy, validation, breaker, busy).",
            |t| t.refused,
        ),
    ];
    for (name, help, value) in per_tool {
        header(&mut out, name, "counter", help);
        for tool in tools {
            let _ = writeln!(
                out,
                "{name}{{server=\"{}\",tool=\"{}\"}} {}",
                label(&tool.server),
                label(&tool.tool),
                value(tool)
            );
        }
    }
    header(
        &mut out,
        "tool_cli_tool_call_duration_seconds",
        "histogram",
        "Tool call latency, from arrival to answer.",
    );
    for tool in tools {
        let labels = format!(
            "server=\"{}\",tool=\"{}\"",
            label(&tool.server),
            label(&tool.tool)
        );
        let mut cumulative = 0;
        for (index, count) in tool.buckets.iter().enumerate() {
            cumulative += count;
            let bound = LATENCY_BUCKETS.get(index).copied().unwrap_or(f64::INFINITY);
            let _ = writeln!(
                out,
                "tool_cli_tool_call_duration_seconds_bucket{{{labels},le=\"{}\"}} {cumulative}",
                number(bound)
            );
        }
        let _ = writeln!(
            out,
            "tool_cli_tool_call_duration_seconds_sum{{{labels}}} {}",
            number(tool.latency_seconds_sum)
        );
        let _ = writeln!(
            out,
            "tool_cli_tool_call_duration_seconds_count{{{labels}}} {cumulative}"
        );
    }

    let process_metrics: [(&str, &str, &str, Option<f64>); 6] = [
        (
            "process_cpu_seconds_total",
            "counter",
            "Total user and system CPU time spent in seconds.",
            process.cpu_seconds,
        ),
        (
            "process_resident_memory_bytes",
            "gauge",
            "Resident memory size in bytes.",
            process.resident_memory_bytes.map(|v| v as f64),
        ),
        (
            "process_virtual_memory_bytes",
            "gauge",
            "Virtual memory size in bytes.",
            process.virtual_memory_bytes.map(|v| v as f64),
        ),
        (
            "process_open_fds",
            "gauge",
            "Number of open file descriptors.",
            process.open_fds.map(|v| v as f64),
        ),
        (
            "process_threads",
            "gauge",
            "Number of OS threads in the process.",
            process.threads.map(|v| v as f64),
        ),
        (
            "process_start_time_seconds",
            "gauge",
            "Start time of the process since unix epoch in seconds.",
            process.start_time_seconds,
        ),
    ];
    for (name, kind, help, value) in process_metrics {
        if let Some(value) = value {
            header(&mut out, name, kind, help);
            let _ = writeln!(out, "{name} {}", number(value));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(name: &str) -> ServerSample {
        ServerSample {
            name: name.to_owned(),
            state: "ready",
            breaker: "open",
            restarts: 2,
            in_flight: 1,
            queued: 0,
            tools: 14,
            uptime_seconds: Some(1.5),
        }
    }

    #[test]
    fn every_family_is_declared_once_and_states_are_one_hot() {
        let tools = vec![ToolSample {
            server: "fs".to_owned(),
            tool: "read_file".to_owned(),
            calls: 3,
            errors: 1,
            refused: 0,
            buckets: vec![1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
            latency_seconds_sum: 40.25,
        }];
        let text = render(&[server("fs")], &tools, &ProcessSample::default());
        assert!(text.contains("tool_cli_server_state{server=\"fs\",state=\"ready\"} 1\n"));
        assert!(text.contains("tool_cli_server_state{server=\"fs\",state=\"down\"} 0\n"));
        assert!(text.contains("tool_cli_server_breaker_state{server=\"fs\",state=\"open\"} 1\n"));
        assert!(text.contains("tool_cli_server_restarts_total{server=\"fs\"} 2\n"));
        assert!(text.contains("tool_cli_tool_calls_total{server=\"fs\",tool=\"read_file\"} 3\n"));
        assert!(text.contains("tool_cli_tool_errors_total{server=\"fs\",tool=\"read_file\"} 1\n"));
        // Buckets are cumulative and end with +Inf equal to the count.
        assert!(text.contains(
            "tool_cli_tool_call_duration_seconds_bucket{server=\"fs\",tool=\"read_file\",le=\"0.005\"} 1\n"
        ));
        assert!(text.contains(
            "tool_cli_tool_call_duration_seconds_bucket{server=\"fs\",tool=\"read_file\",le=\"0.025\"} 2\n"
        ));
        assert!(text.contains(
            "tool_cli_tool_call_duration_seconds_bucket{server=\"fs\",tool=\"read_file\",le=\"+Inf\"} 3\n"
        ));
        assert!(text.contains(
            "tool_cli_tool_call_duration_seconds_count{server=\"fs\",tool=\"read_file\"} 3\n"
        ));
        let mut declared = std::collections::HashSet::new();
        for line in text.lines().filter(|line| line.starts_with("# TYPE ")) {
            let name = line.split(' ').nth(2).unwrap();
            assert!(declared.insert(name.to_owned()), "{name} declared twice");
        }
        // Absent process figures are left out rather than written as zero.
        assert!(!text.contains("process_open_fds"));
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(number(f64::INFINITY), "+Inf");
        assert_eq!(number(0.25), "0.25");
    }
}
