//! `failover serve`: an OpenAI-compatible gateway in front of the runner.
//!
//! - `POST /v1/chat/completions` — whole or streamed (SSE); fail over only
//!   before the first byte reaches the client.
//! - `GET /v1/models`, `GET /healthz`, `GET /status`,
//!   `POST /v1/sessions/{id}/reset`.
//!
//! The request's `model` picks the chain: `auto` is the default agent's,
//! `agent:<id>` that agent's, `provider/model` a strict selection (F-7.6).
//! `x-session-id` keeps profile stickiness and fallback state per session.
//! Responses say who served them (`x-failover-provider`, `-model`,
//! `-profile`).

pub mod admin;
mod keys;
mod reply;
mod routes;

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

pub use keys::{ClientKeys, KeysError, CLIENT_KEYS_FILE_ENV};
pub use routes::router;

use crate::config::Config;
use crate::policy::Decider;
use crate::providers::HttpProvider;
use crate::replay::record::Recorder;
use crate::runner::{Runner, SystemClock};
use crate::state::{AuthStore, SessionStore, StateDir, StateError};

/// Default listen address: loopback only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8787";

/// Largest request body accepted: a 200k-token context is under a MiB of
/// text; 16 MiB leaves room for images sent as data URLs to OpenAI-shaped
/// upstreams, and bounds memory per request.
pub const MAX_REQUEST_BYTES: usize = 16 << 20;

/// The runner the gateway drives: real HTTP providers, the system clock.
pub type GatewayRunner = Runner<HttpProvider, SystemClock>;

/// What `serve` needs besides the config.
#[derive(Debug, Clone)]
pub struct GatewayOptions {
    /// The agent `auto` means.
    pub agent: String,
    /// Keys clients must present; empty on loopback means none needed.
    pub client_keys: ClientKeys,
    /// F-6.8's cap on waiting for a `Retry-After`.
    pub retry_wait_cap_ms: u64,
    /// Where requests and provider outcomes are recorded (`--record`).
    pub recorder: Option<Arc<Recorder>>,
}

/// The gateway's shared state: one runner per agent (each agent has its own
/// profiles and sessions), the client keys.
pub struct Gateway {
    default_agent: String,
    runners: BTreeMap<String, Arc<GatewayRunner>>,
    client_keys: ClientKeys,
    config: Arc<Config>,
    /// The module the last swap replaced: what a rollback returns to.
    previous_policy: Mutex<Option<Arc<dyn Decider>>>,
    recorder: Option<Arc<Recorder>>,
}

/// The gateway could not start.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error(transparent)]
    State(#[from] StateError),
    #[error("cannot build the HTTP client: {0}")]
    Client(#[from] reqwest::Error),
    #[error(
        "refusing to listen on {0} without client keys: anything that can reach it could spend \
         your provider credit; listen on loopback, or give keys with --client-keys-file \
         (or {CLIENT_KEYS_FILE_ENV})"
    )]
    OpenWithoutKeys(SocketAddr),
}

impl Gateway {
    /// A gateway deciding with `policy`, over the state in `state_dir`.
    pub fn new(
        policy: Arc<dyn Decider>,
        config: Config,
        state_dir: &StateDir,
        options: GatewayOptions,
    ) -> Result<Gateway, GatewayError> {
        let config = Arc::new(config);
        let mut agents: Vec<String> = vec![options.agent.clone()];
        agents.extend(config.agents.list.iter().map(|a| a.id.clone()));
        let mut runners = BTreeMap::new();
        for agent in agents {
            if runners.contains_key(&agent) {
                continue;
            }
            let paths = state_dir.agent(&agent)?;
            let mut store = AuthStore::open(paths.clone())?;
            let mut sessions = SessionStore::for_agent(&paths.dir);
            // A recording covers the default agent: it watches that agent's
            // state for changes other processes make (F-12.4).
            if let (Some(recorder), true) = (&options.recorder, agent == options.agent) {
                store = store.with_watch(recorder.clone());
                sessions = sessions.with_watch(recorder.clone());
            }
            let provider = HttpProvider::new(config.clone(), store.clone())?
                .with_recorder(options.recorder.clone());
            let runner = Runner::new(
                policy.clone(),
                (*config).clone(),
                store,
                sessions,
                provider,
                SystemClock,
            )
            .with_retry_wait_cap(options.retry_wait_cap_ms);
            runners.insert(agent, Arc::new(runner));
        }
        Ok(Gateway {
            default_agent: options.agent,
            runners,
            client_keys: options.client_keys,
            config,
            previous_policy: Mutex::new(None),
            recorder: options.recorder,
        })
    }

    /// Refuses an address beyond loopback when no client key is configured.
    pub fn check_listen(&self, addr: SocketAddr) -> Result<(), GatewayError> {
        if !addr.ip().is_loopback() && self.client_keys.is_empty() {
            return Err(GatewayError::OpenWithoutKeys(addr));
        }
        Ok(())
    }

    /// The default agent's runner.
    pub fn runner(&self) -> &Arc<GatewayRunner> {
        &self.runners[&self.default_agent]
    }

    /// An agent's runner.
    pub fn agent_runner(&self, agent: &str) -> Option<&Arc<GatewayRunner>> {
        self.runners.get(agent)
    }

    /// The module new runs use.
    pub fn active_policy(&self) -> Arc<dyn Decider> {
        self.runner().policy()
    }

    /// The module the last swap replaced, if any.
    pub fn previous_policy(&self) -> Option<Arc<dyn Decider>> {
        self.history().clone()
    }

    /// Makes `policy` the one new runs of every agent use (runs in flight
    /// finish on theirs); remembers the replaced one for a rollback and
    /// returns it.
    pub fn swap_policy(&self, policy: Arc<dyn Decider>) -> Arc<dyn Decider> {
        let mut previous = self.history();
        let replaced = self.install(policy);
        *previous = Some(replaced.clone());
        replaced
    }

    /// Returns to the module the last swap replaced; `None` when there is
    /// none. The module rolled back from becomes the one to roll back to.
    pub fn rollback_policy(&self) -> Option<Arc<dyn Decider>> {
        let mut previous = self.history();
        let target = previous.take()?;
        let replaced = self.install(target.clone());
        *previous = Some(replaced);
        Some(target)
    }

    fn install(&self, policy: Arc<dyn Decider>) -> Arc<dyn Decider> {
        let mut replaced = None;
        for runner in self.runners.values() {
            let old = runner.swap_policy(policy.clone());
            replaced.get_or_insert(old);
        }
        replaced.expect("the default agent always has a runner")
    }

    fn history(&self) -> std::sync::MutexGuard<'_, Option<Arc<dyn Decider>>> {
        self.previous_policy
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }
}

/// Serves `gateway` on `listener` until `shutdown` resolves, then stops
/// accepting and waits for requests in flight (streams included) to finish.
pub async fn serve(
    listener: tokio::net::TcpListener,
    gateway: Arc<Gateway>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(gateway))
        .with_graceful_shutdown(shutdown)
        .await
}
