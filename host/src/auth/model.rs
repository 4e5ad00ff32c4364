//! The host's auth-profile types: routing state as `auth-state.json` stores
//! it, and the inputs and outputs of the policy's profile functions.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A failure as recorded against a profile: a classified reason, or
/// `unknown` when the classifier named none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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

impl RecordedReason {
    /// Every reason, in the contract's order.
    pub const ALL: [RecordedReason; 11] = [
        RecordedReason::RateLimit,
        RecordedReason::Overloaded,
        RecordedReason::Billing,
        RecordedReason::Auth,
        RecordedReason::AuthPermanent,
        RecordedReason::Timeout,
        RecordedReason::Format,
        RecordedReason::ModelNotFound,
        RecordedReason::SessionExpired,
        RecordedReason::ContextOverflow,
        RecordedReason::Unknown,
    ];

    /// The snake_case name used in files and output.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordedReason::RateLimit => "rate_limit",
            RecordedReason::Overloaded => "overloaded",
            RecordedReason::Billing => "billing",
            RecordedReason::Auth => "auth",
            RecordedReason::AuthPermanent => "auth_permanent",
            RecordedReason::Timeout => "timeout",
            RecordedReason::Format => "format",
            RecordedReason::ModelNotFound => "model_not_found",
            RecordedReason::SessionExpired => "session_expired",
            RecordedReason::ContextOverflow => "context_overflow",
            RecordedReason::Unknown => "unknown",
        }
    }

    /// The reason named `name`, if any.
    pub fn parse(name: &str) -> Option<RecordedReason> {
        RecordedReason::ALL.into_iter().find(|r| r.as_str() == name)
    }
}

impl From<Option<crate::Reason>> for RecordedReason {
    /// A classification's reason; none is `unknown` (spec F-5.1).
    fn from(reason: Option<crate::Reason>) -> Self {
        reason.map_or(RecordedReason::Unknown, |r| {
            RecordedReason::parse(r.as_str()).unwrap_or(RecordedReason::Unknown)
        })
    }
}

/// How a credential authenticates (spec F-2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CredentialKind {
    #[serde(rename = "oauth")]
    OAuth,
    Token,
    ApiKey,
}

impl CredentialKind {
    /// The name used in files and output.
    pub fn as_str(self) -> &'static str {
        match self {
            CredentialKind::OAuth => "oauth",
            CredentialKind::Token => "token",
            CredentialKind::ApiKey => "api_key",
        }
    }
}

/// A profile's routing state: `usageStats["provider:name"]` in
/// `auth-state.json` (spec F-6.3). Times are ms since the Unix epoch.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooldown_until: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooldown_reason: Option<RecordedReason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooldown_model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled_until: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled_reason: Option<RecordedReason>,
    #[serde(default)]
    pub error_count: u32,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failure_counts: BTreeMap<RecordedReason, u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_failure_at: Option<u64>,
}

/// A stored profile reduced to what routing needs: never a secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredProfile {
    pub id: String,
    /// Aliases resolved (`openai-codex` is `openai`).
    pub provider: String,
    pub kind: CredentialKind,
    pub expires: Option<u64>,
    #[serde(default)]
    pub refreshable: bool,
    #[serde(default)]
    pub usage: Usage,
}

/// An `auth.profiles` entry of the config: metadata only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfiguredProfile {
    pub id: String,
    pub provider: String,
    pub mode: Option<CredentialKind>,
}

/// Which profiles to try for a provider.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OrderRequest {
    pub provider: String,
    pub explicit_order: Option<Vec<String>>,
    pub configured: Vec<ConfiguredProfile>,
    pub stored: Vec<StoredProfile>,
    pub model: Option<String>,
    pub now_ms: u64,
}

/// One profile of an order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RankedProfile {
    pub id: String,
    pub available: bool,
    pub blocked_until: Option<u64>,
}

/// Who pinned a profile to a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PinSource {
    Auto,
    User,
}

/// Which profile a session should use next.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PinRequest {
    pub ranked: Vec<RankedProfile>,
    pub current: Option<String>,
    pub source: Option<PinSource>,
    pub pinned_at_compaction: Option<u32>,
    pub compaction_count: u32,
    pub session_reset: bool,
}

/// The pin a session carries into its next run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PinDecision {
    pub profile: Option<String>,
    pub source: PinSource,
    pub compaction_count: u32,
}

/// The `auth.cooldowns.*` numbers the policy needs, in milliseconds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CooldownConfig {
    pub billing_backoff_ms: u64,
    pub billing_backoff_ms_by_provider: Vec<(String, u64)>,
    pub billing_max_ms: u64,
    pub failure_window_ms: u64,
}

/// A failed call, recorded against the profile that made it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailureEvent {
    pub provider: String,
    pub reason: RecordedReason,
    pub model: Option<String>,
    pub retry_after_ms: Option<u64>,
    pub reset_at_ms: Option<u64>,
    pub now_ms: u64,
}
