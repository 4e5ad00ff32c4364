//! A profile's routing state (F-6.3): when it served, the windows that
//! block it, and its failures inside the failure window.

use std::collections::BTreeMap;

use super::{record, RecordedReason};

record! {
    /// A cooldown that blocks one model only: a model's rate limit
    /// (F-6.4, F-12.11).
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub struct ModelCooldown {
        /// The model it blocks.
        pub model: String,
        /// Blocked until then.
        pub until: u64,
        /// Why it cooled down.
        pub reason: RecordedReason,
    }
}

record! {
    /// Failures of one model with one reason inside the failure window,
    /// where the failure concerned that model only (a model's rate limit).
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub struct ModelFailureCount {
        /// The model.
        pub model: String,
        /// The failures' reason.
        pub reason: RecordedReason,
        /// How many.
        pub count: u32,
    }
}

record! {
    /// A profile's routing state: `usageStats["provider:name"]` in
    /// `auth-state.json` (F-6.3).
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    #[cfg_attr(feature = "serde", serde(from = "wire::UsageFields"))]
    pub struct Usage {
        /// When it last served.
        #[cfg_attr(feature = "serde", serde(default, skip_serializing_if = "Option::is_none"))]
        pub last_used: Option<u64>,
        /// The whole profile is blocked until then (F-6.2).
        #[cfg_attr(feature = "serde", serde(default, skip_serializing_if = "Option::is_none"))]
        pub cooldown_until: Option<u64>,
        /// Why the whole profile cooled down.
        #[cfg_attr(feature = "serde", serde(default, skip_serializing_if = "Option::is_none"))]
        pub cooldown_reason: Option<RecordedReason>,
        /// Cooldowns of single models, at most one per model (F-12.11).
        #[cfg_attr(feature = "serde", serde(default, skip_serializing_if = "Vec::is_empty"))]
        pub model_cooldowns: Vec<ModelCooldown>,
        /// Disabled until then (F-6.5).
        #[cfg_attr(feature = "serde", serde(default, skip_serializing_if = "Option::is_none"))]
        pub disabled_until: Option<u64>,
        /// Why it was disabled.
        #[cfg_attr(feature = "serde", serde(default, skip_serializing_if = "Option::is_none"))]
        pub disabled_reason: Option<RecordedReason>,
        /// Failures inside the window (F-6.6).
        #[cfg_attr(feature = "serde", serde(default))]
        pub error_count: u32,
        /// Failures inside the window, by reason, of every model.
        #[cfg_attr(feature = "serde", serde(default, skip_serializing_if = "BTreeMap::is_empty"))]
        pub failure_counts: BTreeMap<RecordedReason, u32>,
        /// Of those, the failures that concerned one model only.
        #[cfg_attr(feature = "serde", serde(default, skip_serializing_if = "Vec::is_empty"))]
        pub model_failure_counts: Vec<ModelFailureCount>,
        /// When it last failed.
        #[cfg_attr(feature = "serde", serde(default, skip_serializing_if = "Option::is_none"))]
        pub last_failure_at: Option<u64>,
    }
}

impl Usage {
    /// When the profile is usable again for `model`, if it is blocked at
    /// `now`: a disable and a whole-profile cooldown block every model, a
    /// model's cooldown blocks that model only (F-6.4, F-12.11). With no
    /// model named, every model's cooldown counts.
    pub fn blocked_until(&self, model: Option<&str>, now: u64) -> Option<u64> {
        self.block(model, now).map(|(until, _)| until)
    }

    /// [`Usage::blocked_until`] with the reason of the window that ends
    /// last: a disable's reason when it is that window.
    pub fn block(&self, model: Option<&str>, now: u64) -> Option<(u64, RecordedReason)> {
        let unknown = RecordedReason::Unknown;
        let disabled = (self.disabled_until.filter(|until| *until > now))
            .map(|until| (until, self.disabled_reason.unwrap_or(unknown)));
        let whole = (self.cooldown_until.filter(|until| *until > now))
            .map(|until| (until, self.cooldown_reason.unwrap_or(unknown)));
        let of_model = (self.model_cooldowns.iter())
            .filter(|c| c.until > now && model.is_none_or(|model| c.model == model))
            .map(|c| (c.until, c.reason))
            .max_by_key(|(until, _)| *until);
        // On a tie the disable names the block: it is the longer-lived fact.
        [whole, of_model]
            .into_iter()
            .flatten()
            .chain(disabled)
            .max_by_key(|(until, _)| *until)
    }

    /// `model`'s own cooldown, open or not.
    pub fn model_cooldown(&self, model: &str) -> Option<&ModelCooldown> {
        self.model_cooldowns.iter().find(|c| c.model == model)
    }

    /// The end of the window that closes last, of any kind and model.
    pub fn last_window_end(&self) -> Option<u64> {
        let models = self.model_cooldowns.iter().map(|c| c.until).max();
        self.cooldown_until.max(self.disabled_until).max(models)
    }

