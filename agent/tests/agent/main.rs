//! The agent's integration tests, one binary: the LLM backends against scripted fake servers on
//! loopback, the loop with scripted backends, and the offline planner against a real
//! `tool-cli-daemon` serving the bundled demo server and the real filesystem peer.
//!
//! The offline tests need the daemon binary built (`cargo build -p tool-cli-daemon`, which
//! `scripts/test.sh` and CI do through `cargo build --workspace`) and the npm peers installed
//! (`scripts/install-peers.sh`).

mod backends;
mod common;
mod offline;
mod planner_eval;
mod run_loop;
