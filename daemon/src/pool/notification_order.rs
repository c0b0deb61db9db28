//! The order between a server's notifications and its answers, kept across rmcp's handler tasks.
//!
//! rmcp reads the transport in order, but hands each notification (`notifications/progress`,
//! `notifications/message`) to our handler on a task of its own, spawned as it arrives, while the
//! answer goes straight to the request awaiting it. A progress step or log line the server sent
//! just before its answer could therefore reach the call's events buffer after the call had
//! stopped watching, and be lost. So the transport is wrapped ([`Sequenced`]): each relayed
//! notification gets a per-connection sequence number as rmcp receives it, and travels to the
//! handler with a [`HandedMark`] in its extensions that marks the number handled when the last
//! copy of it is dropped (after the relay, or wherever rmcp drops it: a task aborted when the
//! server dies counts as handled, so nothing waits for it). A watched call, once answered, waits
//! until every notification numbered before its answer that concerns it (its own progress token,
//! or a log line, which names no request) is handled, bounded by its deadline.
//!
//! Works for every transport: stdio lines and a Streamable HTTP response stream (SSE) both carry
//! a request's notifications before its answer, and rmcp's `receive` is sequential.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use rmcp::RoleClient;
use rmcp::model::{GetExtensions, JsonRpcMessage, ProgressToken, ServerNotification};
use rmcp::transport::Transport;
use tokio::sync::Notify;
use tokio::time::Instant;

/// Which calls a numbered notification concerns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Concerns {
    /// A progress notification: the one call carrying this token.
    Call(ProgressToken),
    /// A log message: it names no request, so every watched call in flight.
    Every,
}

impl Concerns {
    fn includes(&self, token: &ProgressToken) -> bool {
        match self {
            Concerns::Call(own) => own == token,
            Concerns::Every => true,
        }
    }

    /// Whether a call could see both: two notifications whose relative order a host could see.
    fn overlaps(&self, other: &Concerns) -> bool {
        match (self, other) {
            (Concerns::Call(one), Concerns::Call(other)) => one == other,
            _ => true,
        }
    }
}

/// One connection's numbered notifications not handled yet, and a wake-up for calls waiting on
/// them.
#[derive(Default)]
pub(crate) struct NotificationOrder {
    inner: Mutex<Outstanding>,
    handled: Notify,
}

#[derive(Default)]
struct Outstanding {
    next: u64,
    pending: BTreeMap<u64, Concerns>,
}

impl Outstanding {
    /// Whether a notification numbered below `sequence` that a call could see beside one that
    /// concerns `concerns` is still pending.
    fn overlapping_before(&self, concerns: &Concerns, sequence: u64) -> bool {
        self.pending
            .range(..sequence)
            .any(|(_, earlier)| earlier.overlaps(concerns))
    }

    /// Whether a notification numbered below `horizon` that concerns `token` is still pending.
    fn pending_before(&self, token: &ProgressToken, horizon: u64) -> bool {
        self.pending
            .range(..horizon)
            .any(|(_, concerns)| concerns.includes(token))
    }
}

/// Marks its notification handled when dropped.
struct Handed {
    order: Arc<NotificationOrder>,
    sequence: u64,
    concerns: Concerns,
}

impl Drop for Handed {
    fn drop(&mut self) {
        self.order
            .inner
            .lock()
            .unwrap()
            .pending
            .remove(&self.sequence);
        self.order.handled.notify_waiters();
    }
}

/// Travels with a numbered notification (in its rmcp extensions, which must be `Clone`): the
/// number is handled once the last copy is dropped.
#[derive(Clone)]
pub(crate) struct HandedMark {
    handed: Arc<Handed>,
}

impl HandedMark {
    /// Waits until every notification received before this one that a call could see beside it
    /// is handled, or until `deadline`: rmcp hands each notification to the handler on a task
    /// of its own, so without this wait progress 2 could be relayed before progress 1 (and 1
    /// then dropped as not moving forward) or a log line after the step the server sent after
    /// it. The earliest pending notification never waits, so the wait always ends.
    pub(crate) async fn in_turn(&self, deadline: Instant) {
        let order = &self.handed.order;
        loop {
            let handled = order.handled.notified();
            tokio::pin!(handled);
            handled.as_mut().enable();
            if !order
                .inner
                .lock()
                .unwrap()
                .overlapping_before(&self.handed.concerns, self.handed.sequence)
            {
                return;
            }
            tokio::select! {
                () = handled => {}
                () = tokio::time::sleep_until(deadline) => return,
            }
        }
    }
}

/// Travels with a server's request (elicitation, sampling, roots) in its rmcp extensions: the
/// notifications received before it, which a host should see before the question. Not a mark
/// of its own: a question may wait minutes for a person, and nothing after it waits for it.
#[derive(Clone)]
pub(crate) struct RequestTurn {
    order: Arc<NotificationOrder>,
    horizon: u64,
}

