//! What a run writes on its session, and how it takes it back: the auto
//! fallback override before a fallback attempt (F-3.3, F-9.3), the profile
//! pin (F-4.4 … F-4.6), the end of an override when the primary answers a
//! probe (F-12.2), and the narrow rollback of a failed fallback (F-9.7,
//! F-12.5) — which restores only what still holds what the run wrote.

use failover_policy::Decider;

use crate::auth::{PinRequest, PinSource, RankedProfile, RecordedReason};
use crate::names::split_model;
use crate::state::{ModelOverride, ProfilePin, SessionEntry};

use super::super::model::OverrideSource;
use super::super::options::RunOptions;
use super::super::outcome::RunError;
use super::super::provider::{Provider, Target};
use super::super::shared::Runner;
use crate::time::Clock;

/// What the runner wrote on a session before a fallback attempt, to roll
/// back narrowly if the attempt fails (F-9.7).
pub(in crate::runner) struct Written {
    session: String,
    before: SessionEntry,
    after: SessionEntry,
    /// The profile the fallback attempt pinned on the session, if it
    /// pinned one: a failed fallback drops it too (F-12.5).
    pub(in crate::runner) pinned: Option<String>,
}

/// The pin a run chose for its candidate.
pub(in crate::runner) struct Pin {
    /// A person pinned the profile: only it is tried, never rotated away.
    pub(in crate::runner) by_user: bool,
    /// The profile this run pinned on the session, if it wrote one.
    pub(in crate::runner) written: Option<String>,
}

impl<P: Provider, C: Clock> Runner<P, C> {
    /// Orders `profiles` by the session's pin (F-4.4 … F-4.6), pinning the
    /// first on the session when the policy moves the pin.
    pub(in crate::runner) fn apply_pin(
        &self,
        policy: &dyn Decider,
        options: &RunOptions,
        session: Option<&SessionEntry>,
        ranked: &[RankedProfile],
        profiles: &mut Vec<String>,
    ) -> Result<Pin, RunError> {
        let none = Pin {
            by_user: false,
            written: None,
        };
        let (Some(id), Some(entry)) = (&options.session, session) else {
            return Ok(none);
        };
        let pin = &entry.profile_pin;
        // A user's pin on another provider's profile stays as it is (F-4.5:
        // never rotated away until the session starts over); this candidate
        // just uses its own order.
        let pinned_elsewhere = pin
            .profile
            .as_deref()
            .is_some_and(|pinned| !ranked.iter().any(|r| r.id == pinned));
        if pin.source == Some(PinSource::User) && pinned_elsewhere {
            return Ok(none);
        }
        let decision = policy.pin_profile(&PinRequest {
            ranked: ranked.to_vec(),
            current: pin.profile.clone(),
            source: pin.source,
            pinned_at_compaction: pin.compaction_count,
            compaction_count: options.compaction_count,
            session_reset: pin.session_reset,
        })?;
        let Some(pinned) = decision.profile else {
            return Ok(none);
        };
        if decision.source == PinSource::User {
            profiles.retain(|p| *p == pinned);
            if profiles.is_empty() {
                profiles.push(pinned);
            }
            return Ok(Pin {
                by_user: true,
                written: None,
            });
        }
        if let Some(at) = profiles.iter().position(|p| *p == pinned) {
            let pinned = profiles.remove(at);
            profiles.insert(0, pinned);
        }
        let next = ProfilePin {
            profile: Some(profiles[0].clone()),
            source: Some(PinSource::Auto),
            compaction_count: Some(decision.compaction_count),
            session_reset: false,
        };
        let changed = pin.profile != next.profile
            || pin.compaction_count != next.compaction_count
            || pin.session_reset;
        if !changed {
            return Ok(none);
        }
        self.sessions.update(id, |e| e.profile_pin = next.clone())?;
        Ok(Pin {
            by_user: false,
            written: next.profile,
        })
    }

    /// After a served answer: a session without a pin of a person's keeps
    /// the profile that served (F-4.4).
    pub(in crate::runner) fn pin_served(
        &self,
        session: &str,
        target: &Target,
    ) -> Result<(), RunError> {
        let profile = target.profile.clone();
        self.sessions.update(session, |e| {
            let pin = &mut e.profile_pin;
            if pin.source != Some(PinSource::User) {
                pin.profile.get_or_insert_with(|| profile.clone());
                pin.source.get_or_insert(PinSource::Auto);
            }
        })?;
        Ok(())
    }

    /// Writes the auto fallback override for `model` (F-3.3, F-9.3); the
    /// fallback counts as the session's last try of its primary (F-12.2).
    /// Writes nothing when the session already holds that auto override
    /// (a run that probed its primary and goes on with the override).
    pub(in crate::runner) fn persist_fallback(
        &self,
        session: &str,
        model: &str,
        origin: &str,
        reason: Option<RecordedReason>,
    ) -> Result<Option<Written>, RunError> {
        let (provider, name) = split_model(model);
        let (origin_provider, origin_model) = split_model(origin);
        let fallback = ModelOverride {
            provider: Some(provider.to_owned()),
            model: Some(name.to_owned()),
            source: Some(OverrideSource::Auto),
            origin_provider: Some(origin_provider.to_owned()),
            origin_model: Some(origin_model.to_owned()),
            reason,
            primary_probe_at: Some(self.clock.now_ms()),
        };
        let (before, after) = self.sessions.update(session, |entry| {
            let before = entry.clone();
            if !entry.model_override.is_auto_on(model) {
                entry.model_override = fallback.clone();
            }
            (before, entry.clone())
        })?;
        if before == after {
            return Ok(None);
        }
        Ok(Some(Written {
            session: session.to_owned(),
            before,
            after,
            pinned: None,
        }))
    }

    /// The configured primary answered a probe (F-12.2): the session's auto
    /// override on `model` goes, unless someone changed it meanwhile.
    pub(in crate::runner) fn primary_answered(
        &self,
        options: &RunOptions,
        model: &str,
    ) -> Result<(), RunError> {
        if let Some(id) = &options.session {
            self.sessions.update(id, |e| {
                if e.model_override.is_auto_on(model) {
                    e.clear_model_override();
                }
            })?;
        }
        Ok(())
    }

    /// F-9.7: restores the model override the runner wrote, only if it
    /// still holds what it wrote — newer edits survive — and, F-12.5, the
    /// profile pin the failed fallback wrote, if it is still that pin.
    pub(in crate::runner) fn roll_back(
        &self,
        written: &mut Option<Written>,
    ) -> Result<(), RunError> {
        let Some(w) = written.take() else {
            return Ok(());
        };
        self.sessions.update(&w.session, |entry| {
            if entry.model_override == w.after.model_override {
                entry.model_override = w.before.model_override.clone();
            }
            let pin_ours = w.pinned.is_some()
                && entry.profile_pin.profile == w.pinned
                && entry.profile_pin.source == Some(PinSource::Auto);
            if pin_ours {
                entry.profile_pin = w.before.profile_pin.clone();
            }
        })?;
        Ok(())
    }
}
