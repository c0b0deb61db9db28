//! Read-only SQL for agents: statement checking, negotiated pagination and row-to-JSON conversion.
//!
//! The checks are layered on purpose. A lexical pass here rejects empty input, several
//! statements and anything that does not start with SELECT or WITH, and gives the agent a precise
//! message; SQLite then confirms the single statement is `readonly()`; and the connection itself
//! is opened read-only with `PRAGMA query_only` (see `database.rs`). Any one layer would stop a
//! write; the first gives the useful error, the last is the one that cannot be talked around.
//!
//! The size of an answer is bounded at three levels, because one answer must fit a client's
//! line (the daemon reads at most 16 MiB, and a tool result carries the page twice, as
//! structured content and as its text): SQLite refuses any value over [`MAX_VALUE_BYTES`]
//! (`SQLITE_LIMIT_LENGTH`), a row whose JSON is over [`MAX_ROW_JSON_BYTES`] is an error that
//! says how to select less, and a page ends early, with `next_offset` to continue, once its
//! rows reach [`MAX_PAGE_JSON_BYTES`] of JSON.
//!
//! Paging steps through the statement's own rows rather than wrapping it in
//! `SELECT count(*) FROM (...)`: one pass over one snapshot counts and fetches together, runs
//! exactly the statement that was checked, and keeps the column names the agent wrote.

use rusqlite::{Connection, types::ValueRef};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

/// Rows per page when the agent does not ask for a size.
pub(crate) const DEFAULT_PAGE_SIZE: u64 = 50;
/// The largest page the server hands out, whatever the agent asks for; keeps one tool result
/// small enough for a model's context.
pub(crate) const MAX_PAGE_SIZE: u64 = 200;
/// Rows a single query may step through (to count and to reach the page); stops a cartesian
/// join from being walked to the end. Offsets must stay below it.
pub(crate) const MAX_ROWS_SCANNED: u64 = 100_000;

/// The longest value (text or blob, in bytes) SQLite may produce or read: 1 MiB.
pub(crate) const MAX_VALUE_BYTES: usize = 1024 * 1024;
/// The largest row, as JSON (a blob doubles as hex): 3 MiB.
pub(crate) const MAX_ROW_JSON_BYTES: usize = 3 * 1024 * 1024;
/// A page stops taking rows once their JSON reaches this: 4 MiB.
pub(crate) const MAX_PAGE_JSON_BYTES: usize = 4 * 1024 * 1024;

/// Why a query was refused or failed; each message says what was wrong and what would be right.
#[derive(Debug, thiserror::Error)]
pub(crate) enum QueryError {
    #[error(
        "the sql argument has no statement; pass one SELECT statement, e.g. `SELECT * FROM customers LIMIT 10`"
    )]
    Empty,
    #[error(
        "only one SELECT statement is allowed; got {count} statements (send them as separate calls)"
    )]
    MultipleStatements { count: usize },
    #[error(
        "only SELECT (or WITH … SELECT) statements are allowed; got a statement starting with {keyword}"
    )]
    NotASelect { keyword: String },
    #[error(
        "the statement would change the database; only read-only SELECT (or WITH … SELECT) queries are allowed"
    )]
    NotReadOnly,
    #[error("offset must be between 0 and {max}; got {offset}", max = MAX_ROWS_SCANNED - 1)]
    OffsetOutOfRange { offset: i64 },
    #[error(
        "the query was stopped after {seconds} s (the time budget); add a WHERE clause or a LIMIT, or avoid joins without an ON condition"
    )]
    TimedOut { seconds: f64 },
    #[error(
        "a value of the query is larger than {} bytes, the limit for one text or blob value; select a part of it (substr(column, 1, 1000)) or its size (length(column)) instead",
        MAX_VALUE_BYTES
    )]
    ValueTooLarge,
    #[error(
        "row {row} of the result is {bytes} bytes as JSON, over the {} byte limit for one row; select fewer or shorter columns (substr(column, 1, 1000), length(column))",
        MAX_ROW_JSON_BYTES
    )]
    RowTooLarge { row: u64, bytes: usize },
    #[error("unknown table {name:?}; valid tables: {}", valid.join(", "))]
    UnknownTable { name: String, valid: Vec<String> },
    #[error("sqlite rejected the query: {0} (call describe_schema to see the tables and columns)")]
    Sqlite(#[source] rusqlite::Error),
    #[error("the query worker failed: {0}")]
    Worker(String),
}