impl RequestTurn {
    /// Waits until every notification received before the request is handled, or `deadline`.
    async fn wait(&self, deadline: Instant) {
        loop {
            let handled = self.order.handled.notified();
            tokio::pin!(handled);
            handled.as_mut().enable();
            if !self
                .order
                .inner
                .lock()
                .unwrap()
                .overlapping_before(&Concerns::Every, self.horizon)
            {
                return;
            }
            tokio::select! {
                () = handled => {}
                () = tokio::time::sleep_until(deadline) => return,
            }
        }
    }
}

impl NotificationOrder {
    /// Numbers a notification that concerns `concerns`; handled when the mark (and every clone)
    /// is dropped.
    pub(crate) fn number(self: &Arc<Self>, concerns: Concerns) -> HandedMark {
        let mut inner = self.inner.lock().unwrap();
        let sequence = inner.next;
        inner.next += 1;
        inner.pending.insert(sequence, concerns.clone());
        HandedMark {
            handed: Arc::new(Handed {
                order: Arc::clone(self),
                sequence,
                concerns,
            }),
        }
    }

    /// The number the next notification will get: everything received so far is below it.
    pub(crate) fn horizon(&self) -> u64 {
        self.inner.lock().unwrap().next
    }

    /// Waits until every notification numbered below `horizon` that concerns the call carrying
    /// `token` is handled, or until `deadline`. Returns whether they all were.
    pub(crate) async fn handled_before(
        &self,
        token: &ProgressToken,
        horizon: u64,
        deadline: Instant,
    ) -> bool {
        loop {
            // Registered before the check, so a mark dropped between the check and the await
            // still wakes us.
            let handled = self.handled.notified();
            tokio::pin!(handled);
            handled.as_mut().enable();
            if !self.inner.lock().unwrap().pending_before(token, horizon) {
                return true;
            }
            tokio::select! {
                () = handled => {}
                () = tokio::time::sleep_until(deadline) => return false,
            }
        }
    }

    /// How many numbered notifications are not handled yet; for tests of boundedness.
    #[cfg(test)]
    fn pending(&self) -> usize {
        self.inner.lock().unwrap().pending.len()
    }
}

