//! One session's entry: the model and profile overrides the runner owns
//! in it (spec §9, F-9.1), as `sessions.json` names them; the session
//! store keeps one per session.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::auth::{PinSource, RecordedReason};
use policy_types::OverrideSource;

/// A session's model override (F-9.1): who chose which model, and for an
/// automatic fallback where it came from. One value, so that the runner's
/// narrow rollback (F-9.7) is one comparison. The fields keep the session
/// file's names.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ModelOverride {
    /// `providerOverride`.
    #[serde(
        rename = "providerOverride",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub provider: Option<String>,
    /// `modelOverride`: the model's name at its provider.
    #[serde(
        rename = "modelOverride",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub model: Option<String>,
    /// `modelOverrideSource`: who wrote it; none on legacy entries.
    #[serde(
        rename = "modelOverrideSource",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub source: Option<OverrideSource>,
    /// The provider an auto override fell back from (F-3.3).
    #[serde(
        rename = "modelOverrideFallbackOriginProvider",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub origin_provider: Option<String>,
    /// The model an auto override fell back from.
    #[serde(
        rename = "modelOverrideFallbackOriginModel",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub origin_model: Option<String>,
    /// Why the run fell back, for `/status` (F-9.5).
    #[serde(
        rename = "modelOverrideFallbackReason",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub reason: Option<RecordedReason>,
    /// When the session last tried its configured primary while on an auto
    /// override: the fallback itself, then each re-probe (F-12.2).
    #[serde(
        rename = "modelOverridePrimaryProbeAt",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub primary_probe_at: Option<u64>,
}

impl ModelOverride {
    /// The overridden model as `provider/model`.
    pub(crate) fn full_name(&self) -> Option<String> {
        match (&self.provider, &self.model) {
            (Some(provider), Some(model)) => Some(format!("{provider}/{model}")),
            (None, Some(model)) => Some(model.clone()),
            _ => None,
        }
    }

    /// The auto override's origin as `provider/model`.
    pub fn origin(&self) -> Option<String> {
        match (&self.origin_provider, &self.origin_model) {
            (Some(provider), Some(model)) => Some(format!("{provider}/{model}")),
            _ => None,
        }
    }

    /// Whether it is the runner's automatic override onto `model`.
    pub(crate) fn is_auto_on(&self, model: &str) -> bool {
        self.source == Some(OverrideSource::Auto) && self.full_name().as_deref() == Some(model)
    }
}

/// The auth profile pinned to a session (F-4.4 … F-4.6). The fields keep
/// the session file's names.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProfilePin {
    /// `authProfileOverride`.
    #[serde(
        rename = "authProfileOverride",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub profile: Option<String>,
    /// `authProfileOverrideSource`: who pinned it.
    #[serde(
        rename = "authProfileOverrideSource",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub source: Option<PinSource>,
    /// The compaction count when it was pinned.
    #[serde(
        rename = "authProfileOverrideCompactionCount",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub compaction_count: Option<u32>,
    /// The session started over since its profile was pinned: the next run
    /// moves to the profile after the pinned one (F-4.4).
    #[serde(
        rename = "authProfileOverrideSessionReset",
        default,
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub session_reset: bool,
}

/// The fields of a session entry the runner owns.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionEntry {
    /// The model override.
    #[serde(flatten)]
    pub model_override: ModelOverride,
    /// The pinned profile.
    #[serde(flatten)]
    pub profile_pin: ProfilePin,
    /// A user changed the model (`/model`, `sessions.patch`): the live run
    /// should switch (F-9.2). Only user-driven changes set it; fallback
    /// rotation, heartbeats and compaction never do. The runtime clears it
    /// when it has switched.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub live_switch_pending: bool,
    /// Fields the runner does not own, kept as they are.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl SessionEntry {
    /// The overridden model as `provider/model`.
    pub fn model(&self) -> Option<String> {
        self.model_override.full_name()
    }

    /// The auto override's origin as `provider/model`.
    pub fn origin(&self) -> Option<String> {
        self.model_override.origin()
    }

    /// Clears the model override (`/new`, `/reset`, `sessions.reset`).
    pub fn clear_model_override(&mut self) {
        self.model_override = ModelOverride::default();
    }

    /// Starts the session over (`/new`, `/reset`, F-9.4): the model
    /// override goes, a user's profile pin goes (F-4.5), and an automatic pin
    /// is kept only so the next run can move to the profile after it (F-4.4).
    pub fn reset(&mut self) {
        self.clear_model_override();
        let pin = &mut self.profile_pin;
        if pin.source == Some(PinSource::User) {
            pin.profile = None;
            pin.source = None;
        }
        pin.compaction_count = None;
        pin.session_reset = pin.profile.is_some();
    }
}
