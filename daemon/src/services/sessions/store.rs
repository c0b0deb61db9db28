//! Sessions: what one agent did, so the daemon can route, guard and bill its next call.
//!
//! A session is created by `openSession` or on first use of a new `sessionId`, and holds its
//! task text, a bounded call history, which server served each tool most recently, loop
//! counters, and usage totals. Sessions are namespaced by the token that made them: the store is
//! keyed by `(token id, session id)`, so another token's session id is simply unknown — a scoped
//! token can neither read another's session nor learn that it exists (its `callTool` with that id
//! creates a session of its own).
//!
//! Bounded on every axis: sessions per daemon (the least recently used of the token holding the
//! most is evicted, so no token can push out another's), task and label sizes, idle lifetime,
//! history length, loop counters and tools tracked per session.
//!
//! The store is a [`CallObserver`]: every finished call updates its session. Guards (loops,
//! budgets) are decided here, before the pipeline does any work, and handed to it as a refusal.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rand::RngExt as _;
use tokio::time::Instant;
use tool_cli_protocol::ErrorData;
use tool_cli_protocol::methods::LatencySummary;
use tool_cli_protocol::orchestration::{SessionInfo, SessionSummary, ToolUse};

use crate::error::Error;
use crate::pipeline::{CallObserver, CallRecord};

/// Limits of the session store.
#[derive(Debug, Clone)]
pub struct SessionLimits {
    /// Most live sessions (all tokens together); past it, the least recently used session of
    /// the token holding the most is evicted.
    pub max_sessions: usize,
    /// A session unused this long is forgotten.
    pub idle_ttl: Duration,
    /// Calls remembered per session.
    pub history: usize,
    /// The same failing call is refused once it failed this many times in a session.
    pub loop_limit: u32,
    /// Most calls per session, if limited.
    pub max_calls: Option<u64>,
    /// Longest life of a session, if limited.
    pub max_wall: Option<Duration>,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            max_sessions: 1024,
            idle_ttl: Duration::from_secs(3600),
            history: 512,
            loop_limit: 3,
            max_calls: None,
            max_wall: None,
        }
    }
}

/// Most distinct failing calls a session counts (then the oldest counter is dropped).
const MAX_LOOP_COUNTERS: usize = 1024;

/// Most distinct tools a session tracks.
const MAX_TOOLS_TRACKED: usize = 1024;

/// Most distinct followers remembered per tool.
const MAX_FOLLOWERS: usize = 64;

/// Longest session id accepted.
const MAX_ID_LEN: usize = 128;

/// Every live session.
pub(crate) struct SessionStore {
    sessions: Mutex<HashMap<Key, Arc<Mutex<Session>>>>,
    /// Replaced whole when `reloadConfig` brings new default caps (`set_default_caps`).
    limits: std::sync::RwLock<SessionLimits>,
}

type Key = (String, String);

/// A tool, as `(server, tool)`.
pub(crate) type ToolKey = (String, String);

/// One session.
#[derive(Debug)]
pub(crate) struct Session {
    id: String,
    task: Option<String>,
    labels: Vec<String>,
    created_at: SystemTime,
    created: Instant,
    last_used: Instant,
    last_used_at: SystemTime,
    history: VecDeque<Entry>,
    /// The server that last served each tool name.
    recency: HashMap<String, String>,
    /// Failures of `(requested server, tool, arguments hash)`, with when each was last touched.
    failures: HashMap<(String, String, String), (u32, u64)>,
    clock: u64,
    totals: Totals,
    tools: HashMap<(String, String), (u64, u64)>,
    rules: BTreeMap<String, u64>,
    /// The last tool executed, and how often each tool followed each other.
    last_tool: Option<(String, String)>,
    transitions: HashMap<(String, String), HashMap<(String, String), u32>>,
    /// For each `(requested server, tool)` whose last call was refused with
    /// `invalidArguments`, that call's arguments hash: the next call with other arguments is a
    /// corrective retry. Bounded like the loop counters.
    refused_arguments: HashMap<(String, String), String>,
    /// This session's own watchdog caps (`openSession`), in place of the store's.
    max_calls: Option<u64>,
    max_wall: Option<Duration>,
}

