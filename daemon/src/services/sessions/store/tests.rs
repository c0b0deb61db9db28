//! Unit tests of the session store: scoping, bounds, guards and summaries.

use std::sync::Arc;
use std::time::Duration;

use tool_cli_protocol::ErrorData;

use super::*;
use crate::auth::Grant;
use crate::pipeline::routing::{Rule, Selection};
use crate::pipeline::{CallContext, RecordedError};
use crate::policy::Scope;

fn context(token: &str, session: &str) -> CallContext {
    let mut context = CallContext::new(Grant {
        token_id: token.into(),
        is_owner: false,
        scope: Arc::new(Scope::unrestricted()),
    });
    context.session_id = Some(session.into());
    context
}

/// A finished call of `tool` on `server` in `session` of `token`.
fn record(token: &str, session: &str, server: &str, tool: &str, success: bool) -> CallRecord {
    let mut record = CallRecord::new(&context(token, session), tool, "h1".into());
    record.requested_server = Some(server.into());
    record.server = Some(server.into());
    record.executed = true;
    record.success = success;
    record.latency = Duration::from_millis(10);
    record.selection = Some(Selection::named(server));
    if !success {
        record.error = Some(RecordedError {
            code: -32003,
            kind: "upstream",
            message: "boom".into(),
        });
    }
    record
}

#[tokio::test]
async fn sessions_are_namespaced_by_token_and_never_revealed_to_others() {
    let store = SessionStore::new(SessionLimits::default());
    let id = store
        .open("alice", None, Some("read the report".into()), vec![])
        .unwrap();
    assert!(id.starts_with("s-"));
    store.observe(&record("alice", &id, "fs", "read_file", true));
    assert_eq!(store.summary("alice", &id).unwrap().calls, 1);
    // Bob gets exactly the answer for an id that never existed.
    let theirs = store.summary("bob", &id).unwrap_err();
    let never = store.summary("bob", "s-never-used").unwrap_err();
    assert_eq!(kind_of_error(&theirs), "unknownSession");
    assert_eq!(
        theirs.to_string().replace(&id, "X"),
        never.to_string().replace("s-never-used", "X")
    );
    assert!(store.close("bob", &id).is_err());
    assert!(store.list("bob").is_empty());
    // Bob using the same id gets a session of his own.
    store.touch("callTool", "bob", &id).unwrap();
    store.observe(&record("bob", &id, "fs", "write_file", false));
    assert_eq!(store.summary("alice", &id).unwrap().calls, 1);
    assert_eq!(store.summary("bob", &id).unwrap().errors, 1);
}

fn kind_of_error(error: &Error) -> &'static str {
    error.kind()
}

#[tokio::test]
async fn the_same_failing_call_is_refused_after_the_limit_and_a_success_resets_it() {
    let store = SessionStore::new(SessionLimits {
        loop_limit: 3,
        ..SessionLimits::default()
    });
    let session = store.touch("callTool", "t", "s1").unwrap();
    for _ in 0..3 {
        assert!(
            store
                .advise(&session, Some("fs"), "read", "h1")
                .refusal
                .is_none()
        );
        store.observe(&record("t", "s1", "fs", "read", false));
    }
    let refusal = store
        .advise(&session, Some("fs"), "read", "h1")
        .refusal
        .expect("refused on the fourth attempt");
    let Some(ErrorData::LoopDetected {
        failures, limit, ..
    }) = refusal.data()
    else {
        panic!("{refusal}");
    };
    assert_eq!((*failures, *limit), (3, 3));
    assert!(refusal.to_string().contains("failed 3 times"), "{refusal}");
    // Other arguments, another tool: not the same call.
    assert!(
        store
            .advise(&session, Some("fs"), "read", "h2")
            .refusal
            .is_none()
    );
    // The guard's own refusal does not count as another failure, and a success resets the count.
    let mut refused = record("t", "s1", "fs", "read", false);
    refused.error.as_mut().unwrap().kind = "loopDetected";
    refused.executed = false;
    store.observe(&refused);
    store.observe(&record("t", "s1", "fs", "read", true));
    assert!(
        store
            .advise(&session, Some("fs"), "read", "h1")
            .refusal
            .is_none()
    );
}

#[tokio::test]
async fn a_call_budget_is_a_watchdog() {
    let store = SessionStore::new(SessionLimits {
        max_calls: Some(2),
        ..SessionLimits::default()
    });
    let session = store.touch("callTool", "t", "s").unwrap();
    store.observe(&record("t", "s", "fs", "a", true));
    store.observe(&record("t", "s", "fs", "b", true));
    let refusal = store
        .advise(&session, None, "c", "h")
        .refusal
        .expect("budget spent");
    assert_eq!(refusal.kind(), "budgetExceeded");
}

#[tokio::test(start_paused = true)]
async fn sessions_are_bounded_in_number_and_idle_time() {
    let store = SessionStore::new(SessionLimits {
        max_sessions: 3,
        idle_ttl: Duration::from_secs(60),
        ..SessionLimits::default()
    });
    for i in 0..3 {
        store.touch("callTool", "t", &format!("s{i}")).unwrap();
        tokio::time::advance(Duration::from_secs(1)).await;
    }
    store.touch("callTool", "t", "s3").unwrap();
    assert_eq!(store.len(), 3);
    assert!(
        store.summary("t", "s0").is_err(),
        "the least recently used went"
    );
    tokio::time::advance(Duration::from_secs(61)).await;
    assert!(
        store.summary("t", "s3").is_err(),
        "idle sessions are forgotten"
    );
    assert!(store.list("t").is_empty());
}

