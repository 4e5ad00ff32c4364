//! The policy's profile functions (spec §4, §6), called through the
//! component, with the host's own types on both sides and every answer
//! checked before the host acts on it.

use rustc_hash::FxHashSet;

use super::adapter;
use super::bindings::v1::profiles::{AttemptEvent, Outcome};
use super::memo::AttemptKey;
use super::module::Policy;
use failover_policy::{for_provider, for_provider_ids, PolicyError, Success};
use policy_types::{
    CooldownConfig, FailureEvent, OrderRequest, PinDecision, PinRequest, RankedProfile, Usage,
};

/// Longest window a policy may open: a week past the call, the longest
/// usage window providers announce. Anything later is an invalid decision.
pub(crate) const MAX_WINDOW_MS: u64 = 7 * 24 * 60 * 60 * 1000;

impl Policy {
    /// The profiles to try for a provider, best first, and why each blocked
    /// one is blocked.
    ///
    /// The module is sent the provider's stored profiles and any other the
    /// order names, as the contract says (see [`failover_policy::for_provider`]).
    pub fn order_profiles(
        &self,
        request: &OrderRequest,
    ) -> Result<Vec<RankedProfile>, PolicyError> {
        Ok(self.order_with_blocks(request)?.0)
    }

    /// [`Policy::order_profiles`] with the reason of each blocked profile.
    pub(crate) fn order_with_blocks(
        &self,
        request: &OrderRequest,
    ) -> Result<(Vec<RankedProfile>, Vec<policy_types::ProfileBlock>), PolicyError> {
        let narrow = for_provider_ids(request);
        let narrowed = for_provider(request, &narrow);
        self.kept(&self.answers.orders, &narrowed, || {
            let sent = adapter::order_request(&narrowed);
            let stored_sent: FxHashSet<&str> =
                narrowed.stored.iter().map(|p| p.id.as_str()).collect();
            let ranked = self.call("order-profiles", |store, guest| {
                guest
                    .failover_policy_profiles()
                    .call_order_profiles(store, &sent)
            })?;
            let (ranked, blocks) = adapter::host_ranked(ranked);
            checked_ranked("order-profiles", &ranked, &stored_sent)?;
            Ok((ranked, blocks))
        })
    }

    /// The profile a session should use next. The question carries no
    /// clock, so a checked answer is kept for the module's life (see
    /// the memo module).
    pub fn pin_profile(&self, request: &PinRequest) -> Result<PinDecision, PolicyError> {
        self.kept(&self.answers.pins, request, || {
            self.pin_profile_by_call(request)
        })
    }

    /// One `pin-profile` call, checked.
    fn pin_profile_by_call(&self, request: &PinRequest) -> Result<PinDecision, PolicyError> {
        let sent = adapter::pin_request(request);
        let decision = self.call("pin-profile", |store, guest| {
            guest
                .failover_policy_profiles()
                .call_pin_profile(store, &sent)
        })?;
        let decision = adapter::host_pin(decision);
        let listed = |id: &str| request.ranked.iter().any(|r| r.id == id);
        match decision.profile.as_deref() {
            Some(id) if !listed(id) => {
                return Err(PolicyError::InvalidOutput {
                    call: "pin-profile",
                    problem: format!("it pinned profile {id:?}, which was not offered"),
                })
            }
            None if !request.ranked.is_empty() => {
                return Err(PolicyError::InvalidOutput {
                    call: "pin-profile",
                    problem: "it pinned nothing although profiles were offered".into(),
                })
            }
            _ => {}
        }
        Ok(decision)
    }

    /// A profile's state after a failed call.
    pub fn record_failure(
        &self,
        usage: &Usage,
        event: &FailureEvent,
        config: &CooldownConfig,
    ) -> Result<Usage, PolicyError> {
        let verdict = policy_types::Classification {
            reason: policy_types::Reason::ALL
                .into_iter()
                .find(|r| policy_types::RecordedReason::from(Some(*r)) == event.reason),
            failover: false,
            detail: None,
            retry_after_ms: event.retry_after_ms,
        };
        let key = AttemptKey {
            usage: usage.clone(),
            provider: event.provider.clone(),
            model: event.model.clone(),
            failure: Some((event.reason, event.retry_after_ms, event.reset_at_ms)),
            now_ms: event.now_ms,
            config: config.clone(),
        };
        self.kept(&self.answers.attempts, &key, || {
            let mut outcome = adapter::verdict(&verdict);
            outcome.reset_at_ms = event.reset_at_ms;
            let sent = AttemptEvent {
                provider: event.provider.clone(),
                model: event.model.clone(),
                outcome: Outcome::Failure(outcome),
                now_ms: event.now_ms,
            };
            self.record_attempt(usage, &sent, config)
        })
    }