#[derive(Debug, Default, Clone, Copy)]
struct Totals {
    calls: u64,
    executed: u64,
    errors: u64,
    tokens_in: u64,
    tokens_out: u64,
    cost_usd: f64,
}

/// One remembered call.
#[derive(Debug, Clone)]
struct Entry {
    latency: Duration,
}

/// What a session tells the pipeline about one upcoming call.
pub(crate) struct Advice {
    /// The session's task, for routing's explicit-mention and similarity rules.
    pub(crate) task: Option<String>,
    /// The server that last served this tool in the session.
    pub(crate) most_recent: Option<String>,
    /// A guard's refusal.
    pub(crate) refusal: Option<Error>,
    /// The last call of this tool (same server as named) was refused with `invalidArguments`
    /// and this one has other arguments: a corrective retry.
    pub(crate) corrective_retry: bool,
}

impl SessionStore {
    /// An empty store.
    pub(crate) fn new(limits: SessionLimits) -> SessionStore {
        SessionStore {
            sessions: Mutex::new(HashMap::new()),
            limits: std::sync::RwLock::new(limits),
        }
    }

    /// The limits now (a copy: small, and no lock is held while a session is guarded).
    fn limits(&self) -> SessionLimits {
        self.limits
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The config's default caps (`sessions` section), as `reloadConfig` found them: every
    /// session without its own caps is held to them from its next call on.
    pub(crate) fn set_default_caps(&self, max_calls: Option<u64>, max_wall: Option<Duration>) {
        let mut limits = self
            .limits
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        limits.max_calls = max_calls;
        limits.max_wall = max_wall;
    }

    /// `openSession`: a new session of `token_id` (or the existing one of that id, with its
    /// task and labels updated when given).
    pub(crate) fn open(
        &self,
        token_id: &str,
        id: Option<&str>,
        task: Option<String>,
        labels: Vec<String>,
    ) -> Result<String, Error> {
        let id = match id {
            Some(id) => {
                check_id(tool_cli_protocol::methods::name::OPEN_SESSION, id)?;
                id.to_owned()
            }
            None => new_id(),
        };
        check_task_and_labels(task.as_deref(), &labels)?;
        let session = self.get_or_create(token_id, &id);
        let mut session = session.lock().unwrap();
        if task.is_some() {
            session.task = task;
        }
        if !labels.is_empty() {
            session.labels = labels;
        }
        Ok(id)
    }

    /// Sets the watchdog caps of session `id` of `token_id` (from `openSession`): a cap given
    /// replaces the store's for this session.
    pub(crate) fn set_caps(
        &self,
        token_id: &str,
        id: &str,
        max_calls: Option<u64>,
        max_wall: Option<Duration>,
    ) -> Result<(), Error> {
        let session = self.get(token_id, id)?;
        let mut session = session.lock().unwrap();
        if max_calls.is_some() {
            session.max_calls = max_calls;
        }
        if max_wall.is_some() {
            session.max_wall = max_wall;
        }
        Ok(())
    }

    /// The session `id` of `token_id`, created on first use (the id is checked first; a bad one
    /// is an invalid param of `method`).
    pub(crate) fn touch(
        &self,
        method: &str,
        token_id: &str,
        id: &str,
    ) -> Result<Arc<Mutex<Session>>, Error> {
        check_id(method, id)?;
        Ok(self.get_or_create(token_id, id))
    }

    fn get_or_create(&self, token_id: &str, id: &str) -> Arc<Mutex<Session>> {
        let now = Instant::now();
        let mut sessions = self.sessions.lock().unwrap();
        let key = (token_id.to_owned(), id.to_owned());
        if let Some(session) = sessions.get(&key) {
            let session = Arc::clone(session);
            session.lock().unwrap().touched(now);
            return session;
        }
        // Room for one more: forget idle sessions, then the least recently used.
        let limits = self.limits();
        let ttl = limits.idle_ttl;
        sessions.retain(|_, session| now.duration_since(session.lock().unwrap().last_used) < ttl);
        while sessions.len() >= limits.max_sessions {
            let held: Vec<(&Key, Instant)> = sessions
                .iter()
                .map(|(key, session)| (key, session.lock().unwrap().last_used))
                .collect();
            match eviction_victim(&held).cloned() {
                Some(victim) => sessions.remove(&victim),
                None => break,
            };
        }
        let session = Arc::new(Mutex::new(Session::new(id, now)));
        sessions.insert(key, Arc::clone(&session));
        session
    }

    /// The session `id` of `token_id`, if it exists (and has not idled out).
    fn get(&self, token_id: &str, id: &str) -> Result<Arc<Mutex<Session>>, Error> {
        let key = (token_id.to_owned(), id.to_owned());
        let sessions = self.sessions.lock().unwrap();
        sessions
            .get(&key)
            .filter(|session| {
                Instant::now().duration_since(session.lock().unwrap().last_used)
                    < self.limits().idle_ttl
            })
            .cloned()
            .ok_or_else(|| unknown(id))
    }

    /// What the session says about a call of `tool` (on `server`, when named) with arguments
    /// hashing to `arguments_hash`: routing facts, and a refusal when a guard trips.
    pub(crate) fn advise(
        &self,
        session: &Mutex<Session>,
        server: Option<&str>,
        tool: &str,
        arguments_hash: &str,
    ) -> Advice {
        let session = session.lock().unwrap();
        let refusal = session.guard(&self.limits(), server, tool, arguments_hash);
        let key = (server.unwrap_or("*").to_owned(), tool.to_owned());
        Advice {
            task: session.task.clone(),
            most_recent: session.recency.get(tool).cloned(),
            refusal,
            corrective_retry: session
                .refused_arguments
                .get(&key)
                .is_some_and(|refused| refused != arguments_hash),
        }
    }

    /// The session's last executed tool and, for each tool that followed it before, its share
    /// of those transitions (smoothed): what tool search's inertia prior reads. Nothing for an
    /// unknown session (search does not create sessions).
    pub(crate) fn followers(
        &self,
        token_id: &str,
        id: &str,
    ) -> (Option<ToolKey>, HashMap<ToolKey, f32>) {
        let Ok(session) = self.get(token_id, id) else {
            return (None, HashMap::new());
        };
        let session = session.lock().unwrap();
        let Some(last) = session.last_tool.clone() else {
            return (None, HashMap::new());
        };
        let followers = session
            .transitions
            .get(&last)
            .map(|followers| {
                let total: u32 = followers.values().sum();
                followers
                    .iter()
                    .map(|(tool, &count)| (tool.clone(), count as f32 / (total as f32 + 1.0)))
                    .collect()
            })
            .unwrap_or_default();
        (Some(last), followers)
    }

    /// `sessionSummary`.
    pub(crate) fn summary(&self, token_id: &str, id: &str) -> Result<SessionSummary, Error> {
        let session = self.get(token_id, id)?;
        let session = session.lock().unwrap();
        Ok(session.summary())
    }

    /// `listSessions`: the token's sessions, most recently used first.
    pub(crate) fn list(&self, token_id: &str) -> Vec<SessionInfo> {
        let now = Instant::now();
        let ttl = self.limits().idle_ttl;
        let sessions = self.sessions.lock().unwrap();
        let mut listed: Vec<(Instant, SessionInfo)> = sessions
            .iter()
            .filter(|((owner, _), _)| owner == token_id)
            .map(|(_, session)| session.lock().unwrap())
            .filter(|session| now.duration_since(session.last_used) < ttl)
            .map(|session| {
                (
                    session.last_used,
                    SessionInfo {
                        session_id: session.id.clone(),
                        task: session.task.clone(),
                        labels: session.labels.clone(),
                        calls: session.totals.calls,
                        last_used_at_ms: epoch_ms(session.last_used_at),
                    },
                )
            })
            .collect();
        listed.sort_by_key(|(last_used, _)| std::cmp::Reverse(*last_used));
        listed.into_iter().map(|(_, info)| info).collect()
    }

    /// `closeSession`.
    pub(crate) fn close(&self, token_id: &str, id: &str) -> Result<(), Error> {
        self.get(token_id, id)?;
        self.sessions
            .lock()
            .unwrap()
            .remove(&(token_id.to_owned(), id.to_owned()));
        Ok(())
    }

    /// How many sessions are held (for tests of boundedness).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.sessions.lock().unwrap().len()
    }
}

