//! The sample database on disk: where it lives, building it once, and running read-only work on it.
//!
//! Several demo servers may start at the same moment (the daemon can launch one per session), so
//! the file is built under a unique temporary name in the same directory and renamed into place;
//! a rename within one directory is atomic, so a reader sees either no file or a complete one.
//! The contents are deterministic, so if two builders race, the later rename replaces the file
//! with an identical one. An existing file is never rebuilt: it may be one the user pointed us at.
//!
//! Every query runs on the blocking thread pool on a connection of its own while it runs (SQLite
//! connections are not `Sync`), opened with `SQLITE_OPEN_READ_ONLY` plus `PRAGMA query_only`, and
//! is stopped when it outlives the time budget or its caller goes away, so a runaway join cannot
//! pin a thread forever. Connections are kept for the next query (at most one per query that may
//! run at once): opening one, with its `PRAGMA` and the schema read on the first statement, was
//! most of the cost of a small query such as `select 1`.

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use anyhow::Context as _;
use rusqlite::{Connection, OpenFlags, params};
use tokio::sync::Semaphore;

use crate::{query::QueryError, sample_data};

/// The file name of the sample database inside its data directory.
const DATABASE_FILE_NAME: &str = "demo.sqlite";

/// How long one query may run before it is interrupted.
pub(crate) const DEFAULT_TIME_BUDGET: Duration = Duration::from_secs(5);

/// Computes the default database path from the environment values that decide it; pure, so the
/// precedence can be tested without touching the process environment.
pub(crate) fn database_path_from(
    xdg_data_home: Option<OsString>,
    home: Option<OsString>,
    temp_dir: PathBuf,
) -> PathBuf {
    // The XDG spec says relative values are invalid and must be ignored.
    let absolute =
        |value: Option<OsString>| value.map(PathBuf::from).filter(|path| path.is_absolute());
    let data_home = absolute(xdg_data_home)
        .or_else(|| absolute(home).map(|home| home.join(".local").join("share")))
        .unwrap_or(temp_dir);
    data_home.join("tool-cli").join(DATABASE_FILE_NAME)
}

/// Makes sure the sample database exists at `path`, building it if needed. With
/// `replace_outdated` (the default path, which only we write), a file whose `user_version` is older
/// than [`sample_data::SCHEMA_VERSION`] is rebuilt too, so an upgrade brings the documented data.
pub(crate) fn ensure_database(path: &Path, replace_outdated: bool) -> anyhow::Result<()> {
    if path.exists() && !(replace_outdated && is_outdated_sample(path)) {
        return Ok(());
    }
    let directory = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(directory)
        .with_context(|| format!("cannot create the directory {}", directory.display()))?;
    let temporary = directory.join(unique_temporary_name(path));
    let built = build_database(&temporary).and_then(|()| {
        std::fs::rename(&temporary, path).with_context(|| {
            format!(
                "cannot move the new database {} to {}",
                temporary.display(),
                path.display()
            )
        })
    });
    if built.is_err() {
        // Leave no half-built file behind; the original error is the one worth reporting.
        let _ = std::fs::remove_file(&temporary);
    }
    built
}

/// Whether the file at `path` is a sample database written by an older version of this crate. A
/// file we cannot read is left alone: opening it later reports the real problem.
fn is_outdated_sample(path: &Path) -> bool {
    let version = open_read_only(path).and_then(|connection| {
        connection.pragma_query_value(None, "user_version", |row| row.get(0))
    });
    matches!(version, Ok(version) if (1..sample_data::SCHEMA_VERSION).contains(&version))
}

