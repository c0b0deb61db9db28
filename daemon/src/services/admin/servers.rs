//! Runtime server management: `addServer`, `removeServer`, `reloadConfig` and SIGHUP.
//!
//! A [`ServerManager`] holds the config the daemon runs (the file's, plus or minus what
//! `addServer`/`removeServer` changed since) and applies changes one at a time: the pool starts,
//! replaces or takes out servers (`pool/lifecycle.rs`), the pipeline follows the new set
//! (`pipeline/membership.rs`: unchanged servers keep their breakers and statistics), the tool
//! search index follows the pool's change counter, and a server taken out drains its calls
//! (at most its call timeout) before it is stopped with its whole process group. What a reload
//! changes is decided by the pure `diff::diff`. A config file that does not load changes
//! nothing: the old config keeps serving and the error says what is wrong.
//!
//! `addServer` and `removeServer` change the running set only, not the file: the next reload
//! makes the running set match the file again.

mod diff;
mod recording;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;
use tool_cli_protocol::ErrorData;
use tool_cli_protocol::manage::{
    AddServerResult, ReloadConfigResult, RemoveServerResult, ServerProblem,
};
use tool_cli_protocol::methods::{ServerState, name};

use crate::config::config_secrets;
use crate::config::{self, Config, ConfigSource, ServerConfig};
use crate::error::Error;
use crate::pipeline::Pipeline;
use crate::pool::{Pool, Server};
use crate::provider::Upstream as _;
use crate::redact::{Secrets, SharedSecrets};
use crate::services::metrics::Metrics;

/// Longest wait for a new server's first connection attempt.
const FIRST_ATTEMPT_WAIT: Duration = Duration::from_secs(60);

/// Looks up a variable for `${VAR}` substitution.
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The sections of the config the services hold rather than the pool, for the services to
/// apply after a reload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServiceSettings {
    /// `flags.gateway`.
    pub(crate) gateway_flags: crate::catalog::flags::GatewayFlagPolicy,
    /// The `sessions` section: the session watchdog's default caps.
    pub(crate) sessions: crate::config::sessions::SessionsConfig,
}

/// Applies server changes to a running daemon's pool.
pub struct ServerManager {
    pool: Arc<Pool>,
    /// The config file, when the daemon runs one (`None`: the bundled default, until a reload
    /// finds the user's default file, which a `config import --write` may have created since).
    path: std::sync::Mutex<Option<PathBuf>>,
    /// The daemon's own executable (the bundled default runs it as the demo server).
    self_exe: PathBuf,
    env: EnvLookup,
    /// The config as it runs now; the lock also makes changes happen one at a time.
    running: tokio::sync::Mutex<Config>,
    /// The secrets the log and the edge clean of, replaced as the servers change.
    secrets: SharedSecrets,
    /// The servers running under the recording proxy (`startRecording`), with their files.
    recordings: std::sync::Mutex<std::collections::BTreeMap<String, PathBuf>>,
}

impl ServerManager {
    /// The pool it manages.
    pub(crate) fn pool(&self) -> &Arc<Pool> {
        &self.pool
    }

    /// A manager of `pool`, which runs `config`, loaded from `path`; it keeps `secrets` (the
    /// handle the log writer and the edge read) to the servers it runs.
    pub fn new(
        pool: Arc<Pool>,
        config: Config,
        path: Option<PathBuf>,
        self_exe: PathBuf,
        env: EnvLookup,
        secrets: SharedSecrets,
    ) -> ServerManager {
        ServerManager {
            pool,
            path: std::sync::Mutex::new(path),
            self_exe,
            env,
            running: tokio::sync::Mutex::new(config),
            secrets,
            recordings: std::sync::Mutex::default(),
        }
    }
}

/// What follows the servers when they change: the pipeline's servers (routing) and the
/// metrics' series of removed servers.
pub(crate) struct Followers<'a> {
    pub(crate) pipeline: &'a Pipeline,
    pub(crate) metrics: &'a Metrics,
}

/// What one change started and took out, to be waited on.
#[derive(Default)]
struct Changes {
    started: Vec<(String, oneshot::Receiver<()>)>,
    retiring: Vec<Arc<Server>>,
}

