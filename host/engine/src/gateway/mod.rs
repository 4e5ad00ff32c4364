//! `failover serve`: an OpenAI- and Anthropic-compatible gateway in front
//! of the runner.
//!
//! - `POST /v1/chat/completions` (OpenAI) and `POST /v1/messages`
//!   (Anthropic) — whole or streamed (SSE), over the same runner and both
//!   upstream shapes; fail over only before the first byte reaches the
//!   client.
//! - `GET /v1/models`, `GET /healthz`, `GET /readyz` (can the default
//!   chain serve now), `GET /metrics` (Prometheus), `GET /status`,
//!   `POST /v1/sessions/{id}/reset`.
//!
//! The request's `model` picks the chain: `auto` is the default agent's,
//! `agent:<id>` that agent's, `provider/model` a strict selection (F-7.6).
//! `x-session-id` keeps profile stickiness and fallback state per session.
//! Responses say who served them (`x-failover-provider`, `-model`,
//! `-profile`).

pub mod admin;
mod admission;
mod alarm;
mod anthropic_errors;
mod chat;
mod front;
mod header_values;
mod keys;
pub mod metrics;
mod readiness;
mod reply;
mod router;
mod server;

pub use server::serve as serve_router;

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

pub use crate::config::gateway::GatewayConfig;
pub use crate::config::gateway::ServerLimits;
pub use keys::KeysError;
pub use keys::{ClientKeys, CLIENT_KEYS_FILE_ENV};

use crate::config::Config;
use crate::replay::record::{Recorder, RecordingProvider};
use crate::runner::Runner;
use crate::state::{Backend, StateDir, StateError};
use crate::time::SystemClock;
use crate::upstreams::HttpProvider;
use failover_policy::Decider;

/// Default listen address: loopback only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8787";

/// Most replaced policy modules kept for rollbacks: each holds its
/// compiled code (a few MiB); 16 swaps back is past any operator's undo.
pub(crate) const MAX_POLICY_HISTORY: usize = 16;

/// The runner the gateway drives: real HTTP providers, the system clock.
pub(crate) type GatewayRunner = Runner<RecordingProvider<HttpProvider>, SystemClock>;

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
    /// The modules swaps replaced, oldest first: rollbacks return through
    /// them one at a time, down to the module `serve` started with.
    history: Mutex<Vec<Arc<dyn Decider>>>,
    recorder: Option<Arc<Recorder>>,
    metrics: metrics::Metrics,
}

/// The gateway could not start.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The state on disk could not be used.
    #[error(transparent)]
    State(#[from] StateError),
    /// The HTTP client for the providers could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(#[from] reqwest::Error),
    /// Asked to listen beyond loopback with no client keys.
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
        let backend = Backend::from_config(&config)?;
        let skipped_events = Arc::default();
        for agent in agents {
            if runners.contains_key(&agent) {
                continue;
            }
            let (mut store, mut sessions) = backend.open(state_dir, &agent)?;
            // A recording covers the default agent: it watches that agent's
            // state for changes other processes make (F-12.4).
            if let (Some(recorder), true) = (&options.recorder, agent == options.agent) {
                store = store.with_watch(recorder.clone());
                sessions = sessions.with_watch(recorder.clone());
            }
            let provider = RecordingProvider::new(
                HttpProvider::new(config.clone(), store.clone())?
                    .counting_skips_in(Arc::clone(&skipped_events)),
                options.recorder.clone(),
            );
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
            metrics: metrics::Metrics::new(&config),
            default_agent: options.agent,
            runners,
            client_keys: options.client_keys,
            config,
            history: Mutex::new(Vec::new()),
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

    /// The limits it serves within (`gateway.*`).
    pub fn limits(&self) -> ServerLimits {
        self.config.gateway.limits()
    }

    /// What `/metrics` reports; it observes every run.
    pub fn metrics(&self) -> &metrics::Metrics {
        &self.metrics
    }

    /// The default agent's runner.
    pub fn runner(&self) -> &Arc<GatewayRunner> {
        &self.runners[&self.default_agent]
    }

    /// An agent's runner.
    pub(crate) fn agent_runner(&self, agent: &str) -> Option<&Arc<GatewayRunner>> {
        self.runners.get(agent)
    }

    /// The module new runs use.
    pub fn active_policy(&self) -> Arc<dyn Decider> {
        self.runner().policy()
    }

    /// The module the last swap replaced: what a rollback returns to.
    pub(crate) fn previous_policy(&self) -> Option<Arc<dyn Decider>> {
        self.history().last().cloned()
    }

    /// How many rollbacks are possible.
    pub(crate) fn rollback_depth(&self) -> usize {
        self.history().len()
    }

    /// Makes `policy` the one new runs of every agent use (runs in flight
    /// finish on theirs); remembers the replaced one for a rollback and
    /// returns it. The oldest replaced modules are forgotten past
    /// `MAX_POLICY_HISTORY`, except the one `serve` started with.
    pub fn swap_policy(&self, policy: Arc<dyn Decider>) -> Arc<dyn Decider> {
        let mut history = self.history();
        let replaced = self.install(policy);
        self.metrics.swapped();
        history.push(replaced.clone());
        if history.len() > MAX_POLICY_HISTORY {
            // Keep the first (the embedded default, or `--policy`'s).
            history.remove(1);
        }
        replaced
    }

    /// Returns to the module the last swap replaced; `None` when there is
    /// none. Each rollback goes one swap further back.
    pub(crate) fn rollback_policy(&self) -> Option<Arc<dyn Decider>> {
        let mut history = self.history();
        let target = history.pop()?;
        self.install(target.clone());
        self.metrics.swapped();
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

    fn history(&self) -> std::sync::MutexGuard<'_, Vec<Arc<dyn Decider>>> {
        self.history.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Serves `gateway` on `listener` until `shutdown` resolves, then stops
/// accepting and waits for requests in flight (streams included) to finish.
pub async fn serve(
    listener: tokio::net::TcpListener,
    gateway: Arc<Gateway>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let limits = gateway.limits();
    server::serve(listener, front::Front::new(gateway), limits, shutdown).await
}