impl From<rusqlite::Error> for QueryError {
    fn from(error: rusqlite::Error) -> Self {
        match error {
            // Our lexer and SQLite disagree only on exotic input; either way there were several.
            rusqlite::Error::MultipleStatement => QueryError::MultipleStatements { count: 2 },
            rusqlite::Error::SqliteFailure(failure, _)
                if failure.code == rusqlite::ErrorCode::TooBig =>
            {
                QueryError::ValueTooLarge
            }
            other => QueryError::Sqlite(other),
        }
    }
}

/// Splits `sql` at top-level semicolons and returns the statements that contain SQL, without the
/// separators. Semicolons inside string literals, quoted identifiers and comments do not split.
pub(crate) fn split_statements(sql: &str) -> Vec<&str> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Code,
        Quoted(u8),
        LineComment,
        BlockComment,
    }
    let bytes = sql.as_bytes();
    let mut statements = Vec::new();
    let mut state = State::Code;
    let mut start = 0;
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        let next = bytes.get(index + 1).copied();
        match state {
            State::Code => match byte {
                b'\'' | b'"' | b'`' => state = State::Quoted(byte),
                b'[' => state = State::Quoted(b']'),
                b'-' if next == Some(b'-') => {
                    state = State::LineComment;
                    index += 1;
                }
                b'/' if next == Some(b'*') => {
                    state = State::BlockComment;
                    index += 1;
                }
                b';' => {
                    statements.push(&sql[start..index]);
                    start = index + 1;
                }
                _ => {}
            },
            // A doubled quote ('' or "") closes and immediately reopens, which this handles
            // without a special case.
            State::Quoted(closing) if byte == closing => state = State::Code,
            State::Quoted(_) => {}
            State::LineComment if byte == b'\n' => state = State::Code,
            State::LineComment => {}
            State::BlockComment if byte == b'*' && next == Some(b'/') => {
                state = State::Code;
                index += 1;
            }
            State::BlockComment => {}
        }
        index += 1;
    }
    statements.push(&sql[start..]);
    statements
        .into_iter()
        .filter(|statement| first_keyword(statement).is_some())
        .collect()
}

/// The first word of a statement, skipping whitespace and comments; `None` when there is no SQL.
pub(crate) fn first_keyword(statement: &str) -> Option<&str> {
    let mut rest = statement;
    loop {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix("--") {
            rest = after.split_once('\n').map_or("", |(_, tail)| tail);
        } else if let Some(after) = rest.strip_prefix("/*") {
            rest = after.split_once("*/").map_or("", |(_, tail)| tail);
        } else {
            break;
        }
    }
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    // Something that is not a word (a lone parenthesis, say) is still SQL, and SQLite will
    // explain what is wrong with it better than we can.
    if rest.is_empty() {
        None
    } else if end == 0 {
        Some(&rest[..rest.chars().next().map_or(0, char::len_utf8)])
    } else {
        Some(&rest[..end])
    }
}

/// Checks the text of a query and returns the single statement to run.
pub(crate) fn check_sql(sql: &str) -> Result<&str, QueryError> {
    let statements = split_statements(sql);
    let statement = match statements.as_slice() {
        [] => return Err(QueryError::Empty),
        [statement] => *statement,
        several => {
            return Err(QueryError::MultipleStatements {
                count: several.len(),
            });
        }
    };
    let keyword = first_keyword(statement).unwrap_or_default();
    if keyword.eq_ignore_ascii_case("select") || keyword.eq_ignore_ascii_case("with") {
        Ok(statement)
    } else {
        Err(QueryError::NotASelect {
            keyword: keyword.to_uppercase(),
        })
    }
}

