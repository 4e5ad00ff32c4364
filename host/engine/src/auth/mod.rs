//! Auth profiles: their routing state and the policy's profile decisions.

pub mod model;

pub use model::{
    ConfiguredProfile, CooldownConfig, CredentialKind, FailureEvent, ModelCooldown,
    ModelFailureCount, OrderRequest, PinDecision, PinRequest, PinSource, RankedProfile,
    RecordedReason, StoredProfile, Usage,
};
