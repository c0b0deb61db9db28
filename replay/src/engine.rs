//! The replay engine (pure: messages in, messages out, no I/O): a recording serves as an MCP
//! server, answering each live request with the recorded answer.
//!
//! **Plan.** When a recording is loaded, every server message gets an *anchor*, the client
//! message after which it may be sent, and an *owner*, the client request it belongs to:
//! - a response is owned by the request with its id, and anchored to that request, or to the
//!   client's last answer to a server request made during it (a tool call that asked for
//!   sampling answers only after the sampling answer came back);
//! - a notification or a server request is owned by the request whose `progressToken` it
//!   carries, or by the one request in flight when it was sent; it is anchored to that owner's
//!   latest client message, or, with no owner, to the client message just before it (so a
//!   `notifications/tools/list_changed` comes back at its place in the session).
//!
//! **Matching.** A live client message is matched to a recorded one: in [`Mode::Strict`], the
//! next recorded client message, in order; in [`Mode::Matching`], the earliest unanswered
//! recorded message with the same normal form (`normalize.rs`: ids, `_meta`, timestamps and
//! named pointers do not count). Once matched, every server message anchored to it is released,
//! in recorded order, with the live request's id put in the response and its progress token in
//! progress notifications.
//!
//! **Never a hang.** A live request that matches nothing gets a JSON-RPC error at once, naming
//! what was expected (strict) or what the recording has (matching) against what was received.
//! `ping` is always answered. A notification or answer that matches nothing is ignored with a
//! note. A server message waits only for its own anchor, never for unrelated client messages.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::normalize::{Normalizer, canonical, short};
use crate::recording::{Recording, Sender};

/// JSON-RPC code of a strict-mode mismatch: the live request is not the next recorded one.
pub const REPLAY_MISMATCH: i64 = -32050;
/// JSON-RPC code of a request the recording does not have (or has already answered).
pub const NOT_RECORDED: i64 = -32051;
/// How much of a message an error text quotes.
const QUOTE: usize = 300;

/// How live client messages are matched to recorded ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The live client must send what the recording's client sent, in the same order.
    Strict,
    /// Each live request is answered by the earliest unanswered recorded request like it.
    Matching,
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Request(Value),
    Notification,
    Response(Value),
}

fn kind(message: &Value) -> Kind {
    match (message.get("method"), message.get("id")) {
        (Some(_), Some(id)) => Kind::Request(id.clone()),
        (Some(_), None) => Kind::Notification,
        (None, id) => Kind::Response(id.cloned().unwrap_or(Value::Null)),
    }
}

#[derive(Debug)]
struct ClientItem {
    message: Value,
    kind: Kind,
    key: String,
    seq: u64,
}

#[derive(Debug)]
struct ServerItem {
    message: Value,
    kind: Kind,
    anchor: Option<usize>,
    owner: Option<usize>,
}

/// A recording prepared for replay: shared by every session.
#[derive(Debug)]
pub struct Replay {
    client: Vec<ClientItem>,
    server: Vec<ServerItem>,
    /// Server items by anchor (`None`: sent when a session starts), in recorded order.
    released_by: HashMap<Option<usize>, Vec<usize>>,
    mode: Mode,
    normalizer: Normalizer,
}

fn progress_token(message: &Value) -> Option<String> {
    message
        .pointer("/params/_meta/progressToken")
        .map(canonical)
}

impl Replay {
    /// Plans the replay of `recording`.
    pub fn new(recording: &Recording, mode: Mode, normalizer: Normalizer) -> Replay {
        let mut client: Vec<ClientItem> = Vec::new();
        let mut server: Vec<ServerItem> = Vec::new();
        let mut open_requests: HashMap<String, usize> = HashMap::new();
        let mut in_flight: Vec<usize> = Vec::new();
        let mut progress: HashMap<String, usize> = HashMap::new();
        let mut server_requests: HashMap<String, Option<usize>> = HashMap::new();
        let mut latest_under: HashMap<usize, usize> = HashMap::new();
        let mut last_client: Option<usize> = None;

        for entry in &recording.entries {
            let message = entry.message.clone();
            let item_kind = kind(&message);
            match entry.from {
                Sender::Client => {
                    let index = client.len();
                    match &item_kind {
                        Kind::Request(id) => {
                            open_requests.insert(canonical(id), index);
                            in_flight.push(index);
                            if let Some(token) = progress_token(&message) {
                                progress.insert(token, index);
                            }
                            latest_under.insert(index, index);
                        }
                        Kind::Response(id) => {
                            if let Some(Some(owner)) = server_requests.remove(&canonical(id)) {
                                latest_under.insert(owner, index);
                            }
                        }
                        Kind::Notification => {}
                    }
                    client.push(ClientItem {
                        key: normalizer.key(&message),
                        message,
                        kind: item_kind,
                        seq: entry.seq,
                    });
                    last_client = Some(index);
                }
                Sender::Server => {
                    let (owner, anchor) = match &item_kind {
                        Kind::Response(id) => match open_requests.remove(&canonical(id)) {
                            Some(request) => {
                                in_flight.retain(|open| *open != request);
                                (Some(request), latest_under.get(&request).copied())
                            }
                            None => (None, last_client),
                        },
                        Kind::Notification | Kind::Request(_) => {
                            let by_token = message
                                .pointer("/params/progressToken")
                                .map(canonical)
                                .and_then(|token| progress.get(&token).copied())
                                .filter(|request| in_flight.contains(request));
                            let owner = by_token.or(match in_flight.as_slice() {
                                [only] => Some(*only),
                                _ => None,
                            });
                            let anchor = match owner {
                                Some(owner) => latest_under.get(&owner).copied(),
                                None => last_client,
                            };
                            if let Kind::Request(id) = &item_kind {
                                server_requests.insert(canonical(id), owner);
                            }
                            (owner, anchor)
                        }
                    };
                    server.push(ServerItem {
                        message,
                        kind: item_kind,
                        anchor,
                        owner,
                    });
                }
            }
        }
        let mut released_by: HashMap<Option<usize>, Vec<usize>> = HashMap::new();
        for (index, item) in server.iter().enumerate() {
            released_by.entry(item.anchor).or_default().push(index);
        }
        Replay {
            client,
            server,
            released_by,
            mode,
            normalizer,
        }
    }

