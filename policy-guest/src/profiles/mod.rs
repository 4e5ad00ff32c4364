//! Auth profiles: which to try in what order (spec §4), which one a session
//! keeps (F-4.4 … F-4.6), and how failures and successes change a profile's
//! routing state (spec §6). Pure functions of their inputs; time comes in as
//! `now_ms`.

mod order;
mod pin;
mod usage;

pub use order::order_profiles;
pub use pin::pin_profile;
pub use usage::{
    record_failure, record_success, AUTH_PERMANENT_BASE_MS, AUTH_PERMANENT_MAX_MS,
    COOLDOWN_BASE_MS, COOLDOWN_FACTOR, COOLDOWN_MAX_MS,
};

/// A failure as recorded against a profile: a classified reason, or
/// `Unknown` when the classifier named none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordedReason {
    RateLimit,
    Overloaded,
    Billing,
    Auth,
    AuthPermanent,
    Timeout,
    Format,
    ModelNotFound,
    SessionExpired,
    ContextOverflow,
    Unknown,
}

/// How a credential authenticates. The declaration order is the round-robin
/// rank (F-4.2): OAuth, then static tokens, then API keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CredentialKind {
    OAuth,
    Token,
    ApiKey,
}

/// A profile's routing state (`usageStats`, F-6.3).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Usage {
    pub last_used: Option<u64>,
    pub cooldown_until: Option<u64>,
    pub cooldown_reason: Option<RecordedReason>,
    pub cooldown_model: Option<String>,
    pub disabled_until: Option<u64>,
    pub disabled_reason: Option<RecordedReason>,
    pub error_count: u32,
    pub failure_counts: Vec<(RecordedReason, u32)>,
    pub last_failure_at: Option<u64>,
}

impl Usage {
    /// When the profile is usable again for `model` (`None`: any model), if
    /// it is blocked at `now`: a disable blocks every model, a cooldown
    /// scoped to another model does not block this one (F-6.4).
    pub fn blocked_until(&self, model: Option<&str>, now: u64) -> Option<u64> {
        let disabled = self.disabled_until.filter(|until| *until > now);
        let cooldown = self
            .cooldown_until
            .filter(|until| *until > now)
            .filter(|_| match (self.cooldown_model.as_deref(), model) {
                (Some(scope), Some(model)) => scope == model,
                _ => true,
            });
        disabled.max(cooldown)
    }

    /// Failures of `reason` inside the window.
    pub fn failures_of(&self, reason: RecordedReason) -> u32 {
        self.failure_counts
            .iter()
            .find(|(r, _)| *r == reason)
            .map_or(0, |(_, n)| *n)
    }
}

/// A stored profile, reduced to what routing needs (never a secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredProfile {
    pub id: String,
    /// Aliases resolved by the host (`openai-codex` is `openai`).
    pub provider: String,
    pub kind: CredentialKind,
    pub expires: Option<u64>,
    pub refreshable: bool,
    pub usage: Usage,
}

/// An `auth.profiles` entry of the config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfiguredProfile {
    pub id: String,
    pub provider: String,
    pub mode: Option<CredentialKind>,
}

/// Input of [`order_profiles`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OrderRequest {
    pub provider: String,
    pub explicit_order: Option<Vec<String>>,
    pub configured: Vec<ConfiguredProfile>,
    pub stored: Vec<StoredProfile>,
    pub model: Option<String>,
    pub now_ms: u64,
}

/// One profile of an order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankedProfile {
    pub id: String,
    pub available: bool,
    pub blocked_until: Option<u64>,
}

/// Who pinned a profile to a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PinSource {
    Auto,
    User,
}

/// Input of [`pin_profile`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PinRequest {
    pub ranked: Vec<RankedProfile>,
    pub current: Option<String>,
    pub source: Option<PinSource>,
    pub pinned_at_compaction: Option<u32>,
    pub compaction_count: u32,
    pub session_reset: bool,
}

/// Output of [`pin_profile`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinDecision {
    pub profile: Option<String>,
    pub source: PinSource,
    pub compaction_count: u32,
}

/// The `auth.cooldowns.*` numbers, in milliseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CooldownConfig {
    pub billing_backoff_ms: u64,
    pub billing_backoff_ms_by_provider: Vec<(String, u64)>,
    pub billing_max_ms: u64,
    pub failure_window_ms: u64,
}

/// A failed call, recorded against the profile that made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailureEvent {
    pub provider: String,
    pub reason: RecordedReason,
    pub model: Option<String>,
    pub retry_after_ms: Option<u64>,
    pub reset_at_ms: Option<u64>,
    pub now_ms: u64,
}