impl CallObserver for SessionStore {
    fn observe(&self, record: &CallRecord) {
        let Some(id) = &record.session_id else {
            return;
        };
        let session = {
            let sessions = self.sessions.lock().unwrap();
            sessions
                .get(&(record.token_id.clone(), id.clone()))
                .cloned()
        };
        if let Some(session) = session {
            session.lock().unwrap().record(record, &self.limits());
        }
    }
}

impl Session {
    fn new(id: &str, now: Instant) -> Session {
        let wall = SystemTime::now();
        Session {
            id: id.to_owned(),
            task: None,
            labels: Vec::new(),
            created_at: wall,
            created: now,
            last_used: now,
            last_used_at: wall,
            history: VecDeque::new(),
            recency: HashMap::new(),
            failures: HashMap::new(),
            clock: 0,
            totals: Totals::default(),
            tools: HashMap::new(),
            rules: BTreeMap::new(),
            last_tool: None,
            transitions: HashMap::new(),
            refused_arguments: HashMap::new(),
            max_calls: None,
            max_wall: None,
        }
    }

    fn touched(&mut self, now: Instant) {
        self.last_used = now;
        self.last_used_at = SystemTime::now();
    }

    /// The loop and budget guards, in that order.
    fn guard(
        &self,
        limits: &SessionLimits,
        server: Option<&str>,
        tool: &str,
        arguments_hash: &str,
    ) -> Option<Error> {
        let key = (
            server.unwrap_or("*").to_owned(),
            tool.to_owned(),
            arguments_hash.to_owned(),
        );
        if let Some(&(failures, _)) = self.failures.get(&key)
            && failures >= limits.loop_limit
        {
            return Some(
                ErrorData::LoopDetected {
                    server: key.0,
                    tool: key.1,
                    arguments_hash: key.2,
                    failures,
                    limit: limits.loop_limit,
                }
                .into(),
            );
        }
        if let Some(limit) = self.max_calls.or(limits.max_calls)
            && self.totals.calls >= limit
        {
            return Some(self.budget("calls", self.totals.calls, limit));
        }
        if let Some(limit) = self.max_wall.or(limits.max_wall) {
            let used = Instant::now().duration_since(self.created);
            if used >= limit {
                return Some(self.budget(
                    "wallTimeMs",
                    used.as_millis() as u64,
                    limit.as_millis() as u64,
                ));
            }
        }
        None
    }