impl ServerManager {
    /// Starts the changed servers' replacements and takes the removed ones out, makes routing
    /// and search follow, then waits for the new servers' first attempts and the old ones'
    /// drains. Answers the calls abandoned by drains that ran out of time.
    async fn apply(
        &self,
        method: &str,
        followers: &Followers<'_>,
        put: &[ServerConfig],
        take_out: &[String],
        secrets: Arc<Secrets>,
    ) -> Result<usize, Error> {
        let manager = self;
        let mut changes = Changes::default();
        for name in take_out {
            if let Some(server) = manager.pool.take_out(name) {
                changes.retiring.push(server);
            }
        }
        for server in put {
            let put = manager
                .pool
                .put(server, Arc::clone(&secrets))
                .map_err(|refused| Error::invalid_params(method, refused.to_string()))?;
            changes.retiring.extend(put.replaced);
            if let Some(first) = put.first {
                changes.started.push((server.name.clone(), first));
            }
        }
        followers.pipeline.follow_servers(manager.pool.as_ref());
        manager.pool.announce();
        let started = async {
            for (_, first) in changes.started {
                let _ = tokio::time::timeout(FIRST_ATTEMPT_WAIT, first).await;
            }
        };
        let pool = &manager.pool;
        let retired = futures_util::future::join_all(changes.retiring.into_iter().map(|server| {
            let drain = server.config.call_timeout;
            pool.retire(server, drain)
        }));
        let ((), retired) = tokio::join!(started, retired);
        // After the drains: a call that finished while its server drained is counted, then
        // dropped with the rest of the removed server's series.
        for name in take_out {
            followers.metrics.forget_server(name);
        }
        Ok(retired.iter().map(|retired| retired.abandoned_calls).sum())
    }

    /// `addServer`: starts `name` with `entry` (an `mcpServers` entry); refused if the name is
    /// taken, the entry is invalid, or the server does not start.
    pub(crate) async fn add_server(
        &self,
        name: &str,
        entry: serde_json::Value,
        followers: &Followers<'_>,
    ) -> Result<AddServerResult, Error> {
        let manager = self;
        let mut running = manager.running.lock().await;
        if running.servers.iter().any(|server| server.name == name) {
            return Err(Error::invalid_params(
                name::ADD_SERVER,
                format!(
                    "a server named \"{name}\" is already running; remove it first \
                     (removeServer) or choose another name"
                ),
            ));
        }
        let mut servers = serde_json::Map::new();
        servers.insert(name.to_owned(), entry);
        let text = serde_json::json!({ "mcpServers": servers }).to_string();
        let parsed = config::parse(
            &text,
            ConfigSource::File(PathBuf::from("addServer")),
            &*manager.env,
        )
        .map_err(|error| {
            Error::invalid_params(
                name::ADD_SERVER,
                format!("the server's config is invalid: {error}"),
            )
        })?;
        let server =
            parsed.servers.into_iter().next().ok_or_else(|| {
                Error::invalid_params(name::ADD_SERVER, "expected one server entry")
            })?;
        let mut next = running.clone();
        next.servers.push(server.clone());
        let secrets = Arc::new(crate::config::secrets_of(&next));
        // From here the server is in the pool before `running` knows it: if the request is
        // dropped (its caller hung up) before the end, the guard takes it back out.
        let mut rollback = AddRollback {
            manager,
            followers,
            name,
            secrets_before: self.secrets.current(),
            armed: true,
        };
        self.secrets.set(Arc::clone(&secrets));
        self.apply(
            name::ADD_SERVER,
            followers,
            std::slice::from_ref(&server),
            &[],
            Arc::clone(&secrets),
        )
        .await?;
        let added = manager
            .pool
            .servers()
            .iter()
            .find(|candidate| candidate.config.name == name)
            .cloned();
        let Some(added) = added else {
            return Err(Error::invalid_params(
                name::ADD_SERVER,
                format!("\"{name}\" was removed while it started"),
            ));
        };
        let status = added.status();
        // A remote server that asks for OAuth is kept: signing in (`tool-cli auth login`) is
        // the next step, and needs the server to be there.
        let waits_for_login = manager
            .pool
            .remote_auth()
            .server(name)
            .is_some_and(|auth| auth.waits_for_login());
        if server.enabled && status.state != ServerState::Ready && !waits_for_login {
            // A server that cannot start is not kept: the caller fixes the entry and adds it again.
            let error = status.error.clone().unwrap_or_else(|| {
                format!(
                    "it is still {} after its first attempt",
                    status.state.as_str()
                )
            });
            self.apply(
                name::ADD_SERVER,
                followers,
                &[],
                &[name.to_owned()],
                Arc::clone(&secrets),
            )
            .await?;
            return Err(Error::invalid_params(
                name::ADD_SERVER,
                format!(
                    "server \"{name}\" did not start, so it was not added: {error}; check its \
                     command (a program on PATH or an absolute path), arguments and URL"
                ),
            ));
        }
        rollback.armed = false;
        *running = next;
        tracing::info!(server = %name, "server added");
        Ok(AddServerResult {
            server: name.to_owned(),
            state: status.state,
            tools: added.catalog().len(),
            error: status.error.clone().filter(|_| waits_for_login),
            notes: parsed.notes.iter().map(ToString::to_string).collect(),
        })
    }
}