    /// Failures of `reason` inside the window.
    pub fn failures_of(&self, reason: RecordedReason) -> u32 {
        self.failure_counts.get(&reason).copied().unwrap_or(0)
    }

    /// Failures inside the window that concerned `model` only.
    pub fn failures_of_model(&self, model: &str) -> u32 {
        (self.model_failure_counts.iter())
            .filter(|c| c.model == model)
            .fold(0, |sum, c| sum.saturating_add(c.count))
    }

    /// Failures inside the window that concerned the whole profile: the
    /// count less those of single models.
    pub fn profile_failures(&self) -> u32 {
        let of_models =
            (self.model_failure_counts.iter()).fold(0u32, |sum, c| sum.saturating_add(c.count));
        self.error_count.saturating_sub(of_models)
    }

    /// The failure counts as the contract lists them: the profile's per
    /// reason, then each model's with its model (the inverse of
    /// [`counts_from_listed`]).
    pub fn listed_counts(&self) -> impl Iterator<Item = (RecordedReason, Option<&str>, u32)> + '_ {
        let of_profile = self.profile_failure_counts().map(|(r, n)| (r, None, n));
        let of_models =
            (self.model_failure_counts.iter()).map(|c| (c.reason, Some(c.model.as_str()), c.count));
        of_profile.chain(of_models)
    }

    /// Failures of each reason that concerned the whole profile, as the
    /// contract lists them beside [`Usage::model_failure_counts`].
    pub fn profile_failure_counts(&self) -> impl Iterator<Item = (RecordedReason, u32)> + '_ {
        self.failure_counts.iter().filter_map(|(reason, count)| {
            let of_models = (self.model_failure_counts.iter())
                .filter(|c| c.reason == *reason)
                .fold(0u32, |sum, c| sum.saturating_add(c.count));
            Some((*reason, count.saturating_sub(of_models))).filter(|(_, n)| *n > 0)
        })
    }
}

/// Failure counts as the contract lists them — `(reason, model, count)`,
/// the model set when the failures concerned that model only — as a
/// [`Usage`] keeps them: per reason of every model, and apart the counts of
/// single models.
pub fn counts_from_listed(
    listed: impl IntoIterator<Item = (RecordedReason, Option<String>, u32)>,
) -> (BTreeMap<RecordedReason, u32>, Vec<ModelFailureCount>) {
    let mut by_reason = BTreeMap::new();
    let mut of_models = Vec::new();
    for (reason, model, count) in listed {
        let total: &mut u32 = by_reason.entry(reason).or_default();
        *total = total.saturating_add(count);
        if let Some(model) = model {
            of_models.push(ModelFailureCount {
                model,
                reason,
                count,
            });
        }
    }
    (by_reason, of_models)
}

/// The stored form as read: files written before cooldowns were kept per
/// model hold one cooldown with an optional `cooldownModel`; read, that
/// cooldown is the model's own.
#[cfg(feature = "serde")]
mod wire {
    use super::{BTreeMap, ModelCooldown, ModelFailureCount, RecordedReason, Usage};

    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct UsageFields {
        #[serde(default)]
        last_used: Option<u64>,
        #[serde(default)]
        cooldown_until: Option<u64>,
        #[serde(default)]
        cooldown_reason: Option<RecordedReason>,
        #[serde(default)]
        cooldown_model: Option<String>,
        #[serde(default)]
        model_cooldowns: Vec<ModelCooldown>,
        #[serde(default)]
        disabled_until: Option<u64>,
        #[serde(default)]
        disabled_reason: Option<RecordedReason>,
        #[serde(default)]
        error_count: u32,
        #[serde(default)]
        failure_counts: BTreeMap<RecordedReason, u32>,
        #[serde(default)]
        model_failure_counts: Vec<ModelFailureCount>,
        #[serde(default)]
        last_failure_at: Option<u64>,
    }

    impl From<UsageFields> for Usage {
        fn from(fields: UsageFields) -> Usage {
            let mut model_cooldowns = fields.model_cooldowns;
            let mut cooldown_until = fields.cooldown_until;
            let mut cooldown_reason = fields.cooldown_reason;
            if let (Some(model), Some(until)) = (fields.cooldown_model, cooldown_until) {
                if !model_cooldowns.iter().any(|c| c.model == model) {
                    let reason = cooldown_reason.unwrap_or(RecordedReason::RateLimit);
                    model_cooldowns.push(ModelCooldown {
                        model,
                        until,
                        reason,
                    });
                }
                cooldown_until = None;
                cooldown_reason = None;
            }
            Usage {
                last_used: fields.last_used,
                cooldown_until,
                cooldown_reason,
                model_cooldowns,
                disabled_until: fields.disabled_until,
                disabled_reason: fields.disabled_reason,
                error_count: fields.error_count,
                failure_counts: fields.failure_counts,
                model_failure_counts: fields.model_failure_counts,
                last_failure_at: fields.last_failure_at,
            }
        }
    }
}
