//! Auth profiles' routing state and the policy's profile decisions (§4,
//! §6). Times are milliseconds since the Unix epoch.

mod usage;

use crate::classify::Reason;
pub use usage::{counts_from_listed, ModelCooldown, ModelFailureCount, Usage};

/// Serde attributes every record here shares.
macro_rules! record {
    ($(#[$meta:meta])* $vis:vis struct $name:ident $body:tt) => {
        #[cfg_attr(
            feature = "serde",
            derive(serde::Serialize, serde::Deserialize),
            serde(rename_all = "camelCase")
        )]
        $(#[$meta])*
        $vis struct $name $body
    };
}
pub(crate) use record;

/// A failure as recorded against a profile: a classified reason, or
/// `unknown` when the classifier named none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "snake_case")
)]
#[allow(missing_docs)] // The variants are [`Reason`]'s, plus `Unknown`.
pub enum RecordedReason {
    RateLimit,
    Overloaded,
    Billing,
    Auth,
    AuthPermanent,
    Timeout,
    ServerError,
    TlsCertificate,
    Format,
    ModelNotFound,
    SessionExpired,
    ContextOverflow,
    Unknown,
}

impl RecordedReason {
    /// Every reason, in the contract's order.
    pub const ALL: [RecordedReason; 13] = [
        RecordedReason::RateLimit,
        RecordedReason::Overloaded,
        RecordedReason::Billing,
        RecordedReason::Auth,
        RecordedReason::AuthPermanent,
        RecordedReason::Timeout,
        RecordedReason::ServerError,
        RecordedReason::TlsCertificate,
        RecordedReason::Format,
        RecordedReason::ModelNotFound,
        RecordedReason::SessionExpired,
        RecordedReason::ContextOverflow,
        RecordedReason::Unknown,
    ];

    /// The snake_case name used in files and output.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordedReason::Unknown => "unknown",
            known => Reason::ALL[known as usize].as_str(),
        }
    }

    /// The reason named `name`, if any.
    pub fn parse(name: &str) -> Option<RecordedReason> {
        RecordedReason::ALL.into_iter().find(|r| r.as_str() == name)
    }
}

impl From<Option<Reason>> for RecordedReason {
    /// A classification's reason; none is `unknown` (F-5.1).
    fn from(reason: Option<Reason>) -> Self {
        reason.map_or(RecordedReason::Unknown, |r| RecordedReason::ALL[r as usize])
    }
}

/// How a credential authenticates (F-2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "snake_case")
)]
pub enum CredentialKind {
    /// An OAuth login: an access token, refreshed with a refresh token.
    #[cfg_attr(feature = "serde", serde(rename = "oauth"))]
    OAuth,
    /// A bearer token used as it is.
    Token,
    /// An API key.
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

record! {
    /// A stored profile reduced to what routing needs: never a secret.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub struct StoredProfile {
        /// `provider:name`.
        pub id: String,
        /// Aliases resolved (`openai-codex` is `openai`).
        pub provider: String,
        /// How it authenticates.
        pub kind: CredentialKind,
        /// When its credential expires.
        pub expires: Option<u64>,
        /// Whether an expired credential can be refreshed.
        #[cfg_attr(feature = "serde", serde(default))]
        pub refreshable: bool,
        /// Its routing state.
        #[cfg_attr(feature = "serde", serde(default))]
        pub usage: Usage,
    }
}

record! {
    /// An `auth.profiles` entry of the config: metadata only.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub struct ConfiguredProfile {
        /// `provider:name`.
        pub id: String,
        /// Its provider.
        pub provider: String,
        /// The credential kind the config expects.
        pub mode: Option<CredentialKind>,
    }
}

record! {
    /// Which profiles to try for a provider (F-4.1 … F-4.3).
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    #[cfg_attr(feature = "serde", serde(default))]
    pub struct OrderRequest {
        /// The provider, aliases resolved.
        pub provider: String,
        /// `auth.order[provider]`.
        pub explicit_order: Option<Vec<String>>,
        /// The config's `auth.profiles`.
        pub configured: Vec<ConfiguredProfile>,
        /// Every stored profile.
        pub stored: Vec<StoredProfile>,
        /// The model about to be tried (a rate limit may be scoped to it).
        pub model: Option<String>,
        /// Now.
        pub now_ms: u64,
    }
}

record! {
    /// One profile of an order.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub struct RankedProfile {
        /// `provider:name`.
        pub id: String,
        /// Not blocked now.
        pub available: bool,
        /// When a blocked one is free again.
        pub blocked_until: Option<u64>,
    }
}

/// Who pinned a profile to a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "snake_case")
)]
pub enum PinSource {
    /// The runner, which may move it (F-4.4).
    Auto,
    /// A person, which it never moves (F-4.5).
    User,
}

record! {
    /// Which profile a session should use next (F-4.4 … F-4.6).
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    #[cfg_attr(feature = "serde", serde(default))]
    pub struct PinRequest {
        /// The provider's order now.
        pub ranked: Vec<RankedProfile>,
        /// The session's pin.
        pub current: Option<String>,
        /// Who pinned it.
        pub source: Option<PinSource>,
        /// The compaction count when it was pinned.
        pub pinned_at_compaction: Option<u32>,
        /// The session's compaction count now.
        pub compaction_count: u32,
        /// The session started over since.
        pub session_reset: bool,
    }
}

record! {
    /// The pin a session carries into its next run.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub struct PinDecision {
        /// The profile pinned, if any.
        pub profile: Option<String>,
        /// Who pinned it.
        pub source: PinSource,
        /// The compaction count it was pinned at.
        pub compaction_count: u32,
    }
}

record! {
    /// The `auth.cooldowns.*` numbers the policy needs, in milliseconds.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub struct CooldownConfig {
        /// A billing disable's base (F-6.5).
        pub billing_backoff_ms: u64,
        /// The base per provider.
        pub billing_backoff_ms_by_provider: Vec<(String, u64)>,
        /// A billing disable's cap.
        pub billing_max_ms: u64,
        /// After this long without failures the counts start over (F-6.6).
        pub failure_window_ms: u64,
    }
}

record! {
    /// A failed call, recorded against the profile that made it.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub struct FailureEvent {
        /// The provider called.
        pub provider: String,
        /// The classified reason.
        pub reason: RecordedReason,
        /// The model called.
        pub model: Option<String>,
        /// The provider's `Retry-After`.
        pub retry_after_ms: Option<u64>,
        /// The provider's exact reset time (F-4.7).
        pub reset_at_ms: Option<u64>,
        /// Now.
        pub now_ms: u64,
    }
}