    /// A new session (one client connection).
    pub fn session(self: &Arc<Replay>) -> Session {
        Session {
            replay: Arc::clone(self),
            matched: vec![false; self.client.len()],
            live_ids: vec![None; self.client.len()],
            live_progress: vec![None; self.client.len()],
            cursor: 0,
        }
    }

    /// How many client messages the recording holds.
    pub fn client_messages(&self) -> usize {
        self.client.len()
    }
}

/// A message to send to the live client.
#[derive(Debug, Clone, PartialEq)]
pub struct Outgoing {
    /// The message.
    pub message: Value,
    /// The live request it belongs to (its id), if any: an HTTP server sends it on that
    /// request's response stream.
    pub owner: Option<Value>,
    /// It is the response to `owner` (the stream can close after it).
    pub completes_owner: bool,
}

/// What one live message caused.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Step {
    /// Messages to send, in order.
    pub outgoing: Vec<Outgoing>,
    /// Diagnostics for the operator (stderr), never sent to the client.
    pub notes: Vec<String>,
}

/// One client connection's replay.
#[derive(Debug)]
pub struct Session {
    replay: Arc<Replay>,
    matched: Vec<bool>,
    live_ids: Vec<Option<Value>>,
    live_progress: Vec<Option<Value>>,
    cursor: usize,
}

impl Session {
    /// What the server sent before the client said anything.
    pub fn start(&mut self) -> Step {
        let mut step = Step::default();
        self.release(None, &mut step);
        step
    }

    /// Takes one live client message.
    pub fn receive(&mut self, message: &Value) -> Step {
        let mut step = Step::default();
        let live_kind = kind(message);
        let found = match self.replay.mode {
            Mode::Strict => self.next_in_order(message, &live_kind),
            Mode::Matching => self.find_match(message, &live_kind),
        };
        match found {
            Ok(index) => {
                self.matched[index] = true;
                if let Kind::Request(id) = &live_kind {
                    self.live_ids[index] = Some(id.clone());
                    self.live_progress[index] =
                        message.pointer("/params/_meta/progressToken").cloned();
                }
                if self.replay.mode == Mode::Strict {
                    self.cursor = index + 1;
                }
                self.release(Some(index), &mut step);
            }
            Err(problem) => match live_kind {
                Kind::Request(id) if method_of(message) == Some("ping") => {
                    step.outgoing.push(Outgoing {
                        message: json!({"jsonrpc": "2.0", "id": id, "result": {}}),
                        owner: Some(id),
                        completes_owner: true,
                    });
                }
                Kind::Request(id) => {
                    step.notes.push(problem.message.clone());
                    step.outgoing.push(Outgoing {
                        message: json!({
                            "jsonrpc": "2.0",
                            "id": id,
                            "error": {"code": problem.code, "message": problem.message, "data": problem.data},
                        }),
                        owner: Some(id),
                        completes_owner: true,
                    });
                }
                Kind::Notification | Kind::Response(_) => {
                    step.notes.push(format!(
                        "ignored (not in the recording): {}",
                        problem.message
                    ));
                }
            },
        }
        step
    }

    /// Recorded client requests this session never sent (for the operator at the end).
    pub fn unreplayed(&self) -> Vec<String> {
        self.replay
            .client
            .iter()
            .zip(&self.matched)
            .filter(|(item, matched)| !**matched && matches!(item.kind, Kind::Request(_)))
            .map(|(item, _)| format!("line {}: {}", item.seq + 1, short(&item.key, 120)))
            .collect()
    }

