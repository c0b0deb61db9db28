//! The bundled demo MCP server: the toolkit every tool-cli install can try without installing
//! anything else.
//!
//! `tool-cli-daemon demo-server` calls [`run_stdio`]. It offers read-only SQL over a sample shop
//! database (`describe_schema`, `sql_query`), an exchange-rate lookup over HTTP
//! (`rest_exchange_rate`), a sandboxed Python interpreter (`run_python`), resource handles
//! (`list_resources`, `open_resource`, `read_resource`, `release_resource`), and the MCP
//! resources behind them: documents under `demo://docs/` and the template `demo://tables/{table}`.
//!
//! Module map: `sample_data` (pure data generation), `database` (the file on disk and the
//! read-only, time-boxed connections), `query` (statement checks, paging, JSON), `schema`
//! (describing tables), `documents` and `resources` (URIs and documents), `rates` (the REST
//! client and the local rates service), `sandbox` (the code tool's confinement), `handles`
//! (resource handle bookkeeping), `server` (the rmcp handler and the SQL tools), `toolkit` (the
//! other tools' MCP face).

mod database;
mod documents;
mod handles;
mod query;
mod rates;
mod resources;
mod sample_data;
mod sandbox;
mod schema;
mod server;
mod toolkit;

use std::path::PathBuf;

use rmcp::ServiceExt as _;
use tokio::io::{AsyncRead, AsyncWrite};

pub use database::DatabaseError;
pub use rates::RatesError;

/// Why the demo server could not start, or why its session ended abnormally.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// The sample database could not be built.
    #[error("cannot prepare the demo database {}: {source}", path.display())]
    Database {
        path: PathBuf,
        source: DatabaseError,
    },
    /// The task building the database panicked.
    #[error("the database builder panicked")]
    DatabaseBuilderPanicked(#[source] tokio::task::JoinError),
    /// The built-in exchange-rate service could not bind its loopback port.
    #[error("cannot start the local rates service on 127.0.0.1: {0}")]
    LocalRates(#[source] std::io::Error),
    /// The configured rates URL is not usable.
    #[error(transparent)]
    RatesUrl(#[from] RatesError),
    /// The peer did not complete the MCP handshake.
    #[error("the MCP session did not start: {0}")]
    SessionStart(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The session's task failed.
    #[error("the MCP session ended abnormally: {0}")]
    SessionEnded(#[source] tokio::task::JoinError),
}

/// How the demo server is set up; [`Default`] is what the bundled config runs.
#[derive(Debug, Clone, Default)]
pub struct DemoOptions {
    /// The SQLite database; `None` is [`default_db_path`], built (or rebuilt when an older
    /// version wrote it) on first use. A given file is used as it is, read-only.
    pub db: Option<PathBuf>,
    /// The base URL of the exchange-rate service (`https://api.frankfurter.dev/v1`, say); `None`
    /// starts the built-in fixed-table service on `127.0.0.1:0` and uses that.
    pub rates_url: Option<String>,
    /// The Python interpreter for `run_python`; `None` looks for `python3`, then `python`, on
    /// `PATH`.
    pub python: Option<PathBuf>,
    /// Where `run_python` makes each run's private working directory; `None` is the system
    /// temporary directory.
    pub work_root: Option<PathBuf>,
    /// How long one exchange-rate lookup may take; `None` is 10 seconds.
    pub rates_timeout: Option<std::time::Duration>,
}

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
/// # Errors
///
/// Fails if the database cannot be created, the rates URL is not usable or the local rates
/// service cannot bind, or the MCP session cannot start (for example when the peer does not
/// complete the `initialize` handshake).
pub async fn run_stdio(options: DemoOptions) -> Result<(), DemoError> {
    // The blocking stdio handles work under any Tokio runtime the caller built; the pipe-driver
    // variant would need the runtime's IO driver, and a demo server does not need its speed.
    let (stdin, stdout) = rmcp::transport::stdio();
    serve(options, stdin, stdout).await
}

/// Serves MCP over any pair of byte streams until the peer closes them; [`run_stdio`] is this
/// over stdin/stdout, and tests use it over an in-process pipe so they run the same code.
///
/// The code tool makes this process a child subreaper (`PR_SET_CHILD_SUBREAPER`), so that the
/// orphans of a snippet are re-parented here and reaped.
///
/// # Errors
///
/// As for [`run_stdio`].
pub async fn serve<R, W>(options: DemoOptions, reader: R, writer: W) -> Result<(), DemoError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    // Our own default file may be rebuilt when outdated; a file the user named never is.
    let replace_outdated = options.db.is_none();
    let db_path = options.db.unwrap_or_else(default_db_path);
    let build_path = db_path.clone();
    let database_ready = async {
        tokio::task::spawn_blocking(move || {
            database::ensure_database(&build_path, replace_outdated)
        })
        .await
        .map_err(DemoError::DatabaseBuilderPanicked)?
        .map_err(|source| DemoError::Database {
            path: db_path.clone(),
            source,
        })
    };
    let work_root = options.work_root.unwrap_or_else(std::env::temp_dir);
    let (database_ready, sandbox) = tokio::join!(
        database_ready,
        sandbox::Sandbox::detect(options.python.as_deref(), work_root)
    );
    database_ready?;
    // Without a configured URL, our own service answers; it lives as long as this session.
    let (rates_url, _local_rates) = match options.rates_url {
        Some(url) => (url, None),
        None => {
            let service = rates::service::LocalRatesService::start()
                .await
                .map_err(DemoError::LocalRates)?;
            (service.url(), Some(service))
        }
    };
    let rates = rates::RatesClient::new(
        &rates_url,
        options.rates_timeout.unwrap_or(rates::DEFAULT_TIMEOUT),
    )?;
    tracing::debug!(
        db = %db_path.display(),
        rates = %rates.source(),
        sandbox = %sandbox.describe(),
        "demo server starting"
    );
    let server = server::DemoServer::new(
        database::Database::new(db_path, database::DEFAULT_TIME_BUDGET),
        rates,
        sandbox,
    );
    let running = server
        .serve((reader, writer))
        .await
        .map_err(|error| DemoError::SessionStart(Box::new(error)))?;
    running.waiting().await.map_err(DemoError::SessionEnded)?;
    Ok(())
}
