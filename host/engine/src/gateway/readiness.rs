//! `GET /readyz` and the scrape-time gauges of `/metrics`: what the state
//! says now — which candidates of the default chain have a usable profile,
//! and how many profiles each provider has in each routing state.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::metrics::Snapshot;
use super::Gateway;
use crate::auth::Usage;
use crate::state::{canonical_provider, split_model, ProfileSummary, StateError};

/// A profile's routing state at `now` for any model: `disabled`,
/// `cooldown` or `ok`.
fn state_of(usage: Option<&Usage>, now: u64) -> &'static str {
    match usage {
        Some(u) if u.disabled_until.is_some_and(|until| until > now) => "disabled",
        Some(u) if u.blocked_until(None, now).is_some() => "cooldown",
        _ => "ok",
    }
}

/// Reads the default agent's profiles and their routing state.
fn profiles(
    gateway: &Gateway,
) -> Result<(Vec<ProfileSummary>, BTreeMap<String, Usage>), StateError> {
    let store = gateway.runner().store();
    Ok((store.summaries()?, store.usage()?))
}

/// Whether the default chain can serve now: per candidate, a usable
/// profile or why not (no credentials; every profile cooling down or
/// disabled, and until when).
pub(super) fn readiness(gateway: &Gateway, now: u64) -> Result<(bool, Value), StateError> {
    let (summaries, usage) = profiles(gateway)?;
    let defaults = &gateway.config.agents.defaults.model;
    let chain = defaults
        .primary
        .iter()
        .chain(defaults.fallbacks.iter().flatten());
    let mut ready = None;
    let mut candidates = Vec::new();
    for model in chain {
        let provider = canonical_provider(split_model(model).0);
        let own: Vec<&ProfileSummary> = summaries
            .iter()
            .filter(|s| s.provider == provider)
            .collect();
        let until = own
            .iter()
            .map(|s| {
                usage
                    .get(&s.id)
                    .and_then(|u| u.blocked_until(Some(model), now))
            })
            .collect::<Option<Vec<u64>>>()
            .map(|untils| untils.into_iter().min());
        let (usable, why) = match until {
            _ if own.is_empty() => (
                false,
                format!("no credentials for {provider}: add one with `failover profiles add`"),
            ),
            None => (true, "ready".to_owned()),
            Some(until) => (
                false,
                format!(
                    "every profile of {provider} is cooling down or disabled, the first until {}",
                    until.map_or_else(
                        || "later".to_owned(),
                        |u| format!("{} s from now", u.saturating_sub(now).div_ceil(1000))
                    )
                ),
            ),
        };
        if usable && ready.is_none() {
            ready = Some(model.clone());
        }
        candidates.push(json!({"model": model, "ready": usable, "why": why}));
    }
    let body = json!({"ready": ready.is_some(), "serving": ready, "candidates": candidates});
    Ok((ready.is_some(), body))
}

/// The gauges `/metrics` reads at scrape time.
pub(super) fn snapshot(gateway: &Gateway, now: u64) -> Result<Snapshot, StateError> {
    let (summaries, usage) = profiles(gateway)?;
    let mut counts: BTreeMap<(String, &'static str), i64> = BTreeMap::new();
    for summary in &summaries {
        let state = state_of(usage.get(&summary.id), now);
        *counts.entry((summary.provider.clone(), state)).or_default() += 1;
    }
    let policy = gateway
        .active_policy()
        .stats()
        .map(|s| {
            vec![
                ("calls", s.calls),
                ("traps", s.traps),
                ("instantiations", s.instantiations),
            ]
        })
        .unwrap_or_default();
    let served = gateway.runner().counters().values();
    Ok(Snapshot {
        profiles: counts.into_iter().map(|((p, s), n)| (p, s, n)).collect(),
        policy,
        after_success: vec![
            ("policy_error", served.policy_errors_after_success),
            ("state_error", served.state_errors_after_success),
            ("stream_broken", served.streams_broken),
        ],
    })
}