    /// A profile's state after a successful call on `model`.
    pub fn record_success(
        &self,
        usage: &Usage,
        success: &Success<'_>,
        config: &CooldownConfig,
    ) -> Result<Usage, PolicyError> {
        let Success {
            provider,
            model,
            now_ms,
        } = *success;
        let key = AttemptKey {
            usage: usage.clone(),
            provider: provider.to_owned(),
            model: model.map(str::to_owned),
            failure: None,
            now_ms,
            config: config.clone(),
        };
        self.kept(&self.answers.attempts, &key, || {
            let sent = AttemptEvent {
                provider: provider.to_owned(),
                model: model.map(str::to_owned),
                outcome: Outcome::Success,
                now_ms,
            };
            self.record_attempt(usage, &sent, config)
        })
    }

    /// One `record-attempt` call, checked.
    fn record_attempt(
        &self,
        usage: &Usage,
        event: &AttemptEvent,
        config: &CooldownConfig,
    ) -> Result<Usage, PolicyError> {
        let sent = adapter::usage(usage);
        let config = adapter::cooldown_config(config);
        let next = self.call("record-attempt", |store, guest| {
            guest
                .failover_policy_profiles()
                .call_record_attempt(store, &sent, event, &config)
        })?;
        let next = adapter::host_usage(next);
        checked_usage("record-attempt", usage, next, event.now_ms)
    }
}

/// An order's answer, refused when it names a profile not in `stored` (the
/// ids sent), names one twice, or marks one both available and blocked
/// (or neither).
pub(super) fn checked_ranked(
    call: &'static str,
    ranked: &[RankedProfile],
    stored: &FxHashSet<&str>,
) -> Result<(), PolicyError> {
    let invalid = |problem: String| PolicyError::InvalidOutput { call, problem };
    let mut seen = FxHashSet::default();
    for entry in ranked {
        if !stored.contains(entry.id.as_str()) {
            return Err(invalid(format!(
                "it named profile {:?}, which is not stored",
                entry.id
            )));
        }
        if !seen.insert(entry.id.as_str()) {
            return Err(invalid(format!("it named profile {:?} twice", entry.id)));
        }
        if entry.available == entry.blocked_until.is_some() {
            return Err(invalid(format!(
                "profile {:?} must be either available or blocked until a time",
                entry.id
            )));
        }
    }
    Ok(())
}

/// A window the policy opened must end after `now` and within
/// [`MAX_WINDOW_MS`]; one it left alone may stay as it was. A model has at
/// most one cooldown.
fn checked_usage(
    call: &'static str,
    before: &Usage,
    after: Usage,
    now: u64,
) -> Result<Usage, PolicyError> {
    let whole = [
        (
            "cooldownUntil".to_owned(),
            before.cooldown_until,
            after.cooldown_until,
        ),
        (
            "disabledUntil".to_owned(),
            before.disabled_until,
            after.disabled_until,
        ),
    ];
    let mut models = std::collections::BTreeSet::new();
    for cooldown in &after.model_cooldowns {
        if !models.insert(cooldown.model.as_str()) {
            return Err(PolicyError::InvalidOutput {
                call,
                problem: format!("it set two cooldowns for model {:?}", cooldown.model),
            });
        }
    }
    let of_models = after.model_cooldowns.iter().map(|c| {
        let old = before.model_cooldown(&c.model).map(|old| old.until);
        (
            format!("the cooldown of model {:?}", c.model),
            old,
            Some(c.until),
        )
    });
    for (name, old, new) in whole.into_iter().chain(of_models) {
        let Some(until) = new else { continue };
        if Some(until) == old {
            continue;
        }
        if until <= now || until > now.saturating_add(MAX_WINDOW_MS) {
            return Err(PolicyError::InvalidOutput {
                call,
                problem: format!(
                    "it set {name} to {until}, outside ({now}, {now} + {MAX_WINDOW_MS} ms]"
                ),
            });
        }
    }
    if after.last_used.is_some_and(|at| at > now)
        || after.last_failure_at.is_some_and(|at| at > now)
    {
        return Err(PolicyError::InvalidOutput {
            call,
            problem: "it recorded a use or failure in the future".into(),
        });
    }
    Ok(after)
}
