//! The JSON5 config file (spec §11).
//!
//! ```json5
//! {
//!   auth: {
//!     profiles: { "openai:work": { provider: "openai", mode: "api_key" } },
//!     order: { openai: ["openai-codex:user@example.com", "openai:api-key-backup"] },
//!     cooldowns: { billingBackoffHours: 5, billingBackoffHoursByProvider: { openrouter: 2 },
//!                  billingMaxHours: 24, failureWindowHours: 24,
//!                  overloadedProfileRotations: 1, overloadedBackoffMs: 0,
//!                  rateLimitedProfileRotations: 1, shortWaitMs: 2000 },
//!   },
//!   agents: {
//!     defaults: { model: { primary: "anthropic/claude-sonnet-4", fallbacks: ["openai/gpt-4o"] },
//!                 imageModel: "openai/gpt-image-1" },
//!     list: [{ id: "main", model: "anthropic/claude-sonnet-4" }],
//!   },
//!   models: { providers: {
//!     openai: { baseUrl: "https://api.openai.com/v1", api: "openai-chat", timeoutSeconds: 120 },
//!     anthropic: { api: "anthropic-messages", models: ["claude-sonnet-4"],
//!                  oauth: { tokenUrl: "https://…/oauth/token", clientId: "…" } },
//!   },
//!   aliases: { "gpt-4o": "openai/gpt-4o", smart: ["openai/o3", "anthropic/claude-sonnet-4"] } },
//!   gateway: { maxConnections: 1024, maxRequestBytes: 16777216 },  // gateway::limits
//!   state: { backend: "redis", redis: { url: "redis://127.0.0.1:6379" } },  // state
//! }
//! ```
//!
//! Config is metadata and routing only — never secrets. A misspelt key is
//! an error naming the nearest known one; keys of the agent runtime's
//! config that this program does not read are ignored (see
//! `unknown_keys`). Errors name the file and the line and column.

mod aliases;
pub mod gateway;
pub mod providers;
pub mod state;
pub mod timeouts;
mod unknown_keys;
mod validate;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use aliases::AliasTarget;
pub use gateway::GatewayConfig;
pub use gateway::ServerLimits;
pub use providers::{Api, Endpoint, ModelEntry, ModelSettings, OAuthEndpoint, ProviderEndpoint};
pub use state::BackendKind;
pub use state::{RedisConfig, StateConfig};
pub use timeouts::{Deadlines, Timeouts};

use crate::auth::{ConfiguredProfile, CooldownConfig, CredentialKind};
use crate::names::canonical_provider;
use crate::state::StateError;

/// `auth.cooldowns.shortWaitMs` default: a `Retry-After` of a second or two
/// costs less waited out than a fallback to another model.
pub(crate) const DEFAULT_SHORT_WAIT_MS: u64 = 2_000;

/// The longest `auth.cooldowns.shortWaitMs` accepted: a longer wait holds
/// an interactive request past what a fallback would take.
pub(crate) const MAX_SHORT_WAIT_MS: u64 = 10_000;

/// Environment variable naming the config file.
pub const CONFIG_ENV: &str = "FAILOVER_CONFIG";

/// The config's file name in the places looked at by default.
pub(crate) const CONFIG_FILE_NAME: &str = "config.json5";

/// `auth.cooldowns.billingBackoffHours` default (F-6.5).
pub(crate) const DEFAULT_BILLING_BACKOFF_HOURS: f64 = 5.0;
/// `auth.cooldowns.billingMaxHours` default (F-6.5).
pub(crate) const DEFAULT_BILLING_MAX_HOURS: f64 = 24.0;
/// `auth.cooldowns.failureWindowHours` default (F-6.6).
pub(crate) const DEFAULT_FAILURE_WINDOW_HOURS: f64 = 24.0;
/// `auth.cooldowns.overloadedProfileRotations` default (F-6.7).
pub(crate) const DEFAULT_OVERLOADED_PROFILE_ROTATIONS: u32 = 1;
/// `auth.cooldowns.rateLimitedProfileRotations` default (F-6.7).
pub(crate) const DEFAULT_RATE_LIMITED_PROFILE_ROTATIONS: u32 = 1;

