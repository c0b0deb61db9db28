//! The one end-to-end test binary: the real `tool-cli-daemon` and `tool-cli` binaries against the
//! bundled demo server and real MCP peers (`scripts/install-peers.sh` installs them), over real
//! loopback sockets and real processes. Each module covers one area; the shared harness (starting
//! and stopping daemons and peers, the HTTP client, config builders) is the `tool_cli_tests` lib.
//!
//! Build the binaries first (`cargo build --workspace`), or point `TOOL_CLI_BIN_DIR` at them.

mod add_server_cancelled;
mod agent;
mod agent_planner;
mod alternatives;
mod attacks;
mod attacks_more;
mod autostart;
mod bad_inputs;
mod cancelled_calls;
mod catalog_scale;
mod cli;
mod cli_chain;
mod cli_conveniences;
mod cli_daemon;
mod cli_orchestration;
mod cli_plain;
mod compat;
mod concurrency;
mod config;
mod config_import;
mod edge;
mod elicitation;
mod embedded;
mod failures;
mod fast_path;
mod first_hour;
mod flags_live;
mod gateway;
mod gateway_listen;
mod gateway_notices;
mod gateway_resume;
mod gateway_socket;
mod gateway_stream;
mod gateway_stream_reads;
mod gateway_tasks;
mod gateway_tasks_2026;
mod gateway_tasks_mixed;
mod handle_scope;
mod hardening;
mod lifecycle;
mod metrics;
mod one_shot;
mod orchestration;
mod peer_fetch;
mod peers;
mod peers_more;
mod pins_items_live;
mod pins_live;
mod progress;
mod prompts;
mod protocol_eras;
mod record;
mod remote;
mod replay;
mod resilience;
mod sampling;
mod search;
mod search_model;
mod security;
mod server_requests;
mod servers;
mod session_caps_config;
mod snapshots;
mod stateless_upstreams;
mod tasks;
mod tasks_2026;
mod telemetry;
mod telemetry_operations;
mod toolkit;
mod traces;
