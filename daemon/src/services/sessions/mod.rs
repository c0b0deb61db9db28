//! The sessions service: `openSession`, `sessionSummary`, `listSessions` and `closeSession`
//! over the session store (`store.rs`), which the other services consult for each call
//! (routing facts, guards, search priors) and which, as a call observer, every finished call
//! updates.

mod store;

pub use store::SessionLimits;
pub(crate) use store::{SessionStore, check_id};

use std::sync::Arc;

use tool_cli_protocol::orchestration::{
    CloseSessionResult, ListSessionsResult, OpenSessionParams, OpenSessionResult, SessionParams,
    SessionSummary,
};

use crate::error::Error;
use crate::pipeline::{CallContext, CallObserver};

/// The sessions of every token.
pub(crate) struct Sessions {
    store: Arc<SessionStore>,
}

impl Sessions {
    pub(crate) fn new(limits: SessionLimits) -> Sessions {
        Sessions {
            store: Arc::new(SessionStore::new(limits)),
        }
    }

    /// The store, for the services that route, guard and rank with it.
    pub(crate) fn store(&self) -> &SessionStore {
        &self.store
    }

    /// The store as a call observer: every finished call updates its session.
    pub(crate) fn observer(&self) -> Arc<dyn CallObserver> {
        Arc::clone(&self.store) as Arc<dyn CallObserver>
    }

    /// `openSession`.
    pub(crate) fn open_session(
        &self,
        params: OpenSessionParams,
        context: &CallContext,
    ) -> Result<OpenSessionResult, Error> {
        if params.max_calls == Some(0) || params.max_wall_time_ms == Some(0) {
            return Err(Error::invalid_params(
                tool_cli_protocol::methods::name::OPEN_SESSION,
                "maxCalls and maxWallTimeMs must be at least 1 (leave them out for no cap)",
            ));
        }
        let session_id = self.store.open(
            &context.grant.token_id,
            params.session_id.as_deref(),
            params.task,
            params.labels,
        )?;
        self.store.set_caps(
            &context.grant.token_id,
            &session_id,
            params.max_calls,
            params
                .max_wall_time_ms
                .map(std::time::Duration::from_millis),
        )?;
        Ok(OpenSessionResult { session_id })
    }

    /// `sessionSummary`.
    pub(crate) fn session_summary(
        &self,
        params: SessionParams,
        context: &CallContext,
    ) -> Result<SessionSummary, Error> {
        self.store
            .summary(&context.grant.token_id, &params.session_id)
    }

    /// `listSessions`.
    pub(crate) fn list_sessions(&self, context: &CallContext) -> ListSessionsResult {
        ListSessionsResult {
            sessions: self.store.list(&context.grant.token_id),
        }
    }

    /// `closeSession`.
    pub(crate) fn close_session(
        &self,
        params: SessionParams,
        context: &CallContext,
    ) -> Result<CloseSessionResult, Error> {
        self.store
            .close(&context.grant.token_id, &params.session_id)?;
        Ok(CloseSessionResult { closed: true })
    }
}