/// Longest configurable window: a year. Longer is a typo, and keeps the
/// millisecond arithmetic far from overflow.
const MAX_HOURS: f64 = 366.0 * 24.0;

/// The whole config.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    /// `auth.*`: profiles, their order, cooldowns.
    pub auth: AuthConfig,
    /// `agents.*`: the models runs use, by default and per agent.
    pub agents: AgentsConfig,
    /// `models.*`: the providers' endpoints.
    pub models: ModelsConfig,
    /// `policy.*`: the sandbox limits of policy calls.
    pub policy: PolicyConfig,
    /// `gateway.*`: what `failover serve` bounds (see [`gateway`]).
    pub gateway: gateway::GatewayConfig,
    /// `state.*`: where routing state and sessions live (see [`state`]).
    pub state: state::StateConfig,
    /// The configured providers' endpoints, resolved once when the config
    /// is read (the `api` parsed, defaults filled): not part of the file.
    #[serde(skip)]
    endpoints: BTreeMap<String, Endpoint>,
    /// Each `provider/model` with an `overflowTo`, and that larger model:
    /// resolved with the endpoints.
    #[serde(skip)]
    overflows: Vec<(String, String)>,
}

/// `policy.*`: the sandbox limits every policy call runs under, overriding
/// the defaults of `host/policy/src/limits.rs` (each has its reason there).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PolicyConfig {
    /// `fuelPerCall`: fuel per call.
    pub fuel_per_call: Option<u64>,
    /// `maxMemoryBytes`: linear memory per policy instance, in bytes.
    pub max_memory_bytes: Option<u64>,
    /// `callDeadlineMs`: wall-clock backstop per call, in ms.
    pub call_deadline_ms: Option<u64>,
    /// `maxMessageBytes`: longest message per error level, in bytes.
    pub max_message_bytes: Option<u64>,
}

/// Allowed ranges of the `policy.*` limits: below, the default policy
/// cannot work; above, the limit stops protecting the host.
const POLICY_LIMIT_RANGES: [(&str, u64, u64); 4] = [
    ("policy.fuelPerCall", 1_000_000, 100_000_000_000),
    ("policy.maxMemoryBytes", 1 << 20, 1 << 30),
    ("policy.callDeadlineMs", 10, 60_000),
    ("policy.maxMessageBytes", 1 << 10, 16 << 20),
];

/// `auth.*`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AuthConfig {
    /// `auth.profiles`: the profiles' metadata, by profile id.
    pub profiles: BTreeMap<String, ProfileMeta>,
    /// `auth.order`: per provider, the profile ids in the order to try them.
    pub order: BTreeMap<String, Vec<String>>,
    /// `auth.cooldowns`: billing backoffs, the failure window, rotation caps.
    pub cooldowns: Cooldowns,
}

/// An `auth.profiles` entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProfileMeta {
    /// The provider; the id's prefix when absent.
    pub provider: Option<String>,
    /// The credential kind expected (`api_key`, `oauth`, `token`).
    pub mode: Option<CredentialKind>,
    /// The account's email, as written (not used for routing).
    pub email: Option<String>,
}

/// `auth.cooldowns.*`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Cooldowns {
    /// `billingBackoffHours`: a billing disable's base, in hours (F-6.5).
    pub billing_backoff_hours: f64,
    /// `billingBackoffHoursByProvider`: the base per provider, in hours.
    pub billing_backoff_hours_by_provider: BTreeMap<String, f64>,
    /// `billingMaxHours`: a billing disable's cap, in hours.
    pub billing_max_hours: f64,
    /// `failureWindowHours`: after this long without failures the counts
    /// start over, in hours (F-6.6).
    pub failure_window_hours: f64,
    /// `overloadedProfileRotations`: same-provider rotations on overload
    /// before model fallback (F-6.7).
    pub overloaded_profile_rotations: u32,
    /// `overloadedBackoffMs`: wait before an overload rotation, in ms.
    pub overloaded_backoff_ms: u64,
    /// `rateLimitedProfileRotations`: same-provider rotations on rate limits
    /// before model fallback (F-6.7).
    pub rate_limited_profile_rotations: u32,
    /// `shortWaitMs`: the longest explicit wait (`Retry-After`) a run waits
    /// out on a candidate it would otherwise leave, once, before moving on;
    /// 0 waits none longer than `overloadedBackoffMs` (F-12.10).
    pub short_wait_ms: u64,
}

