//! The bundled demo MCP server: read-only SQL over a sample shop database, plus sample resources.
//!
//! `tool-cli-daemon demo-server [--db PATH]` calls [`run_stdio`], so every tool-cli install has
//! a real MCP server to try without installing anything else. It offers two tools
//! (`describe_schema` and `sql_query`, both read-only), the documents `demo://docs/readme` and
//! `demo://docs/schema`, and the template `demo://tables/{table}`.
//!
//! Module map: `sample_data` (pure data generation), `database` (the file on disk and the
//! read-only, time-boxed connections), `query` (statement checks, paging, JSON), `schema`
//! (describing tables), `resources` (URIs and documents), `server` (the rmcp handler).

mod database;
mod query;
mod resources;
mod sample_data;
mod schema;
mod server;

use std::path::PathBuf;

use anyhow::Context as _;
use rmcp::ServiceExt as _;
use tokio::io::{AsyncRead, AsyncWrite};

/// Where the sample database lives when no path is given: `$XDG_DATA_HOME/tool-cli/demo.sqlite`,
/// else `$HOME/.local/share/tool-cli/demo.sqlite`, else `tool-cli/demo.sqlite` in the system
/// temporary directory.
pub fn default_db_path() -> PathBuf {
    database::database_path_from(
        std::env::var_os("XDG_DATA_HOME"),
        std::env::var_os("HOME"),
        std::env::temp_dir(),
    )
}

/// Serves MCP over stdin/stdout until stdin closes.
///
/// The sample database is read from `db_path` (default: [`default_db_path`]) and built there
/// first if the file does not exist. An existing file is used as it is, read-only, so this can
/// also serve a database of your own.
///
/// # Errors
///
/// Fails if the database cannot be created, or if the MCP session cannot start (for example when
/// the peer does not complete the `initialize` handshake).
pub async fn run_stdio(db_path: Option<PathBuf>) -> anyhow::Result<()> {
    // The blocking stdio handles work under any Tokio runtime the caller built; the pipe-driver
    // variant would need the runtime's IO driver, and a demo server does not need its speed.
    let (stdin, stdout) = rmcp::transport::stdio();
    serve(db_path, stdin, stdout).await
}

/// Serves MCP over any pair of byte streams until the peer closes them; [`run_stdio`] is this
/// over stdin/stdout, and tests use it over an in-process pipe so they run the same code.
///
/// # Errors
///
/// As for [`run_stdio`].
pub async fn serve<R, W>(db_path: Option<PathBuf>, reader: R, writer: W) -> anyhow::Result<()>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let db_path = db_path.unwrap_or_else(default_db_path);
    let build_path = db_path.clone();
    tokio::task::spawn_blocking(move || database::ensure_database(&build_path))
        .await
        .context("the database builder panicked")?
        .with_context(|| format!("cannot prepare the demo database {}", db_path.display()))?;
    tracing::debug!(db = %db_path.display(), "demo server starting");
    let server = server::DemoServer::new(database::Database::new(
        db_path,
        database::DEFAULT_TIME_BUDGET,
    ));
    let running = server
        .serve((reader, writer))
        .await
        .context("the MCP session did not start")?;
    running
        .waiting()
        .await
        .context("the MCP session ended abnormally")?;
    Ok(())
}