    fn budget(&self, budget: &str, used: u64, limit: u64) -> Error {
        ErrorData::BudgetExceeded {
            session_id: self.id.clone(),
            budget: budget.to_owned(),
            used,
            limit,
        }
        .into()
    }

    /// Folds one finished call into the session.
    fn record(&mut self, record: &CallRecord, limits: &SessionLimits) {
        self.touched(Instant::now());
        self.clock += 1;
        let totals = &mut self.totals;
        totals.calls += 1;
        totals.executed += u64::from(record.executed);
        totals.errors += u64::from(!record.success);
        totals.tokens_in += record.tokens_in;
        totals.tokens_out += record.tokens_out;
        totals.cost_usd += record.cost_usd;
        if self.history.len() >= limits.history {
            self.history.pop_front();
        }
        self.history.push_back(Entry {
            latency: record.latency,
        });
        // A loop guard's own refusal is not another failure of the call.
        let refused_by_guard = record
            .error
            .as_ref()
            .is_some_and(|error| error.kind == "loopDetected" || error.kind == "budgetExceeded");
        if !record.dry_run && !refused_by_guard {
            let tool_key = (
                record
                    .requested_server
                    .clone()
                    .unwrap_or_else(|| "*".to_owned()),
                record.tool.clone(),
            );
            let refused_for_arguments = record
                .error
                .as_ref()
                .is_some_and(|error| error.kind == "invalidArguments");
            if refused_for_arguments {
                if self.refused_arguments.len() >= MAX_LOOP_COUNTERS {
                    self.refused_arguments.clear();
                }
                self.refused_arguments
                    .insert(tool_key, record.arguments_hash.clone());
            } else {
                self.refused_arguments.remove(&tool_key);
            }
            let key = (
                record
                    .requested_server
                    .clone()
                    .unwrap_or_else(|| "*".to_owned()),
                record.tool.clone(),
                record.arguments_hash.clone(),
            );
            if record.success {
                self.failures.remove(&key);
            } else {
                if !self.failures.contains_key(&key) && self.failures.len() >= MAX_LOOP_COUNTERS {
                    let oldest = self
                        .failures
                        .iter()
                        .min_by_key(|(_, (_, touched))| *touched)
                        .map(|(key, _)| key.clone());
                    if let Some(oldest) = oldest {
                        self.failures.remove(&oldest);
                    }
                }
                let clock = self.clock;
                let counter = self.failures.entry(key).or_insert((0, clock));
                counter.0 += 1;
                counter.1 = clock;
            }
        }
        if let Some(server) = &record.server {
            if record.executed && record.success {
                self.recency.insert(record.tool.clone(), server.clone());
                let current = (server.clone(), record.tool.clone());
                if let Some(previous) = self.last_tool.replace(current.clone())
                    && (self.transitions.contains_key(&previous)
                        || self.transitions.len() < MAX_TOOLS_TRACKED)
                {
                    let followers = self.transitions.entry(previous).or_default();
                    if followers.contains_key(&current) || followers.len() < MAX_FOLLOWERS {
                        *followers.entry(current).or_insert(0) += 1;
                    }
                }
            }
            let key = (server.clone(), record.tool.clone());
            if self.tools.contains_key(&key) || self.tools.len() < MAX_TOOLS_TRACKED {
                let used = self.tools.entry(key).or_insert((0, 0));
                used.0 += 1;
                used.1 += u64::from(!record.success);
            }
        }
        if let Some(selection) = &record.selection {
            *self
                .rules
                .entry(selection.rule.as_str().to_owned())
                .or_insert(0) += 1;
        }
    }