/// A name no other process or thread will pick: pid, time and a per-process counter.
fn unique_temporary_name(path: &Path) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    format!(
        ".{}.{}-{nanos}-{}.tmp",
        path.file_name()
            .map_or_else(|| DATABASE_FILE_NAME.into(), |name| name.to_string_lossy()),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// Writes the schema and the sample rows to a new database at `path`.
fn build_database(path: &Path) -> anyhow::Result<()> {
    let mut connection = Connection::open(path)
        .with_context(|| format!("cannot create the database {}", path.display()))?;
    let data = sample_data::generate();
    let transaction = connection.transaction()?;
    transaction.execute_batch(sample_data::SCHEMA_SQL)?;
    {
        let mut insert = transaction.prepare(
            "INSERT INTO customers (id, name, email, country, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        for customer in &data.customers {
            insert.execute(params![
                customer.id,
                customer.name,
                customer.email,
                customer.country,
                customer.created_at
            ])?;
        }
        let mut insert = transaction.prepare(
            "INSERT INTO products (id, name, category, price_usd, stock) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        for product in &data.products {
            insert.execute(params![
                product.id,
                product.name,
                product.category,
                product.price_usd,
                product.stock
            ])?;
        }
        let mut insert = transaction.prepare(
            "INSERT INTO orders (id, customer_id, product_id, quantity, ordered_at, status)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?;
        for order in &data.orders {
            insert.execute(params![
                order.id,
                order.customer_id,
                order.product_id,
                order.quantity,
                order.ordered_at,
                order.status
            ])?;
        }
    }
    transaction.pragma_update(None, "user_version", sample_data::SCHEMA_VERSION)?;
    transaction.commit()?;
    // Closing explicitly surfaces a failed final write instead of losing it in Drop.
    connection
        .close()
        .map_err(|(_, error)| error)
        .context("cannot finish writing the database")?;
    Ok(())
}

/// Opens `path` for reading only; both flags are needed because `query_only` also covers
/// statements that a read-only file handle alone would let through, such as writes to a
/// temporary schema.
pub(crate) fn open_read_only(path: &Path) -> rusqlite::Result<Connection> {
    let connection = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    connection.pragma_update(None, "query_only", true)?;
    // One value (and one stored row) at most this long, so `SELECT zeroblob(5000000)` or a
    // `randomblob` is refused by SQLite itself with SQLITE_TOOBIG instead of growing an answer
    // past what a client accepts; `query.rs` turns that into a clear error.
    connection.set_limit(
        rusqlite::limits::Limit::SQLITE_LIMIT_LENGTH,
        crate::query::MAX_VALUE_BYTES as i32,
    )?;
    Ok(connection)
}

/// How many queries may run at once; more wait their turn, so a burst of calls cannot fill the
/// blocking thread pool.
pub(crate) const MAX_CONCURRENT_QUERIES: usize = 4;

/// The sample database as the server uses it: a path and the limits on each piece of work.
#[derive(Debug)]
pub(crate) struct Database {
    path: PathBuf,
    time_budget: Duration,
    /// Permits for running queries. A tokio semaphore so waiting does not block a runtime
    /// thread; the owned permit travels into the blocking task, so a query whose caller went
    /// away still counts until SQLite has actually stopped.
    running_queries: Arc<Semaphore>,
    /// Connections between queries, for the next one to take instead of opening its own; never
    /// more than [`MAX_CONCURRENT_QUERIES`], since only that many are ever in use at once. A
    /// std mutex: it is held for a push or a pop, on a blocking-pool thread.
    idle_connections: Arc<std::sync::Mutex<Vec<Connection>>>,
}

/// How many SQLite virtual-machine steps run between checks of the budget and cancellation;
/// small enough to stop within milliseconds, large enough to cost nothing measurable.
const PROGRESS_CHECK_INTERVAL: i32 = 10_000;

/// Sets the flag when dropped, unless disarmed. Dropping the future of [`Database::run`] (the
/// client cancelled, the session ended) drops this too, and the progress handler then stops the
/// abandoned query instead of leaving it running in the blocking pool.
struct CancelOnDrop(Option<Arc<AtomicBool>>);

impl CancelOnDrop {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(cancelled) = self.0.take() {
            cancelled.store(true, Ordering::Relaxed);
        }
    }
}

impl Database {
    pub(crate) fn new(path: PathBuf, time_budget: Duration) -> Self {
        Self {
            path,
            time_budget,
            running_queries: Arc::new(Semaphore::new(MAX_CONCURRENT_QUERIES)),
            idle_connections: Arc::default(),
        }
    }

    #[cfg(test)]
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `work` on a read-only connection (a kept one, or a new one) on the blocking pool. A progress handler
    /// stops SQLite once the time budget is spent or the returned future has been dropped.
    ///
    /// A progress handler rather than `sqlite3_interrupt` from a timer: it runs on the worker
    /// itself, so there is no window where an interrupt arrives before the statement starts and
    /// is lost.
    pub(crate) async fn run<T, F>(&self, work: F) -> Result<T, QueryError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, QueryError> + Send + 'static,
    {
        let permit = Arc::clone(&self.running_queries)
            .acquire_owned()
            .await
            .map_err(|error| QueryError::Worker(error.to_string()))?;
        let cancelled = Arc::new(AtomicBool::new(false));
        let cancel_on_drop = CancelOnDrop(Some(Arc::clone(&cancelled)));
        let path = self.path.clone();
        let time_budget = self.time_budget;
        let idle_connections = Arc::clone(&self.idle_connections);
        let worker = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let kept = idle_connections.lock().unwrap().pop();
            let mut connection = match kept {
                Some(connection) => connection,
                None => open_read_only(&path)?,
            };
            let deadline = Instant::now() + time_budget;
            let timed_out = Arc::new(AtomicBool::new(false));
            let handler_timed_out = Arc::clone(&timed_out);
            connection.progress_handler(
                PROGRESS_CHECK_INTERVAL,
                Some(move || {
                    if Instant::now() >= deadline {
                        handler_timed_out.store(true, Ordering::Relaxed);
                    }
                    // Returning true makes SQLite abandon the statement with SQLITE_INTERRUPT.
                    handler_timed_out.load(Ordering::Relaxed) || cancelled.load(Ordering::Relaxed)
                }),
            )?;
            let outcome = match work(&connection) {
                Err(QueryError::Sqlite(error))
                    if timed_out.load(Ordering::Relaxed)
                        && error.sqlite_error_code()
                            == Some(rusqlite::ErrorCode::OperationInterrupted) =>
                {
                    Err(QueryError::TimedOut {
                        seconds: time_budget.as_secs_f64(),
                    })
                }
                other => other,
            };
            // The work's statements are finalized by now; the handler belongs to this query only.
            // A connection that cannot take the handler off is not kept.
            if connection.progress_handler(0, None::<fn() -> bool>).is_ok() {
                let mut idle = idle_connections.lock().unwrap();
                if idle.len() < MAX_CONCURRENT_QUERIES {
                    idle.push(connection);
                }
            }
            outcome
        });
        let result = worker
            .await
            .map_err(|error| QueryError::Worker(error.to_string()))?;
        cancel_on_drop.disarm();
        result
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::query::{Pagination, check_sql, fetch_page};

    /// A fresh directory under the system temp dir, removed on drop.
    pub(crate) struct TemporaryDirectory(pub(crate) PathBuf);

    impl TemporaryDirectory {
        pub(crate) fn new(label: &str) -> Self {
            let path = std::env::temp_dir().join(format!(
                "tool-cli-demo-{label}-{}",
                unique_temporary_name(Path::new("test"))
            ));
            std::fs::create_dir_all(&path).unwrap();
            Self(path)
        }
    }

    impl Drop for TemporaryDirectory {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A database built in a temporary directory, with the default budget.
    pub(crate) fn sample_database(label: &str) -> (TemporaryDirectory, Database) {
        let directory = TemporaryDirectory::new(label);
        let path = directory.0.join("nested").join("demo.sqlite");
        ensure_database(&path, false).unwrap();
        (directory, Database::new(path, DEFAULT_TIME_BUDGET))
    }

    #[test]
    fn default_path_precedence() {
        let temp = PathBuf::from("/tmp");
        assert_eq!(
            database_path_from(Some("/data".into()), Some("/home/u".into()), temp.clone()),
            PathBuf::from("/data/tool-cli/demo.sqlite")
        );
        assert_eq!(
            database_path_from(None, Some("/home/u".into()), temp.clone()),
            PathBuf::from("/home/u/.local/share/tool-cli/demo.sqlite")
        );
        assert_eq!(
            database_path_from(
                Some("relative".into()),
                Some("/home/u".into()),
                temp.clone()
            ),
            PathBuf::from("/home/u/.local/share/tool-cli/demo.sqlite"),
            "a relative XDG_DATA_HOME is ignored"
        );
        assert_eq!(
            database_path_from(Some("".into()), None, temp),
            PathBuf::from("/tmp/tool-cli/demo.sqlite")
        );
    }

    #[test]
    fn building_creates_directories_and_leaves_no_temporary_files() {
        let (directory, database) = sample_database("build");
        let entries: Vec<_> = std::fs::read_dir(directory.0.join("nested"))
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(entries, ["demo.sqlite"]);
        let connection = open_read_only(database.path()).unwrap();
        let count = |table: &str| -> i64 {
            connection
                .query_row(&format!("SELECT count(*) FROM {table}"), [], |row| {
                    row.get(0)
                })
                .unwrap()
        };
        assert_eq!(count("customers"), 50);
        assert_eq!(count("products"), 30);
        assert_eq!(count("orders"), 500);
    }

    #[test]
    fn an_existing_file_is_used_as_it_is() {
        let directory = TemporaryDirectory::new("existing");
        let path = directory.0.join("mine.sqlite");
        Connection::open(&path)
            .unwrap()
            .execute_batch("CREATE TABLE notes (body TEXT)")
            .unwrap();
        ensure_database(&path, false).unwrap();
        let connection = open_read_only(&path).unwrap();
        let tables: i64 = connection
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(tables, 1);
    }

    #[test]
    fn an_outdated_sample_is_rebuilt_only_at_the_default_path() {
        let directory = TemporaryDirectory::new("outdated");
        let path = directory.0.join("demo.sqlite");
        let write_old = || {
            let _ = std::fs::remove_file(&path);
            let connection = Connection::open(&path).unwrap();
            connection
                .execute_batch(
                    "CREATE TABLE products (price_cents INTEGER); PRAGMA user_version = 1",
                )
                .unwrap();
        };
        let has_price_usd = || {
            open_read_only(&path)
                .unwrap()
                .prepare("SELECT price_usd FROM products")
                .is_ok()
        };
        write_old();
        ensure_database(&path, false).unwrap();
        assert!(!has_price_usd(), "a user's file is never replaced");
        ensure_database(&path, true).unwrap();
        assert!(has_price_usd(), "our outdated file is rebuilt");
        // A current file, and a file with a version we do not know, are left alone.
        let before = std::fs::metadata(&path).unwrap().modified().unwrap();
        ensure_database(&path, true).unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().modified().unwrap(),
            before
        );
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", 99)
            .unwrap();
        ensure_database(&path, true).unwrap();
        assert!(has_price_usd());
    }

    #[test]
    fn concurrent_builders_agree() {
        let directory = TemporaryDirectory::new("race");
        let path = directory.0.join("demo.sqlite");
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| ensure_database(&path, false).unwrap());
            }
        });
        let connection = open_read_only(&path).unwrap();
        let orders: i64 = connection
            .query_row("SELECT count(*) FROM orders", [], |row| row.get(0))
            .unwrap();
        assert_eq!(orders, 500);
    }

    #[test]
    fn the_connection_refuses_writes_even_without_our_checks() {
        let (_directory, database) = sample_database("readonly");
        let connection = open_read_only(database.path()).unwrap();
        for sql in [
            "DELETE FROM orders",
            "CREATE TABLE x (y)",
            "CREATE TEMP TABLE x (y)",
            "PRAGMA user_version = 7",
        ] {
            assert!(connection.execute_batch(sql).is_err(), "{sql} was allowed");
        }
    }

    #[tokio::test]
    async fn a_real_query_pages_through_orders() {
        let (_directory, database) = sample_database("query");
        let page = database
            .run(|connection| {
                let sql = check_sql(
                    "SELECT o.id, c.name, p.name, o.quantity * p.price_usd AS total_usd
                     FROM orders o JOIN customers c ON c.id = o.customer_id
                     JOIN products p ON p.id = o.product_id ORDER BY o.id",
                )?;
                fetch_page(connection, sql, Pagination::negotiate(Some(20), Some(490))?)
            })
            .await
            .unwrap();
        assert_eq!(page.columns, ["id", "name", "name:1", "total_usd"]);
        assert_eq!(page.total_rows_matched, 500);
        assert_eq!(page.returned_rows, 10);
        assert_eq!(page.rows[0]["id"], 491);
        assert!(!page.has_more);
        assert_eq!(page.next_offset, None);
    }

    #[tokio::test]
    async fn abandoned_queries_are_interrupted() {
        let (_directory, database) = sample_database("abandoned");
        let database = Database::new(database.path().to_owned(), Duration::from_secs(3600));
        let (finished_sender, finished_receiver) = std::sync::mpsc::channel();
        let (started_sender, started_receiver) = tokio::sync::oneshot::channel();
        let run = database.run(move |connection| {
            let _ = started_sender.send(());
            let result = connection.query_row(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n)
                 SELECT i FROM n WHERE i < 0",
                [],
                |row| row.get::<_, i64>(0),
            );
            let _ = finished_sender.send(result);
            Ok(())
        });
        // Drop the future once the query is running, as rmcp does when a client cancels.
        tokio::select! {
            _ = run => panic!("the endless query finished"),
            _ = started_receiver => {}
        }
        let result = tokio::task::spawn_blocking(move || finished_receiver.recv().unwrap())
            .await
            .unwrap();
        let error = result.unwrap_err();
        assert_eq!(
            error.sqlite_error_code(),
            Some(rusqlite::ErrorCode::OperationInterrupted)
        );
    }

    #[tokio::test]
    async fn runaway_queries_are_interrupted() {
        let (_directory, database) = sample_database("runaway");
        let database = Database::new(database.path().to_owned(), Duration::from_millis(50));
        // Never produces a row, so neither the page size nor the scan cap stops it.
        let error = database
            .run(|connection| {
                let sql = check_sql(
                    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n)
                     SELECT i FROM n WHERE i < 0",
                )?;
                fetch_page(connection, sql, Pagination::negotiate(None, None)?)
            })
            .await
            .unwrap_err();
        assert!(matches!(error, QueryError::TimedOut { .. }), "{error:?}");
        assert!(
            error.to_string().contains("stopped after 0.05 s"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn a_connection_is_kept_for_the_next_query_even_after_an_interrupted_one() {
        let (_directory, database) = sample_database("kept");
        let database = Database::new(database.path().to_owned(), Duration::from_millis(50));
        let idle = || database.idle_connections.lock().unwrap().len();
        assert_eq!(idle(), 0);
        let count_orders = |connection: &Connection| {
            connection
                .query_row("SELECT count(*) FROM orders", [], |row| {
                    row.get::<_, i64>(0)
                })
                .map_err(QueryError::from)
        };
        assert_eq!(database.run(count_orders).await.unwrap(), 500);
        assert_eq!(idle(), 1);
        // The same connection serves the next query: none is opened beside it.
        assert_eq!(database.run(count_orders).await.unwrap(), 500);
        assert_eq!(idle(), 1);
        let error = database
            .run(|connection| {
                let sql = check_sql(
                    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n)
                     SELECT i FROM n WHERE i < 0",
                )?;
                fetch_page(connection, sql, Pagination::negotiate(None, None)?)
            })
            .await
            .unwrap_err();
        assert!(matches!(error, QueryError::TimedOut { .. }), "{error:?}");
        // The interrupted query's handler went with it: the kept connection answers again,
        // still read-only.
        assert_eq!(idle(), 1);
        assert_eq!(database.run(count_orders).await.unwrap(), 500);
        let refused = database
            .run(|connection| {
                connection
                    .execute_batch("DELETE FROM orders")
                    .map_err(QueryError::from)
            })
            .await;
        assert!(refused.is_err());
        assert_eq!(database.run(count_orders).await.unwrap(), 500);
    }
}
