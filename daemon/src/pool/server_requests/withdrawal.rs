//! Why a question a server asked is withdrawn from its caller before an answer came: the
//! server cancelled its request, the call's deadline passed, or the client task it was asked in
//! ended. The reason travels with the token that fires, so the caller's `elicitationClosed` and
//! the server's decline say what happened.

use tokio_util::sync::CancellationToken;

/// When a question still open is withdrawn from its caller, and why, in the words the caller
/// and the server are told ("…asked the caller, but {why}").
#[derive(Clone, Copy)]
pub(crate) struct Withdrawal<'a> {
    token: &'a CancellationToken,
    why: &'static str,
}

impl<'a> Withdrawal<'a> {
    /// The server cancelled its own request (`notifications/cancelled`).
    pub(crate) fn by_the_server(token: &'a CancellationToken) -> Self {
        Withdrawal {
            token,
            why: "the server withdrew its request",
        }
    }

    /// The call the question belongs to ran out of time (its task is then cancelled).
    pub(crate) fn at_the_deadline(token: &'a CancellationToken) -> Self {
        Withdrawal {
            token,
            why: "the call's deadline passed before an answer came",
        }
    }

    /// The client task the question was asked in ended (the server cancelled it, its time to
    /// live ran out, or the connection closed).
    pub(crate) fn with_its_task(token: &'a CancellationToken) -> Self {
        Withdrawal {
            token,
            why: "the task it was asked in ended (cancelled by the server, expired, or its \
                  connection closed)",
        }
    }

    /// Completes when the question is withdrawn; its reason.
    pub(crate) async fn withdrawn(self) -> &'static str {
        self.token.cancelled().await;
        self.why
    }
}