/// Undoes an `addServer` that did not finish: takes its server out of the pool (if it is still
/// there), lets routing and search follow, stops it in the background, and puts the secrets back.
/// Armed until `add_server` records the server in the running config; dropped armed when the
/// request ends early, by an error or by being cancelled (its caller hung up mid-start). The
/// pool's `take_out` is synchronous, so the server is gone before the drop returns; its drain
/// and stop (`retire`, async) run on a task of their own.
struct AddRollback<'a> {
    manager: &'a ServerManager,
    followers: &'a Followers<'a>,
    name: &'a str,
    secrets_before: Option<Arc<Secrets>>,
    armed: bool,
}

impl Drop for AddRollback<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        if let Some(secrets) = self.secrets_before.take() {
            self.manager.secrets.set(secrets);
        }
        let pool = &self.manager.pool;
        let Some(server) = pool.take_out(self.name) else {
            return;
        };
        tracing::warn!(server = %self.name, "addServer did not finish; the server is taken out again");
        self.followers.pipeline.follow_servers(pool.as_ref());
        pool.announce();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let pool = Arc::clone(pool);
            let drain = server.config.call_timeout;
            runtime.spawn(async move {
                pool.retire(server, drain).await;
            });
        }
    }
}

impl ServerManager {
    /// `removeServer`: takes `name` out at once (no new calls reach it), lets its calls finish
    /// (at most its call timeout), then stops it.
    pub(crate) async fn remove_server(
        &self,
        name: &str,
        followers: &Followers<'_>,
    ) -> Result<RemoveServerResult, Error> {
        let manager = self;
        let mut running = manager.running.lock().await;
        if !running.servers.iter().any(|server| server.name == name) {
            return Err(ErrorData::UnknownServer {
                server: name.to_owned(),
                known_servers: running.servers.iter().map(|s| s.name.clone()).collect(),
            }
            .into());
        }
        let secrets = Arc::new(crate::config::secrets_of(&running));
        let abandoned_calls = self
            .apply(
                name::REMOVE_SERVER,
                followers,
                &[],
                &[name.to_owned()],
                secrets,
            )
            .await?;
        running.servers.retain(|server| server.name != name);
        tracing::info!(server = %name, abandoned_calls, "server removed");
        Ok(RemoveServerResult {
            server: name.to_owned(),
            abandoned_calls,
        })
    }

    /// The settings of the running config the services apply themselves (`flags.gateway`, the
    /// `sessions` caps): after a reload, the file's.
    pub(crate) async fn service_settings(&self) -> ServiceSettings {
        let running = self.running.lock().await;
        ServiceSettings {
            gateway_flags: running.gateway_flags,
            sessions: running.sessions.clone(),
        }
    }