/// Longest a handler waits for its notification's turn ([`HandedMark::in_turn`]); past it the
/// notification is relayed out of order rather than held (an earlier one's handler is stuck).
const TURN_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Waits for the turn of the notification that came with `extensions` (a handler calls it before
/// relaying); at once for a notification that was not numbered.
pub(crate) async fn in_turn(extensions: &rmcp::model::Extensions) {
    if let Some(mark) = extensions.get::<HandedMark>() {
        mark.in_turn(Instant::now() + TURN_WAIT).await;
    } else if let Some(turn) = extensions.get::<RequestTurn>() {
        turn.wait(Instant::now() + TURN_WAIT).await;
    }
}

/// What a received message concerns, when it is a notification the handler relays to calls.
fn concerns(message: &rmcp::service::RxJsonRpcMessage<RoleClient>) -> Option<Concerns> {
    let JsonRpcMessage::Notification(notification) = message else {
        return None;
    };
    match &notification.notification {
        ServerNotification::ProgressNotification(progress) => {
            Some(Concerns::Call(progress.params.progress_token.clone()))
        }
        ServerNotification::LoggingMessageNotification(_) => Some(Concerns::Every),
        _ => None,
    }
}

/// A client transport that numbers the relayed notifications it hands rmcp (see the module
/// documentation).
pub(crate) struct Sequenced<T> {
    pub(crate) inner: T,
    pub(crate) order: Arc<NotificationOrder>,
}

impl<T> Transport<RoleClient> for Sequenced<T>
where
    T: Transport<RoleClient> + 'static,
{
    type Error = T::Error;

    fn send(
        &mut self,
        item: rmcp::service::TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<rmcp::service::RxJsonRpcMessage<RoleClient>> {
        let mut message = self.inner.receive().await?;
        if let Some(concerns) = concerns(&message)
            && let JsonRpcMessage::Notification(notification) = &mut message
        {
            let mark = self.order.number(concerns);
            notification.notification.extensions_mut().insert(mark);
        } else if let JsonRpcMessage::Request(request) = &mut message {
            let turn = RequestTurn {
                order: Arc::clone(&self.order),
                horizon: self.order.horizon(),
            };
            request.request.extensions_mut().insert(turn);
        }
        Some(message)
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn token(n: i64) -> ProgressToken {
        ProgressToken(rmcp::model::NumberOrString::Number(n))
    }

    fn far() -> Instant {
        Instant::now() + Duration::from_secs(3600)
    }

    #[tokio::test]
    async fn a_call_waits_for_a_handler_that_runs_late() {
        let order = Arc::new(NotificationOrder::default());
        let last_step = order.number(Concerns::Call(token(1)));
        let horizon = order.horizon();
        let waiting = {
            let order = Arc::clone(&order);
            tokio::spawn(async move { order.handled_before(&token(1), horizon, far()).await })
        };
        // The waiter has run up to its wait and found the step pending.
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
        assert!(!waiting.is_finished(), "the call waits for its last step");
        drop(last_step);
        assert!(waiting.await.unwrap(), "released once the step is handled");
        assert_eq!(order.pending(), 0);
    }

    #[tokio::test]
    async fn a_log_line_concerns_every_call_and_a_clone_keeps_it_pending() {
        let order = Arc::new(NotificationOrder::default());
        let log = order.number(Concerns::Every);
        let copy = log.clone();
        let horizon = order.horizon();
        drop(log);
        assert!(
            !order
                .handled_before(&token(7), horizon, Instant::now())
                .await,
            "a copy still held keeps the line pending"
        );
        drop(copy);
        assert!(order.handled_before(&token(7), horizon, far()).await);
    }

    #[tokio::test]
    async fn a_notification_for_another_call_or_after_the_answer_is_not_waited_for() {
        let order = Arc::new(NotificationOrder::default());
        let _other_call = order.number(Concerns::Call(token(2)));
        let horizon = order.horizon();
        let _after_the_answer = order.number(Concerns::Call(token(1)));
        // Resolves at once with a deadline already past, and says all were handled.
        assert!(
            order
                .handled_before(&token(1), horizon, Instant::now())
                .await
        );
    }

    #[tokio::test]
    async fn a_step_waits_for_the_steps_and_lines_received_before_it_and_no_others() {
        let order = Arc::new(NotificationOrder::default());
        let first_step = order.number(Concerns::Call(token(1)));
        let other_call = order.number(Concerns::Call(token(2)));
        let line = order.number(Concerns::Every);
        let second_step = order.number(Concerns::Call(token(1)));
        // Call 2's step waits for nothing of call 1's.
        other_call.in_turn(far()).await;
        let waiting = {
            let second_step = second_step.clone();
            tokio::spawn(async move { second_step.in_turn(far()).await })
        };
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
        assert!(
            !waiting.is_finished(),
            "step 2 waits for step 1 and the line"
        );
        drop(first_step);
        drop(other_call);
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
        assert!(!waiting.is_finished(), "and still for the line");
        drop(line);
        waiting.await.unwrap();
        // A wait that cannot end in time ends at its deadline.
        let stuck = order.number(Concerns::Every);
        let after = order.number(Concerns::Call(token(3)));
        after.in_turn(Instant::now()).await;
        drop((stuck, after, second_step));
        assert_eq!(order.pending(), 0);
    }

    #[tokio::test]
    async fn a_question_waits_for_what_came_before_it_and_nothing_waits_for_the_question() {
        let order = Arc::new(NotificationOrder::default());
        let before = order.number(Concerns::Call(token(1)));
        let turn = RequestTurn {
            order: Arc::clone(&order),
            horizon: order.horizon(),
        };
        let after = order.number(Concerns::Call(token(2)));
        let waiting = {
            let turn = turn.clone();
            tokio::spawn(async move { turn.wait(far()).await })
        };
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
        assert!(
            !waiting.is_finished(),
            "the question waits for the step before it"
        );
        // The line after the question is not held by it (a question may wait for a person).
        after
            .in_turn(Instant::now() + Duration::from_secs(3600))
            .await;
        assert!(!waiting.is_finished());
        drop(before);
        waiting.await.unwrap();
        drop(after);
    }

    #[tokio::test]
    async fn a_server_that_dies_leaves_no_call_hanging() {
        let order = Arc::new(NotificationOrder::default());
        let step = order.number(Concerns::Call(token(1)));
        let horizon = order.horizon();
        // The handler task is aborted with the connection: its mark goes with it.
        let handler = tokio::spawn(async move {
            let _step = step;
            std::future::pending::<()>().await;
        });
        let waiting = {
            let order = Arc::clone(&order);
            tokio::spawn(async move { order.handled_before(&token(1), horizon, far()).await })
        };
        handler.abort();
        assert!(waiting.await.unwrap());
        // And a mark that is never dropped costs the call its deadline, not forever.
        let _stuck = order.number(Concerns::Call(token(3)));
        let horizon = order.horizon();
        assert!(
            !order
                .handled_before(
                    &token(3),
                    horizon,
                    Instant::now() + Duration::from_millis(1)
                )
                .await
        );
    }
}

/// The whole path through rmcp: a server writes a progress step and a log line just before its
/// answer, the handler runs late (held until released), and the answered call still finds both
/// relayed once its wait ends. Without the marks travelling in the extensions to the handler
/// the wait would end at once and find nothing relayed.
#[cfg(test)]
mod through_rmcp {
    use super::*;
    #[allow(deprecated)] // Logging is deprecated by rmcp for the 2026 protocol (SEP-2577).
    use rmcp::model::LoggingMessageNotificationParam;
    use rmcp::model::{ClientRequest, PingRequest, ProgressNotificationParam};
    use rmcp::service::{NotificationContext, PeerRequestOptions};
    use rmcp::{ClientHandler, ServiceExt as _};
    use serde_json::{Value, json};
    use std::time::Duration;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    /// Relays nothing until released, then records what it got.
    #[derive(Clone)]
    struct LateHandler {
        /// Permits to relay, one per notification (a `Notify` would keep only one).
        release: Arc<tokio::sync::Semaphore>,
        relayed: Arc<Mutex<Vec<String>>>,
    }

    impl ClientHandler for LateHandler {
        async fn on_progress(
            &self,
            params: ProgressNotificationParam,
            context: NotificationContext<RoleClient>,
        ) {
            self.release.acquire().await.unwrap().forget();
            let step = format!("progress {}", params.progress);
            self.relayed.lock().unwrap().push(step);
            drop(context);
        }

        #[allow(deprecated)]
        async fn on_logging_message(
            &self,
            params: LoggingMessageNotificationParam,
            context: NotificationContext<RoleClient>,
        ) {
            self.release.acquire().await.unwrap().forget();
            self.relayed
                .lock()
                .unwrap()
                .push(format!("log {}", params.data));
            drop(context);
        }
    }

    /// Answers the handshake, then each request with `before` written just ahead of the answer.
    async fn server(io: tokio::io::DuplexStream, before: impl Fn(&Value) -> Vec<Value>) {
        let (read, mut write) = tokio::io::split(io);
        let mut lines = BufReader::new(read).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let message: Value = serde_json::from_str(&line).unwrap();
            let Some(id) = message.get("id").cloned() else {
                continue;
            };
            let result = if message["method"] == "initialize" {
                json!({"protocolVersion": "2025-06-18", "capabilities": {"logging": {}},
                       "serverInfo": {"name": "late", "version": "1"}})
            } else {
                json!({})
            };
            let mut out = String::new();
            if message["method"] != "initialize" {
                for notification in before(&message) {
                    out.push_str(&format!("{notification}\n"));
                }
            }
            let answer = json!({"jsonrpc": "2.0", "id": id, "result": result});
            out.push_str(&format!("{answer}\n"));
            write.write_all(out.as_bytes()).await.unwrap();
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_step_sent_before_the_answer_is_relayed_before_the_watch_ends() {
        let (client_io, server_io) = tokio::io::duplex(64 * 1024);
        tokio::spawn(server(server_io, |request| {
            let token = request["params"]["_meta"]["progressToken"].clone();
            vec![
                json!({"jsonrpc": "2.0", "method": "notifications/progress",
                       "params": {"progressToken": token, "progress": 3, "total": 3}}),
                json!({"jsonrpc": "2.0", "method": "notifications/message",
                       "params": {"level": "info", "data": "done"}}),
            ]
        }));
        let order = Arc::new(NotificationOrder::default());
        let handler = LateHandler {
            release: Arc::new(tokio::sync::Semaphore::new(0)),
            relayed: Arc::default(),
        };
        let transport = Sequenced {
            inner: rmcp::transport::IntoTransport::<RoleClient, std::io::Error, _>::into_transport(
                client_io,
            ),
            order: Arc::clone(&order),
        };
        let service = handler.clone().serve(transport).await.unwrap();
        let handle = service
            .peer()
            .send_cancellable_request(
                ClientRequest::PingRequest(PingRequest::default()),
                PeerRequestOptions::with_timeout(Duration::from_secs(60)),
            )
            .await
            .unwrap();
        let progress_token = handle.progress_token.clone();
        handle.await_response().await.unwrap();
        // Answered: the handler has relayed nothing yet (it is held).
        assert!(handler.relayed.lock().unwrap().is_empty());
        let horizon = order.horizon();
        let deadline = Instant::now() + Duration::from_secs(60);
        let release = async { handler.release.add_permits(2) };
        let (all_handled, ()) = tokio::join!(
            order.handled_before(&progress_token, horizon, deadline),
            release
        );
        assert!(all_handled);
        let mut relayed = handler.relayed.lock().unwrap().clone();
        relayed.sort();
        assert_eq!(relayed, ["log \"done\"", "progress 3"]);
        service.cancel().await.unwrap();
    }
}