#[tokio::test]
async fn a_summary_counts_calls_tools_rules_and_recency() {
    let store = SessionStore::new(SessionLimits::default());
    let session = store.touch("callTool", "t", "s").unwrap();
    store.observe(&record("t", "s", "fs", "read_file", true));
    store.observe(&record("t", "s", "github", "read_file", true));
    let mut routed = record("t", "s", "fs", "read_file", false);
    routed.requested_server = None;
    routed.selection = Some(Selection {
        server: "fs".into(),
        rule: Rule::SessionRecency,
        alternatives: Vec::new(),
    });
    store.observe(&routed);
    let summary = store.summary("t", "s").unwrap();
    assert_eq!((summary.calls, summary.executed, summary.errors), (3, 3, 1));
    assert!((summary.success_rate - 2.0 / 3.0).abs() < 1e-9);
    assert_eq!(summary.latency_ms.unwrap().samples, 3);
    assert_eq!(summary.tools_used[0].server, "fs");
    assert_eq!(summary.tools_used[0].calls, 2);
    assert_eq!(summary.rules_fired.get("named"), Some(&2));
    assert_eq!(summary.rules_fired.get("session-recency"), Some(&1));
    // The last successful server for the tool is what recency routes to.
    let advice = store.advise(&session, None, "read_file", "h9");
    assert_eq!(advice.most_recent.as_deref(), Some("github"));
}

#[test]
fn session_ids_are_checked() {
    let store = SessionStore::new(SessionLimits::default());
    for bad in ["", "has space", "ünicode", &"x".repeat(129), "a/b"] {
        let error = store.touch("callTool", "t", bad).err().unwrap();
        let Some(ErrorData::InvalidParams { method, message }) = error.data() else {
            panic!("invalidParams: {error}");
        };
        assert_eq!(method, "callTool", "the method, not the param, is named");
        assert!(message.starts_with("sessionId \""), "{message}");
        assert!(message.contains("not a valid session id"), "{bad}");
    }
    assert!(store.touch("callTool", "t", "agent-1:run.2_a").is_ok());
}

#[tokio::test(start_paused = true)]
async fn a_token_flooding_the_store_evicts_only_its_own_sessions() {
    let store = SessionStore::new(SessionLimits {
        max_sessions: 4,
        ..SessionLimits::default()
    });
    store.touch("callTool", "owner", "work").unwrap();
    tokio::time::advance(Duration::from_secs(1)).await;
    for i in 0..20 {
        store.touch("callTool", "agent", &format!("s{i}")).unwrap();
        tokio::time::advance(Duration::from_secs(1)).await;
    }
    assert_eq!(store.len(), 4);
    assert!(
        store.summary("owner", "work").is_ok(),
        "the owner's older session stays"
    );
    let kept: Vec<String> = store
        .list("agent")
        .into_iter()
        .map(|info| info.session_id)
        .collect();
    assert_eq!(kept, ["s19", "s18", "s17"], "the flooder keeps its newest");
}

#[test]
fn a_task_or_labels_too_large_are_refused_with_the_limit() {
    let store = SessionStore::new(SessionLimits::default());
    let long_task = "x".repeat(MAX_TASK_BYTES + 1);
    let error = store
        .open("t", None, Some(long_task), Vec::new())
        .unwrap_err();
    assert!(error.to_string().contains("at most 16384 bytes"), "{error}");
    let many = vec!["l".to_owned(); MAX_LABELS + 1];
    let error = store.open("t", None, None, many).unwrap_err();
    assert!(error.to_string().contains("at most 32"), "{error}");
    let long_label = vec!["l".repeat(MAX_LABEL_BYTES + 1)];
    let error = store.open("t", None, None, long_label).unwrap_err();
    assert!(error.to_string().contains("at most 256 bytes"), "{error}");
    assert!(store.list("t").is_empty(), "nothing was opened");
    assert!(
        store
            .open(
                "t",
                None,
                Some("x".repeat(MAX_TASK_BYTES)),
                vec!["a".into()]
            )
            .is_ok()
    );
}

#[test]
fn a_call_after_a_validation_refusal_with_other_arguments_is_a_corrective_retry() {
    let store = SessionStore::new(SessionLimits::default());
    let session = store.touch("callTool", "t", "s1").unwrap();
    let corrective = |hash: &str| {
        store
            .advise(&session, Some("db"), "query", hash)
            .corrective_retry
    };
    assert!(!corrective("h2"), "nothing refused yet");
    // Refused for its arguments (hash h1).
    let mut refused = record("t", "s1", "db", "query", false);
    refused.executed = false;
    refused.error = Some(RecordedError {
        code: -32602,
        kind: "invalidArguments",
        message: "`limit` must be an integer".into(),
    });
    store.observe(&refused);
    assert!(corrective("h2"), "other arguments after the refusal");
    assert!(
        !corrective("h1"),
        "the same arguments again are not a correction"
    );
    assert!(
        !store
            .advise(&session, Some("other"), "query", "h2")
            .corrective_retry,
        "another server's tool"
    );
    // The retry went through: the next call is an ordinary one.
    let mut fixed = record("t", "s1", "db", "query", true);
    fixed.arguments_hash = "h2".into();
    store.observe(&fixed);
    assert!(!corrective("h3"));
    // An upstream failure is not a validation refusal.
    store.observe(&record("t", "s1", "db", "query", false));
    assert!(!corrective("h4"));
}