    /// `reloadConfig` and SIGHUP: reads the config file again and applies the difference. A
    /// file that does not load changes nothing.
    pub(crate) async fn reload_config(
        &self,
        followers: &Followers<'_>,
    ) -> Result<ReloadConfigResult, Error> {
        let manager = self;
        let mut running = manager.running.lock().await;
        let current = manager
            .path
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        // A daemon on the bundled default takes the user's default file once there is one, as
        // a restart would.
        let (path, adopted) = match current {
            Some(path) => (path, false),
            None => match config::locate(None, None, (manager.env)("HOME").map(PathBuf::from)) {
                Some(found) => (found, true),
                None => {
                    return Err(Error::invalid_params(
                        name::RELOAD_CONFIG,
                        "the daemon runs the bundled default config and there is no config file \
                         to load (~/.config/tool-cli/servers.json does not exist); create it, \
                         e.g. with `tool-cli config import --from CLIENT --write`, or start the \
                         daemon with --config FILE (or TOOL_CLI_CONFIG)",
                    ));
                }
            },
        };
        let loaded = {
            let self_exe = manager.self_exe.clone();
            let env = Arc::clone(&manager.env);
            let path = path.clone();
            tokio::task::spawn_blocking(move || config::load(Some(&path), &self_exe, &*env))
                .await
                .map_err(|error| Error::internal(format!("the config reader failed: {error}")))?
        };
        let new = loaded.map_err(|error| {
            Error::invalid_params(
                name::RELOAD_CONFIG,
                format!("{error}; nothing was changed: the previous config keeps serving"),
            )
        })?;
        let diff = diff::diff(&running.servers, &new.servers);
        let mut notes: Vec<String> = new.notes.iter().map(ToString::to_string).collect();
        if adopted {
            notes.push(format!(
                "the daemon ran the bundled default config; it now runs {}",
                path.display()
            ));
        }
        if new.agent != running.agent {
            notes.push(
                "the \"agent\" section changed; it takes effect when the daemon restarts"
                    .to_owned(),
            );
        }
        if new.traces != running.traces {
            notes.push(
                "the \"traces\" section changed; it takes effect when the daemon restarts"
                    .to_owned(),
            );
        }
        if new.telemetry != running.telemetry {
            notes.push(
                "the \"telemetry\" section changed; it takes effect when the daemon restarts"
                    .to_owned(),
            );
        }
        // A draining server may still log: keep the old secrets redacted too.
        let secrets = Arc::new(Secrets::new(
            config_secrets(&running)
                .into_iter()
                .chain(config_secrets(&new)),
        ));
        self.secrets.set(Arc::clone(&secrets));
        let put: Vec<ServerConfig> = diff.changed.iter().chain(&diff.added).cloned().collect();
        let abandoned_calls = self
            .apply(
                name::RELOAD_CONFIG,
                followers,
                &put,
                &diff.removed,
                Arc::clone(&secrets),
            )
            .await?;
        self.secrets.set(Arc::new(crate::config::secrets_of(&new)));
        let failed = put
            .iter()
            .filter(|server| server.enabled)
            .filter_map(|server| {
                let current = manager
                    .pool
                    .servers()
                    .iter()
                    .find(|candidate| candidate.config.name == server.name)
                    .cloned()?;
                let status = current.status();
                (status.state != ServerState::Ready).then(|| ServerProblem {
                    server: server.name.clone(),
                    state: status.state,
                    error: status.error,
                })
            })
            .collect();
        let names = |list: &[ServerConfig]| list.iter().map(|s| s.name.clone()).collect();
        let result = ReloadConfigResult {
            source: path.display().to_string(),
            added: names(&diff.added),
            changed: names(&diff.changed),
            removed: diff.removed.clone(),
            unchanged: diff.unchanged.clone(),
            failed,
            abandoned_calls,
            notes,
        };
        tracing::info!(
            added = ?result.added,
            changed = ?result.changed,
            removed = ?result.removed,
            unchanged = result.unchanged.len(),
            "config reloaded"
        );
        // Keep the new servers' order and every other section as the file has it now; the
        // sections that need a restart stay as they run.
        *running = Config {
            agent: running.agent.clone(),
            traces: running.traces.clone(),
            telemetry: running.telemetry.clone(),
            ..new
        };
        if adopted {
            *manager
                .path
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(path);
        }
        Ok(result)
    }
}