    fn summary(&self) -> SessionSummary {
        let totals = self.totals;
        let mut latencies: Vec<Duration> = self.history.iter().map(|e| e.latency).collect();
        latencies.sort_unstable();
        let latency_ms = (!latencies.is_empty()).then(|| {
            let at = |q: f64| {
                let index = ((latencies.len() - 1) as f64 * q).round() as usize;
                latencies[index].as_secs_f64() * 1000.0
            };
            LatencySummary {
                p50: at(0.5),
                p95: at(0.95),
                samples: latencies.len(),
            }
        });
        let mut tools_used: Vec<ToolUse> = self
            .tools
            .iter()
            .map(|((server, tool), &(calls, errors))| ToolUse {
                server: server.clone(),
                tool: tool.clone(),
                calls,
                errors,
            })
            .collect();
        tools_used.sort_by(|a, b| {
            b.calls
                .cmp(&a.calls)
                .then_with(|| (&a.server, &a.tool).cmp(&(&b.server, &b.tool)))
        });
        SessionSummary {
            session_id: self.id.clone(),
            task: self.task.clone(),
            labels: self.labels.clone(),
            created_at_ms: epoch_ms(self.created_at),
            last_used_at_ms: epoch_ms(self.last_used_at),
            calls: totals.calls,
            executed: totals.executed,
            errors: totals.errors,
            success_rate: if totals.calls == 0 {
                0.0
            } else {
                (totals.calls - totals.errors) as f64 / totals.calls as f64
            },
            latency_ms,
            tokens_in: totals.tokens_in,
            tokens_out: totals.tokens_out,
            cost_usd: totals.cost_usd,
            tools_used,
            rules_fired: self.rules.clone(),
        }
    }
}

