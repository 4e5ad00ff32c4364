//! The auth-profile types — routing state as `auth-state.json` stores it,
//! the inputs and outputs of the policy's profile functions — are the
//! contract's, from `policy-types`.

pub use policy_types::{
    ConfiguredProfile, CooldownConfig, CredentialKind, FailureEvent, ModelCooldown,
    ModelFailureCount, OrderRequest, PinDecision, PinRequest, PinSource, RankedProfile,
    RecordedReason, StoredProfile, Usage,
};