/// The page the server agreed to return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pagination {
    pub(crate) page_size: u64,
    pub(crate) offset: u64,
}

impl Pagination {
    /// Negotiates a page: the size defaults to [`DEFAULT_PAGE_SIZE`] and is clamped to
    /// `1..=MAX_PAGE_SIZE` (asking for too much is not an error, the result says what it got);
    /// the offset defaults to 0 and must lie below [`MAX_ROWS_SCANNED`].
    pub(crate) fn negotiate(
        requested_page_size: Option<i64>,
        requested_offset: Option<i64>,
    ) -> Result<Self, QueryError> {
        let page_size = requested_page_size.map_or(DEFAULT_PAGE_SIZE as i64, |size| {
            size.clamp(1, MAX_PAGE_SIZE as i64)
        }) as u64;
        let offset = requested_offset.unwrap_or(0);
        if !(0..MAX_ROWS_SCANNED as i64).contains(&offset) {
            return Err(QueryError::OffsetOutOfRange { offset });
        }
        Ok(Self {
            page_size,
            offset: offset as u64,
        })
    }

    /// Where the next page starts, given how many rows this page returned and how many rows the
    /// query matched; `None` when this page reaches the end.
    pub(crate) fn next_offset(&self, returned_rows: u64, total_rows_matched: u64) -> Option<u64> {
        let end = self.offset + returned_rows;
        (end < total_rows_matched).then_some(end)
    }
}

/// One page of a query's result, as returned by `sql_query` (its `structuredContent`).
///
/// The field docs become the `outputSchema` descriptions agents read, and schemars keeps line
/// breaks, so each is written on one line.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub(crate) struct QueryPage {
    /// Column names in result order; a repeated name gets a `:N` suffix, as SQLite does in subqueries, so every key of a row object is distinct.
    pub(crate) columns: Vec<String>,
    /// The rows of this page, each an object from column name to value. Integers and reals are JSON numbers, text is a string, NULL is null, and a blob is a hex string in SQL literal form such as X'CAFE'.
    pub(crate) rows: Vec<Map<String, Value>>,
    /// The offset this page starts at.
    pub(crate) offset: u64,
    /// The page size the server used: the requested one clamped to 1..=200 (default 50).
    pub(crate) effective_page_size: u64,
    /// How many rows this page holds (at most effective_page_size).
    pub(crate) returned_rows: u64,
    /// How many rows the query matched in total; at most 100000, see total_rows_exact.
    pub(crate) total_rows_matched: u64,
    /// False when the query matched more than 100000 rows and counting stopped there; narrow the query to see the rest.
    pub(crate) total_rows_exact: bool,
    /// Whether rows after this page exist (within the counted rows).
    pub(crate) has_more: bool,
    /// The offset to pass to get the next page, or null when this is the last page.
    pub(crate) next_offset: Option<u64>,
    /// True when the page ended before effective_page_size rows because its rows reached 4 MiB of JSON; continue from next_offset.
    pub(crate) cut_at_size_limit: bool,
}

