//! `listTools` pages: what `limit` and `cursor` ask for, checked, and the cursor of the next page.
//! Also, the other way round, following a server's pages: the cursor of the page after one of
//! its list answers.
//!
//! Pure. A cursor is `at:N`, the position of the page's first tool among those the caller may
//! see; the daemon hands it out in `nextCursor` and accepts only that shape back.

use serde_json::Value;
use tool_cli_protocol::search::ListToolsParams;

use crate::error::Error;

/// Tools per page across servers when `limit` is not given.
pub(crate) const DEFAULT_PAGE: usize = 500;
/// The most tools one page may hold.
pub(crate) const MAX_PAGE: usize = 5000;

const METHOD: &str = "listTools";

/// One page: skip `start` tools, then take up to `limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Page {
    pub(crate) start: usize,
    pub(crate) limit: usize,
}

impl Page {
    /// The page `params` ask for, or `None` when they ask for no paging (neither `limit` nor
    /// `cursor`); a missing `limit` with a `cursor` is `default_limit`.
    pub(crate) fn requested(
        params: &ListToolsParams,
        default_limit: usize,
    ) -> Result<Option<Page>, Error> {
        if params.limit.is_none() && params.cursor.is_none() {
            return Ok(None);
        }
        let limit = match params.limit {
            None => default_limit,
            Some(limit) if limit < 1 || limit > MAX_PAGE as i64 => {
                return Err(Error::invalid_params(
                    METHOD,
                    format!("limit {limit} is out of range; expected 1 to {MAX_PAGE}"),
                ));
            }
            Some(limit) => limit as usize,
        };
        let start = match &params.cursor {
            None => 0,
            Some(cursor) => cursor
                .strip_prefix("at:")
                .and_then(|at| at.parse::<usize>().ok())
                .ok_or_else(|| {
                    Error::invalid_params(
                        METHOD,
                        format!(
                            "cursor {cursor:?} was not given by this daemon; pass the nextCursor \
                             of the previous page"
                        ),
                    )
                })?,
        };
        Ok(Some(Page { start, limit }))
    }

    /// Whether the tool at `position` (among those listed) is on this page.
    pub(crate) fn holds(&self, position: usize) -> bool {
        position >= self.start && position - self.start < self.limit
    }

    /// The cursor of the page after this one, when `total` tools are listed in all.
    pub(crate) fn next_cursor(&self, total: usize) -> Option<String> {
        let end = self.start.saturating_add(self.limit);
        (end < total).then(|| format!("at:{end}"))
    }
}

/// The cursor to ask a server for after its list answer `page` (tools, resources, prompts,
/// tasks…) asked for with `previous`: its non-empty `nextCursor`, or `None` when `page` is the
/// last one. A cursor equal to `previous` also ends the listing: a server that hands back the
/// cursor it was given would otherwise be asked for the same page again and again.
pub(crate) fn next_upstream_cursor(page: &Value, previous: Option<&str>) -> Option<String> {
    page.get("nextCursor")
        .and_then(Value::as_str)
        .filter(|next| !next.is_empty() && Some(*next) != previous)
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_servers_pages_end_at_no_empty_or_repeated_cursor() {
        let page = json!({"tools": [], "nextCursor": "b"});
        assert_eq!(next_upstream_cursor(&page, None).as_deref(), Some("b"));
        assert_eq!(next_upstream_cursor(&page, Some("a")).as_deref(), Some("b"));
        assert_eq!(next_upstream_cursor(&page, Some("b")), None);
        assert_eq!(next_upstream_cursor(&json!({"tools": []}), None), None);
        assert_eq!(
            next_upstream_cursor(&json!({"tools": [], "nextCursor": ""}), Some("a")),
            None
        );
        assert_eq!(
            next_upstream_cursor(&json!({"tools": [], "nextCursor": 7}), None),
            None
        );
    }

    fn params(cursor: Option<&str>, limit: Option<i64>) -> ListToolsParams {
        ListToolsParams {
            server: Some("s".into()),
            cursor: cursor.map(str::to_owned),
            limit,
        }
    }

    #[test]
    fn no_limit_and_no_cursor_is_no_paging() {
        assert_eq!(Page::requested(&params(None, None), 500).unwrap(), None);
    }

    #[test]
    fn pages_follow_their_cursors_to_the_end() {
        let first = Page::requested(&params(None, Some(200)), 500)
            .unwrap()
            .unwrap();
        assert_eq!(
            first,
            Page {
                start: 0,
                limit: 200
            }
        );
        assert!(first.holds(0) && first.holds(199) && !first.holds(200));
        let next = first.next_cursor(450).unwrap();
        assert_eq!(next, "at:200");
        let last = Page::requested(&params(Some(&next), Some(200)), 500)
            .unwrap()
            .unwrap();
        assert_eq!(last.next_cursor(450).as_deref(), Some("at:400"));
        let end = Page {
            start: 400,
            limit: 200,
        };
        assert_eq!(end.next_cursor(450), None);
        assert_eq!(
            Page {
                start: 0,
                limit: 450
            }
            .next_cursor(450),
            None
        );
        let defaulted = Page::requested(&params(Some("at:7"), None), 500)
            .unwrap()
            .unwrap();
        assert_eq!(
            defaulted,
            Page {
                start: 7,
                limit: 500
            }
        );
    }

    #[test]
    fn bad_limits_and_foreign_cursors_say_what_is_expected() {
        for limit in [0, -3, 5001] {
            let error = Page::requested(&params(None, Some(limit)), 500).unwrap_err();
            assert!(
                error.to_string().contains("expected 1 to 5000"),
                "{limit}: {error}"
            );
        }
        for cursor in ["", "7", "at:", "at:-1", "page 2"] {
            let error = Page::requested(&params(Some(cursor), None), 500).unwrap_err();
            assert!(
                error.to_string().contains("pass the nextCursor"),
                "{cursor:?}: {error}"
            );
        }
    }
}
