//! What commands share: the policy, the config and the agent's store, each
//! loaded on first use so a command pays only for what it touches.

use std::cell::OnceCell;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;

use crate::config::Config;
use crate::policy::{gate, CompileCache, Policy, PolicyEngine};
use crate::state::{AuthStore, Backend, SessionStore, StateDir};

/// The command line's global choices, resolved lazily.
pub(crate) struct Context {
    policy_path: Option<PathBuf>,
    state_dir: Option<PathBuf>,
    agent: String,
    config_path: Option<PathBuf>,
    engine: OnceCell<PolicyEngine>,
    policy: OnceCell<Arc<Policy>>,
    config: OnceCell<Config>,
    /// The agent's stores: one Redis pool and local copy per process.
    stores: OnceCell<(AuthStore, SessionStore)>,
}

impl Context {
    pub fn new(
        policy_path: Option<PathBuf>,
        state_dir: Option<PathBuf>,
        agent: String,
        config_path: Option<PathBuf>,
    ) -> Self {
        Context {
            policy_path,
            state_dir,
            agent,
            config_path,
            engine: OnceCell::new(),
            policy: OnceCell::new(),
            config: OnceCell::new(),
            stores: OnceCell::new(),
        }
    }

    /// The agent id.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// The policy: the embedded default, or `--policy PATH`.
    pub fn policy(&self) -> anyhow::Result<&Policy> {
        Ok(self.shared_policy_ref()?.as_ref())
    }

    /// The policy, shareable with a runner.
    pub(crate) fn shared_policy(&self) -> anyhow::Result<Arc<Policy>> {
        Ok(self.shared_policy_ref()?.clone())
    }

    fn shared_policy_ref(&self) -> anyhow::Result<&Arc<Policy>> {
        if let Some(policy) = self.policy.get() {
            return Ok(policy);
        }
        let engine = self.engine()?;
        let limits = self.config()?.policy_limits();
        let policy = match &self.policy_path {
            None => {
                let policy = Policy::default_policy(engine)?;
                policy.set_limits(limits);
                policy
            }
            // A module from a file passes the whole gate before it runs.
            Some(path) => {
                let bytes = std::fs::read(path)
                    .with_context(|| format!("cannot read policy module {}", path.display()))?;
                gate::admit(engine, &bytes, limits)
                    .map(|(policy, _)| policy)
                    .with_context(|| format!("policy module {} refused", path.display()))?
            }
        };
        Ok(self.policy.get_or_init(|| Arc::new(policy)))
    }

    /// The process's policy engine.
    pub fn engine(&self) -> anyhow::Result<&PolicyEngine> {
        if let Some(engine) = self.engine.get() {
            return Ok(engine);
        }
        let mut engine = PolicyEngine::new()?;
        if let Some(cache) = compile_cache() {
            engine = engine.with_compile_cache(cache);
        }
        Ok(self.engine.get_or_init(|| engine))
    }

    /// The config: `--config` / `FAILOVER_CONFIG`, else the first of the
    /// default places that has one, else the built-in defaults.
    pub fn config(&self) -> anyhow::Result<&Config> {
        if let Some(config) = self.config.get() {
            return Ok(config);
        }
        let config = Config::load_optional(self.config_file()?.as_ref())?;
        Ok(self.config.get_or_init(|| config))
    }

    /// The config file in use, if any (see [`Context::config`]).
    pub(crate) fn config_file(&self) -> anyhow::Result<Option<PathBuf>> {
        let state_dir = self.state_dir()?;
        Ok(Config::find(self.config_path.as_deref(), state_dir.root()))
    }

    /// The state directory: `--state-dir` / `FAILOVER_STATE_DIR`, or the
    /// per-user default.
    pub(crate) fn state_dir(&self) -> anyhow::Result<StateDir> {
        Ok(match &self.state_dir {
            Some(dir) => StateDir::at(dir),
            None => StateDir::default_for_user()?,
        })
    }

    /// The agent's auth store, its routing state on the configured
    /// backend.
    pub fn store(&self) -> anyhow::Result<AuthStore> {
        Ok(self.stores()?.0)
    }

    /// The agent's auth store and session store, on the configured backend
    /// (`state.backend`). With Redis, a change it cannot take is an error:
    /// this process ends before it could reconcile a local one.
    pub(crate) fn stores(&self) -> anyhow::Result<(AuthStore, SessionStore)> {
        if let Some(stores) = self.stores.get() {
            return Ok(stores.clone());
        }
        let backend = Backend::from_config(self.config()?)?.strict();
        let stores = backend.open(&self.state_dir()?, &self.agent)?;
        Ok(self.stores.get_or_init(|| stores).clone())
    }

    /// [`Context::stores`] for a run that serves an answer: with Redis
    /// down it goes on from a local copy, whose changes end with the
    /// process (a warning says so).
    pub(crate) fn serving_stores(&self) -> anyhow::Result<(AuthStore, SessionStore)> {
        let backend = Backend::from_config(self.config()?)?;
        Ok(backend.open(&self.state_dir()?, &self.agent)?)
    }
}

/// Names the directory compiled policy modules are kept in between runs;
/// set to the empty string, nothing is kept.
pub(crate) const CACHE_DIR_VAR: &str = "FAILOVER_CACHE_DIR";

/// Where compiled policy modules are kept: [`CACHE_DIR_VAR`], else
/// `failover/compiled` in the user's cache directory (`~/.cache` on Linux).
/// Compiling the default policy costs every command ~0.35 s of CPU; a
/// cached one loads in a few milliseconds.
fn compile_cache() -> Option<CompileCache> {
    match std::env::var_os(CACHE_DIR_VAR) {
        Some(dir) if dir.is_empty() => None,
        Some(dir) => Some(CompileCache::new(dir)),
        None => {
            dirs::cache_dir().map(|dir| CompileCache::new(dir.join("failover").join("compiled")))
        }
    }
}
