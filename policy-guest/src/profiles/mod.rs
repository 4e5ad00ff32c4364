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

pub use policy_types::{
    ConfiguredProfile, CooldownConfig, CredentialKind, FailureEvent, ModelCooldown,
    ModelFailureCount, OrderRequest, PinDecision, PinRequest, PinSource, RankedProfile,
    RecordedReason, StoredProfile, Usage,
};