    fn next_in_order(&self, message: &Value, live: &Kind) -> Result<usize, Problem> {
        let received = self.replay.normalizer.key(message);
        let Some(expected) = self.replay.client.get(self.cursor) else {
            return Err(Problem {
                code: REPLAY_MISMATCH,
                message: format!(
                    "replay mismatch: the recording has no more client messages (all {} were \
                     replayed); received {}",
                    self.replay.client.len(),
                    short(&received, QUOTE)
                ),
                data: json!({"expected": null, "received": received}),
            });
        };
        let same = match (&expected.kind, live) {
            (Kind::Request(_), Kind::Request(_)) | (Kind::Notification, Kind::Notification) => {
                expected.key == received
            }
            (Kind::Response(recorded), Kind::Response(live)) => recorded == live,
            _ => false,
        };
        if same {
            return Ok(self.cursor);
        }
        Err(Problem {
            code: REPLAY_MISMATCH,
            message: format!(
                "replay mismatch at recorded line {}: expected {}, received {}",
                expected.seq + 1,
                short(&expected.key, QUOTE),
                short(&received, QUOTE)
            ),
            data: json!({"expected": expected.key, "received": received, "recordedLine": expected.seq + 1}),
        })
    }

    fn find_match(&self, message: &Value, live: &Kind) -> Result<usize, Problem> {
        let received = self.replay.normalizer.key(message);
        let unmatched = |index: &usize| !self.matched[*index];
        let candidates = self.replay.client.iter().enumerate();
        let found = match live {
            Kind::Response(id) => candidates
                .filter(|(index, item)| unmatched(index) && item.kind == Kind::Response(id.clone()))
                .map(|(index, _)| index)
                .next(),
            Kind::Request(_) => candidates
                .filter(|(index, item)| {
                    unmatched(index)
                        && matches!(item.kind, Kind::Request(_))
                        && item.key == received
                })
                .map(|(index, _)| index)
                .next(),
            Kind::Notification => candidates
                .filter(|(index, item)| {
                    unmatched(index) && item.kind == Kind::Notification && item.key == received
                })
                .map(|(index, _)| index)
                .next(),
        };
        if let Some(index) = found {
            return Ok(index);
        }
        let method = method_of(message).unwrap_or("(a response)");
        let same_method: Vec<&ClientItem> = self
            .replay
            .client
            .iter()
            .filter(|item| {
                matches!(item.kind, Kind::Request(_)) && method_of(&item.message) == Some(method)
            })
            .collect();
        let open: Vec<String> = self
            .replay
            .client
            .iter()
            .enumerate()
            .filter(|(index, item)| {
                unmatched(index)
                    && matches!(item.kind, Kind::Request(_))
                    && method_of(&item.message) == Some(method)
            })
            .map(|(_, item)| short(&item.key, QUOTE))
            .take(3)
            .collect();
        let has = if same_method.is_empty() {
            format!("the recording has no {method} request")
        } else if open.is_empty() {
            format!(
                "the recording's {} {method} request(s) were all answered already",
                same_method.len()
            )
        } else {
            format!(
                "the recording's unanswered {method} requests are: {}",
                open.join("; ")
            )
        };
        Err(Problem {
            code: NOT_RECORDED,
            message: format!(
                "not in the recording: received {}; {has}",
                short(&received, QUOTE)
            ),
            data: json!({"received": received, "recorded": open}),
        })
    }

    /// Sends every server message anchored to `anchor`, rewritten for the live session.
    fn release(&mut self, anchor: Option<usize>, step: &mut Step) {
        let Some(indices) = self.replay.released_by.get(&anchor) else {
            return;
        };
        for index in indices.clone() {
            let item = &self.replay.server[index];
            let mut message = item.message.clone();
            let owner_live = item.owner.and_then(|owner| self.live_ids[owner].clone());
            let mut completes_owner = false;
            if let (Kind::Response(_), Some(live_id)) = (&item.kind, &owner_live) {
                message["id"] = live_id.clone();
                completes_owner = true;
            }
            if let (Kind::Notification, Some(owner)) = (&item.kind, item.owner) {
                self.rewrite_notification(&mut message, owner);
            }
            step.outgoing.push(Outgoing {
                message,
                owner: owner_live,
                completes_owner,
            });
        }
    }

    /// Puts the live request's progress token and id where the recorded ones were.
    fn rewrite_notification(&self, message: &mut Value, owner: usize) {
        let recorded = &self.replay.client[owner].message;
        if let (Some(recorded_token), Some(live_token)) = (
            recorded.pointer("/params/_meta/progressToken"),
            &self.live_progress[owner],
        ) && message.pointer("/params/progressToken") == Some(recorded_token)
        {
            message["params"]["progressToken"] = live_token.clone();
        }
        if let (Some(recorded_id), Some(live_id)) = (recorded.get("id"), &self.live_ids[owner])
            && message.pointer("/params/requestId") == Some(recorded_id)
        {
            message["params"]["requestId"] = live_id.clone();
        }
    }
}

struct Problem {
    code: i64,
    message: String,
    data: Value,
}

fn method_of(message: &Value) -> Option<&str> {
    message.get("method").and_then(Value::as_str)
}

#[cfg(test)]
mod tests;