/// Runs one already checked statement and returns the requested page. `sql` must come from
/// [`check_sql`]; this function re-checks with SQLite that it is a read-only query.
pub(crate) fn fetch_page(
    connection: &Connection,
    sql: &str,
    pagination: Pagination,
) -> Result<QueryPage, QueryError> {
    let mut statement = connection.prepare(sql)?;
    if !statement.readonly() {
        return Err(QueryError::NotReadOnly);
    }
    if statement.column_count() == 0 {
        // PRAGMA-like statements slip past readonly() without returning rows.
        return Err(QueryError::NotASelect {
            keyword: first_keyword(sql).unwrap_or_default().to_uppercase(),
        });
    }
    let columns = unique_column_names(statement.column_names());
    let mut rows = statement.query([])?;
    let mut page_rows = Vec::new();
    let mut page_bytes = 0;
    let mut cut_at_size_limit = false;
    let mut scanned: u64 = 0;
    while scanned < MAX_ROWS_SCANNED {
        let Some(row) = rows.next()? else { break };
        if scanned >= pagination.offset
            && (page_rows.len() as u64) < pagination.page_size
            && !cut_at_size_limit
        {
            let mut object = Map::with_capacity(columns.len());
            let mut row_bytes = 0;
            for (index, column) in columns.iter().enumerate() {
                let value = value_to_json(row.get_ref(index)?);
                row_bytes += json_length(&value) + column.len() + 4;
                if row_bytes > MAX_ROW_JSON_BYTES {
                    return Err(QueryError::RowTooLarge {
                        row: scanned,
                        bytes: row_bytes,
                    });
                }
                object.insert(column.clone(), value);
            }
            if !page_rows.is_empty() && page_bytes + row_bytes > MAX_PAGE_JSON_BYTES {
                // The page is full by size; this row is the next page's first.
                cut_at_size_limit = true;
            } else {
                page_bytes += row_bytes;
                page_rows.push(object);
            }
        }
        scanned += 1;
    }
    // One more step tells a count that stopped at the cap from one that ended exactly there.
    let total_rows_exact = scanned < MAX_ROWS_SCANNED || rows.next()?.is_none();
    let returned_rows = page_rows.len() as u64;
    let next_offset = pagination.next_offset(returned_rows, scanned);
    Ok(QueryPage {
        columns,
        rows: page_rows,
        offset: pagination.offset,
        effective_page_size: pagination.page_size,
        returned_rows,
        total_rows_matched: scanned,
        total_rows_exact,
        has_more: next_offset.is_some(),
        next_offset,
        cut_at_size_limit,
    })
}

/// The length of `value` written as JSON, without keeping the text.
fn json_length(value: &Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // Writing a Value to a counter cannot fail.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// Makes column names distinct so they can be object keys: the second `id` becomes `id:1`,
/// the third `id:2`, skipping any suffix that is already taken.
pub(crate) fn unique_column_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut unique: Vec<String> = Vec::new();
    for name in names {
        let mut candidate = name.to_owned();
        let mut suffix = 1;
        while unique.contains(&candidate) {
            candidate = format!("{name}:{suffix}");
            suffix += 1;
        }
        unique.push(candidate);
    }
    unique
}

/// Converts one SQLite value to JSON.
pub(crate) fn value_to_json(value: ValueRef<'_>) -> Value {
    match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(integer) => Value::from(integer),
        // JSON has no infinities (SQLite turns NaN into NULL itself), so those become text.
        ValueRef::Real(real) => serde_json::Number::from_f64(real)
            .map_or_else(|| Value::String(real.to_string()), Value::Number),
        ValueRef::Text(bytes) => Value::String(String::from_utf8_lossy(bytes).into_owned()),
        ValueRef::Blob(bytes) => Value::String(blob_literal(bytes)),
    }
}