fn unknown(id: &str) -> Error {
    ErrorData::UnknownSession {
        session_id: id.to_owned(),
    }
    .into()
}

/// Which session makes room for a new one: the least recently used session of the token that
/// holds the most (ties go to the token whose oldest session is older). Evicting the oldest
/// session of all would let one token — a scoped token handed to an untrusted agent — open
/// sessions in a loop and erase every other token's sessions with their guards and budgets;
/// this way a token that floods the store only ever evicts its own.
fn eviction_victim<'k>(held: &[(&'k Key, Instant)]) -> Option<&'k Key> {
    let mut per_token: HashMap<&str, (usize, &'k Key, Instant)> = HashMap::new();
    for &(key, last_used) in held {
        let entry = per_token
            .entry(key.0.as_str())
            .or_insert((0, key, last_used));
        entry.0 += 1;
        if last_used < entry.2 {
            entry.1 = key;
            entry.2 = last_used;
        }
    }
    per_token
        .into_values()
        .max_by(|(count_a, _, oldest_a), (count_b, _, oldest_b)| {
            count_a.cmp(count_b).then(oldest_b.cmp(oldest_a))
        })
        .map(|(_, key, _)| key)
}

/// What `openSession` keeps of a task and labels: routing compares the task with tool
/// descriptions on every call of the session, and up to `max_sessions` sessions are held, so
/// neither may be as large as a request body.
const MAX_TASK_BYTES: usize = 16 * 1024;
const MAX_LABELS: usize = 32;
const MAX_LABEL_BYTES: usize = 256;

fn check_task_and_labels(task: Option<&str>, labels: &[String]) -> Result<(), Error> {
    if let Some(task) = task.filter(|task| task.len() > MAX_TASK_BYTES) {
        return Err(Error::invalid_params(
            "openSession",
            format!(
                "task is {} bytes; at most {MAX_TASK_BYTES} bytes are kept, describe it in a \
                 paragraph",
                task.len()
            ),
        ));
    }
    if labels.len() > MAX_LABELS {
        return Err(Error::invalid_params(
            "openSession",
            format!(
                "labels has {} entries; at most {MAX_LABELS} are accepted",
                labels.len()
            ),
        ));
    }
    if let Some(long) = labels.iter().find(|label| label.len() > MAX_LABEL_BYTES) {
        return Err(Error::invalid_params(
            "openSession",
            format!(
                "a label in labels is {} bytes; each label may be at most {MAX_LABEL_BYTES} bytes",
                long.len()
            ),
        ));
    }
    Ok(())
}

/// Session ids are the caller's words in logs and traces: keep them short and plain.
pub(crate) fn check_id(method: &str, id: &str) -> Result<(), Error> {
    let valid = !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'));
    if valid {
        Ok(())
    } else {
        Err(Error::invalid_params(
            method,
            format!(
                "sessionId \"{}\" is not a valid session id; expected 1-{MAX_ID_LEN} characters of letters, \
                 digits, '-', '_', '.' or ':'",
                id.chars().take(MAX_ID_LEN).collect::<String>()
            ),
        ))
    }
}

/// A fresh random id.
fn new_id() -> String {
    let bytes: [u8; 12] = rand::rng().random();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("s-{hex}")
}

fn epoch_ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map(|since| since.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests;