impl Default for Cooldowns {
    fn default() -> Self {
        Cooldowns {
            billing_backoff_hours: DEFAULT_BILLING_BACKOFF_HOURS,
            billing_backoff_hours_by_provider: BTreeMap::new(),
            billing_max_hours: DEFAULT_BILLING_MAX_HOURS,
            failure_window_hours: DEFAULT_FAILURE_WINDOW_HOURS,
            overloaded_profile_rotations: DEFAULT_OVERLOADED_PROFILE_ROTATIONS,
            overloaded_backoff_ms: 0,
            rate_limited_profile_rotations: DEFAULT_RATE_LIMITED_PROFILE_ROTATIONS,
            short_wait_ms: DEFAULT_SHORT_WAIT_MS,
        }
    }
}

/// `agents.*`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentsConfig {
    /// `agents.defaults`: the models and the run deadline of every run; an
    /// agent of `agents.list` may have its own model.
    pub defaults: AgentDefaults,
    /// `agents.list`: the agents with their own settings.
    pub list: Vec<AgentEntry>,
}

/// `agents.defaults`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct AgentDefaults {
    /// `model`: the text model and its fallbacks.
    pub model: ModelChoice,
    /// `imageModel`: the model (and fallbacks) of image runs (F-1.2).
    pub image_model: Option<AgentModel>,
    /// Whole-run deadline in seconds (default `DEFAULT_RUN_TIMEOUT_SECONDS`).
    pub timeout_seconds: Option<f64>,
}

/// A primary model and its fallbacks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelChoice {
    /// The primary model, `provider/model`.
    pub primary: Option<String>,
    /// The models to fall back to, in order.
    pub fallbacks: Option<Vec<String>>,
    /// How often a session on an automatic fallback tries its configured
    /// primary again (F-12.2), in seconds; 0 never does (default
    /// `DEFAULT_PRIMARY_PROBE_INTERVAL_SECONDS`). Read from
    /// `agents.defaults.model`.
    #[serde(rename = "primaryProbeIntervalSeconds")]
    pub primary_probe_interval_seconds: Option<f64>,
}

/// An agent's `model`: a string (strict) or `{primary, fallbacks?}` (F-3.7).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AgentModel {
    /// One model, `provider/model` (strict).
    Name(String),
    /// A primary and its fallbacks.
    Choice(ModelChoice),
}

/// An `agents.list[]` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentEntry {
    /// The agent's id.
    pub id: String,
    /// The agent's own model; absent, the defaults apply.
    #[serde(default)]
    pub model: Option<AgentModel>,
}

/// `models.*`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelsConfig {
    /// `models.providers`: each provider's endpoint, by provider name.
    pub providers: BTreeMap<String, ProviderEndpoint>,
    /// `models.aliases`: names for a model or a chain.
    pub aliases: BTreeMap<String, AliasTarget>,
    /// `models.timeouts`: every provider's deadlines, unless its own or a
    /// model's say otherwise.
    pub timeouts: Timeouts,
}