/// A blob as an SQL hex literal (`X'CAFE'`): recognisable as binary, and pasteable into a query.
fn blob_literal(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    let mut literal = String::with_capacity(bytes.len() * 2 + 3);
    literal.push_str("X'");
    for byte in bytes {
        literal.push(DIGITS[usize::from(byte >> 4)] as char);
        literal.push(DIGITS[usize::from(byte & 0x0F)] as char);
    }
    literal.push('\'');
    literal
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn splitting_ignores_semicolons_in_literals_and_comments() {
        assert_eq!(split_statements("SELECT 1"), ["SELECT 1"]);
        assert_eq!(split_statements("SELECT 1;"), ["SELECT 1"]);
        assert_eq!(split_statements(" SELECT 1 ;  -- done\n"), [" SELECT 1 "]);
        assert_eq!(split_statements("SELECT ';'"), ["SELECT ';'"]);
        assert_eq!(split_statements("SELECT 'it''s;'"), ["SELECT 'it''s;'"]);
        assert_eq!(
            split_statements(r#"SELECT 1 AS "a;b""#),
            [r#"SELECT 1 AS "a;b""#]
        );
        assert_eq!(
            split_statements("SELECT [x;y] FROM t"),
            ["SELECT [x;y] FROM t"]
        );
        assert_eq!(split_statements("SELECT 1 /* ; */"), ["SELECT 1 /* ; */"]);
        assert_eq!(split_statements("SELECT 1 -- ;\n"), ["SELECT 1 -- ;\n"]);
        assert_eq!(
            split_statements("SELECT 1; SELECT 2"),
            ["SELECT 1", " SELECT 2"]
        );
        assert_eq!(split_statements(";;"), Vec::<&str>::new());
        assert_eq!(split_statements("-- only a comment"), Vec::<&str>::new());
    }

    #[test]
    fn first_keyword_skips_comments() {
        assert_eq!(first_keyword("  select 1"), Some("select"));
        assert_eq!(
            first_keyword("-- hi\n/* there */ WITH x AS (SELECT 1)"),
            Some("WITH")
        );
        assert_eq!(first_keyword("(SELECT 1)"), Some("("));
        assert_eq!(first_keyword(" /* unterminated"), None);
        assert_eq!(first_keyword(""), None);
    }

    #[test]
    fn check_sql_accepts_single_reads() {
        assert_eq!(check_sql("SELECT 1;").unwrap(), "SELECT 1");
        assert!(check_sql("with t as (select 1) select * from t").is_ok());
    }

    #[test]
    fn check_sql_rejects_everything_else_with_a_helpful_message() {
        let cases = [
            ("", "has no statement"),
            ("  ; -- nothing\n", "has no statement"),
            (
                "SELECT 1; SELECT 2",
                "only one SELECT statement is allowed; got 2 statements",
            ),
            ("SELECT 1; DROP TABLE customers", "got 2 statements"),
            ("INSERT INTO customers VALUES (1)", "starting with INSERT"),
            ("drop table customers", "starting with DROP"),
            ("ATTACH DATABASE '/tmp/x' AS x", "starting with ATTACH"),
            ("PRAGMA query_only = OFF", "starting with PRAGMA"),
            (
                "/* sneaky */ UPDATE products SET stock = 0",
                "starting with UPDATE",
            ),
            ("EXPLAIN SELECT 1", "starting with EXPLAIN"),
        ];
        for (sql, expected) in cases {
            let message = check_sql(sql).unwrap_err().to_string();
            assert!(message.contains(expected), "{sql:?} gave {message:?}");
        }
    }

    #[test]
    fn page_size_is_clamped_and_defaulted() {
        let negotiate = |size| Pagination::negotiate(size, None).unwrap().page_size;
        assert_eq!(negotiate(None), DEFAULT_PAGE_SIZE);
        assert_eq!(negotiate(Some(10)), 10);
        assert_eq!(negotiate(Some(0)), 1);
        assert_eq!(negotiate(Some(-7)), 1);
        assert_eq!(negotiate(Some(MAX_PAGE_SIZE as i64)), MAX_PAGE_SIZE);
        assert_eq!(negotiate(Some(10_000)), MAX_PAGE_SIZE);
        assert_eq!(negotiate(Some(i64::MAX)), MAX_PAGE_SIZE);
    }

    #[test]
    fn offsets_must_be_in_range() {
        assert_eq!(Pagination::negotiate(None, None).unwrap().offset, 0);
        assert_eq!(
            Pagination::negotiate(None, Some(99_999)).unwrap().offset,
            99_999
        );
        for offset in [-1, MAX_ROWS_SCANNED as i64, i64::MAX] {
            let error = Pagination::negotiate(None, Some(offset)).unwrap_err();
            assert!(
                error
                    .to_string()
                    .starts_with("offset must be between 0 and 99999")
            );
        }
    }

    #[test]
    fn next_offset_edges() {
        let page = Pagination {
            page_size: 10,
            offset: 0,
        };
        assert_eq!(page.next_offset(10, 25), Some(10));
        assert_eq!(page.next_offset(10, 10), None, "exactly one full page");
        assert_eq!(page.next_offset(0, 0), None, "no rows at all");
        let last = Pagination {
            page_size: 10,
            offset: 20,
        };
        assert_eq!(last.next_offset(5, 25), None);
        let beyond = Pagination {
            page_size: 10,
            offset: 40,
        };
        assert_eq!(beyond.next_offset(0, 25), None, "offset past the end");
    }

    #[test]
    fn column_names_become_unique() {
        assert_eq!(unique_column_names(vec!["id", "name"]), ["id", "name"]);
        assert_eq!(
            unique_column_names(vec!["id", "id", "id:1", "id"]),
            ["id", "id:1", "id:1:1", "id:2"]
        );
    }

    #[test]
    fn values_map_to_json() {
        assert_eq!(value_to_json(ValueRef::Null), Value::Null);
        assert_eq!(value_to_json(ValueRef::Integer(-3)), json!(-3));
        assert_eq!(value_to_json(ValueRef::Real(2.5)), json!(2.5));
        assert_eq!(value_to_json(ValueRef::Real(f64::INFINITY)), json!("inf"));
        assert_eq!(value_to_json(ValueRef::Text(b"caf\xc3\xa9")), json!("café"));
        assert_eq!(
            value_to_json(ValueRef::Blob(&[0xCA, 0xFE, 0x01])),
            json!("X'CAFE01'")
        );
        assert_eq!(value_to_json(ValueRef::Blob(&[])), json!("X''"));
    }

    fn memory_connection() -> Connection {
        let connection = Connection::open_in_memory().unwrap();
        connection
            .execute_batch(
                "CREATE TABLE t (id INTEGER, label TEXT);
                 WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 25)
                 INSERT INTO t SELECT i, 'row ' || i FROM n;",
            )
            .unwrap();
        connection
    }

    #[test]
    fn pages_walk_the_whole_result() {
        let connection = memory_connection();
        let sql = check_sql("SELECT id, label FROM t ORDER BY id").unwrap();
        let first = fetch_page(
            &connection,
            sql,
            Pagination::negotiate(Some(10), None).unwrap(),
        )
        .unwrap();
        assert_eq!(first.columns, ["id", "label"]);
        assert_eq!(
            first.rows[0],
            json!({"id": 1, "label": "row 1"})
                .as_object()
                .unwrap()
                .clone()
        );
        assert_eq!(
            (
                first.returned_rows,
                first.total_rows_matched,
                first.has_more,
                first.next_offset
            ),
            (10, 25, true, Some(10))
        );
        assert!(first.total_rows_exact);
        let last = fetch_page(
            &connection,
            sql,
            Pagination::negotiate(Some(10), Some(20)).unwrap(),
        )
        .unwrap();
        assert_eq!(
            (last.returned_rows, last.has_more, last.next_offset),
            (5, false, None)
        );
        assert_eq!(last.rows[0]["id"], json!(21));
        let beyond = fetch_page(
            &connection,
            sql,
            Pagination::negotiate(None, Some(500)).unwrap(),
        )
        .unwrap();
        assert_eq!((beyond.returned_rows, beyond.total_rows_matched), (0, 25));
    }

    #[test]
    fn counting_stops_at_the_scan_cap() {
        let connection = memory_connection();
        // 25^4 = 390625 rows, more than the cap.
        let sql = "SELECT a.id FROM t a, t b, t c, t d";
        let page =
            fetch_page(&connection, sql, Pagination::negotiate(None, None).unwrap()).unwrap();
        assert_eq!(page.total_rows_matched, MAX_ROWS_SCANNED);
        assert!(!page.total_rows_exact);
        assert!(page.has_more);
    }

    /// A connection with the same value limit as the server's.
    fn limited_connection() -> Connection {
        let connection = memory_connection();
        connection
            .set_limit(
                rusqlite::limits::Limit::SQLITE_LIMIT_LENGTH,
                MAX_VALUE_BYTES as i32,
            )
            .unwrap();
        connection
    }

    #[test]
    fn oversized_values_are_a_clear_error() {
        // Issue 22: these made a single answer over 16 MiB.
        let connection = limited_connection();
        let pagination = Pagination::negotiate(None, None).unwrap();
        for sql in [
            "SELECT zeroblob(5000000)",
            "SELECT randomblob(5000000)",
            "SELECT hex(randomblob(600000))",
            "SELECT printf('%.*c', 2000000, 'x')",
        ] {
            let error = fetch_page(&connection, sql, pagination).unwrap_err();
            assert!(
                matches!(error, QueryError::ValueTooLarge),
                "{sql}: {error:?}"
            );
            assert!(
                error.to_string().contains("substr(column, 1, 1000)"),
                "{error}"
            );
        }
        // Just under the limit is fine.
        let page = fetch_page(
            &connection,
            "SELECT length(zeroblob(1000000)) AS n",
            pagination,
        )
        .unwrap();
        assert_eq!(page.rows[0]["n"], json!(1_000_000));
    }

    #[test]
    fn oversized_rows_are_a_clear_error() {
        let connection = limited_connection();
        let pagination = Pagination::negotiate(None, None).unwrap();
        // Four values of 900 KB each: every one is allowed, the row is not.
        let sql = "SELECT zeroblob(900000) a, zeroblob(900000) b, zeroblob(900000) c";
        let error = fetch_page(&connection, sql, pagination).unwrap_err();
        assert!(
            matches!(error, QueryError::RowTooLarge { row: 0, bytes } if bytes > MAX_ROW_JSON_BYTES),
            "{error:?}"
        );
        assert!(
            error.to_string().starts_with("row 0 of the result is"),
            "{error}"
        );
    }

    #[test]
    fn pages_end_early_at_the_size_limit_and_continue() {
        let connection = limited_connection();
        // 25 rows of about 1 MB of JSON each: a page holds three, then says where to go on.
        let sql = "SELECT id, zeroblob(500000) AS payload FROM t ORDER BY id";
        let first = fetch_page(
            &connection,
            sql,
            Pagination::negotiate(Some(50), None).unwrap(),
        )
        .unwrap();
        assert!(first.cut_at_size_limit);
        assert!(
            (1..50).contains(&first.returned_rows),
            "{}",
            first.returned_rows
        );
        assert_eq!(first.next_offset, Some(first.returned_rows));
        assert_eq!(first.total_rows_matched, 25);
        let json = serde_json::to_vec(&first.rows).unwrap();
        assert!(json.len() <= MAX_PAGE_JSON_BYTES, "{}", json.len());
        let second = fetch_page(
            &connection,
            sql,
            Pagination::negotiate(Some(50), first.next_offset.map(|offset| offset as i64)).unwrap(),
        )
        .unwrap();
        assert_eq!(second.rows[0]["id"], json!(first.returned_rows + 1));
        // Small rows are never cut.
        let small = fetch_page(
            &connection,
            "SELECT id FROM t",
            Pagination::negotiate(Some(50), None).unwrap(),
        )
        .unwrap();
        assert!(!small.cut_at_size_limit);
    }

    #[test]
    fn sqlite_refuses_what_the_lexer_lets_through() {
        let connection = memory_connection();
        let pagination = Pagination::negotiate(None, None).unwrap();
        // A data-modifying statement hidden behind WITH passes the keyword check.
        let error = fetch_page(
            &connection,
            "WITH x AS (SELECT 1) DELETE FROM t",
            pagination,
        )
        .unwrap_err();
        assert!(matches!(error, QueryError::NotReadOnly), "{error:?}");
        let error = fetch_page(&connection, "SELECT * FROM missing", pagination).unwrap_err();
        assert!(
            error.to_string().contains("no such table: missing"),
            "{error}"
        );
        assert!(error.to_string().contains("describe_schema"));
    }
}