/// Per-attempt deadline: a long completion takes a minute or two; past
/// that an upstream is stuck, and the next profile or model is the better bet.
pub(crate) const DEFAULT_ATTEMPT_TIMEOUT_SECONDS: f64 = 120.0;
/// Whole-run deadline (every attempt and every wait of one request): long
/// enough for a few full attempts, short enough that a client is answered.
pub(crate) const DEFAULT_RUN_TIMEOUT_SECONDS: f64 = 300.0;
/// Longest configurable deadline: a day.
const MAX_TIMEOUT_SECONDS: f64 = 86_400.0;
/// How often a session on an automatic fallback tries its configured
/// primary again (F-12.2): often enough that a recovered primary is back
/// within minutes, rarely enough that a primary still down costs one
/// attempt per session per five minutes.
pub(crate) const DEFAULT_PRIMARY_PROBE_INTERVAL_SECONDS: f64 = 300.0;
/// Longest configurable probe interval: a day.
const MAX_PROBE_INTERVAL_SECONDS: f64 = 86_400.0;

impl Config {
    /// Reads the config at `path`; errors name the file, line and column.
    pub fn load(path: &Path) -> Result<Config, StateError> {
        let text = std::fs::read_to_string(path).map_err(|e| StateError::io(path, e))?;
        Config::parse(&text, path)
    }

    /// Reads a config's JSON5 `text`; errors name `path`, the line and
    /// column.
    pub fn parse(text: &str, path: &Path) -> Result<Config, StateError> {
        let parse_error = |e: json5::Error| StateError::Parse {
            path: path.to_owned(),
            message: e.to_string(),
        };
        // The syntax (trailing text included) first, then the shape, noting
        // every key nothing read.
        let raw: serde_json::Value = json5::from_str(text).map_err(parse_error)?;
        let mut ignored = Vec::new();
        let mut deserializer = json5::Deserializer::from_str(text);
        let mut config: Config = serde_ignored::deserialize(&mut deserializer, |key| {
            ignored.push(key.to_string());
        })
        .map_err(parse_error)?;
        let mut unknown = unknown_keys::errors(&ignored);
        unknown.extend(unknown_keys::model_choice_errors(&raw));
        unknown.extend(unknown_keys::model_entry_errors(&raw));
        if let Some(unknown) = unknown.first() {
            let line = unknown_keys::line_of(text, &unknown.path)
                .map_or_else(String::new, |l| format!("line {l}: "));
            return Err(StateError::Invalid {
                path: path.to_owned(),
                message: format!("{line}{}", unknown.message()),
            });
        }
        config.validate(path)?;
        config.resolve_endpoints();
        Ok(config)
    }

    /// A config given as JSON (a trace's header), checked like a file;
    /// errors name `source`.
    pub fn from_value(value: serde_json::Value, source: &Path) -> Result<Config, StateError> {
        let mut config: Config = serde_json::from_value(value).map_err(|e| StateError::Parse {
            path: source.to_owned(),
            message: format!("config: {e}"),
        })?;
        config.validate(source)?;
        config.resolve_endpoints();
        Ok(config)
    }

    /// The config named by `--config`, else by `FAILOVER_CONFIG`, else the
    /// built-in defaults. (Clap folds the variable into the flag.)
    pub fn load_optional(path: Option<&PathBuf>) -> Result<Config, StateError> {
        path.map_or_else(|| Ok(Config::default()), |p| Config::load(p))
    }

    /// Where a config is looked for when none is named, in order: the
    /// per-user config directory (`$XDG_CONFIG_HOME/failover/config.json5`,
    /// else `~/.config/failover/config.json5`), then `state_dir`.
    pub fn default_paths(state_dir: &Path) -> Vec<PathBuf> {
        dirs::config_dir()
            .map(|dir| dir.join("failover").join(CONFIG_FILE_NAME))
            .into_iter()
            .chain(std::iter::once(state_dir.join(CONFIG_FILE_NAME)))
            .collect()
    }

    /// The config file in use: `named` (`--config`, `FAILOVER_CONFIG`),
    /// else the first of [`Config::default_paths`] that exists, else none
    /// (the built-in defaults).
    pub fn find(named: Option<&Path>, state_dir: &Path) -> Option<PathBuf> {
        match named {
            Some(path) => Some(path.to_owned()),
            None => Self::default_paths(state_dir)
                .into_iter()
                .find(|p| p.is_file()),
        }
    }

    /// The `auth.cooldowns.*` numbers the policy takes, in milliseconds.
    pub fn cooldown_config(&self) -> CooldownConfig {
        let c = &self.auth.cooldowns;
        CooldownConfig {
            billing_backoff_ms: hours_to_ms(c.billing_backoff_hours),
            billing_backoff_ms_by_provider: c
                .billing_backoff_hours_by_provider
                .iter()
                .map(|(provider, hours)| {
                    (canonical_provider(provider).to_owned(), hours_to_ms(*hours))
                })
                .collect(),
            billing_max_ms: hours_to_ms(c.billing_max_hours),
            failure_window_ms: hours_to_ms(c.failure_window_hours),
        }
    }

    /// `auth.profiles` as the policy takes them, aliases resolved.
    pub(crate) fn configured_profiles(&self) -> Vec<ConfiguredProfile> {
        self.auth
            .profiles
            .iter()
            .map(|(id, meta)| {
                let provider = meta
                    .provider
                    .as_deref()
                    .unwrap_or_else(|| id.split(':').next().unwrap_or_default());
                ConfiguredProfile {
                    id: id.clone(),
                    provider: canonical_provider(provider).to_owned(),
                    mode: meta.mode,
                }
            })
            .collect()
    }

    /// `auth.order[provider]`, aliases of the key resolved.
    pub fn explicit_order(&self, provider: &str) -> Option<Vec<String>> {
        self.auth
            .order
            .iter()
            .find(|(key, _)| canonical_provider(key) == provider)
            .map(|(_, order)| order.clone())
    }
}

/// Seconds (validated) to milliseconds.
pub(crate) fn seconds_to_ms(seconds: f64) -> u64 {
    (seconds * 1000.0).round() as u64
}

impl Config {
    /// The sandbox limits: the defaults with `policy.*` applied.
    pub fn policy_limits(&self) -> failover_policy::Limits {
        let defaults = failover_policy::Limits::default();
        let p = &self.policy;
        failover_policy::Limits {
            fuel_per_call: p.fuel_per_call.unwrap_or(defaults.fuel_per_call),
            max_memory_bytes: p.max_memory_bytes.map_or(defaults.max_memory_bytes, |b| {
                usize::try_from(b).unwrap_or(usize::MAX)
            }),
            call_deadline: p
                .call_deadline_ms
                .map_or(defaults.call_deadline, std::time::Duration::from_millis),
            max_message_bytes: p.max_message_bytes.map_or(defaults.max_message_bytes, |b| {
                usize::try_from(b).unwrap_or(usize::MAX)
            }),
            ..defaults
        }
    }

    /// How often an auto override re-probes the configured primary
    /// (F-12.2), in milliseconds; 0 never.
    pub fn primary_probe_interval_ms(&self) -> u64 {
        seconds_to_ms(
            self.agents
                .defaults
                .model
                .primary_probe_interval_seconds
                .unwrap_or(DEFAULT_PRIMARY_PROBE_INTERVAL_SECONDS),
        )
    }

    /// The whole-run deadline, in milliseconds.
    pub fn run_timeout_ms(&self) -> u64 {
        seconds_to_ms(
            self.agents
                .defaults
                .timeout_seconds
                .unwrap_or(DEFAULT_RUN_TIMEOUT_SECONDS),
        )
    }

    /// `models.providers` entry of `provider`, aliases of the key resolved.
    pub(crate) fn provider_endpoint(&self, provider: &str) -> Option<&ProviderEndpoint> {
        self.models
            .providers
            .iter()
            .find(|(key, _)| canonical_provider(key) == provider)
            .map(|(_, endpoint)| endpoint)
    }
}

fn hours_to_ms(hours: f64) -> u64 {
    // Validated finite, positive and at most a year: the product fits.
    (hours * 3_600_000.0).round() as u64
}

#[cfg(test)]
mod tests;
