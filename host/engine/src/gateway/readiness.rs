//! `GET /readyz` and the scrape-time gauges of `/metrics`: what the state
//! says now.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::metrics::Snapshot;
use super::Gateway;
use crate::inspect::readiness::chain_readiness;
use crate::inspect::status::{state_name, StatusError};
use crate::state::StateError;

/// Whether the default chain can serve now, and the report: the first
/// candidate that can, and per candidate why or why not.
pub(super) fn readiness(gateway: &Gateway, now: u64) -> Result<(bool, Value), StatusError> {
    let policy = gateway.active_policy();
    let candidates = chain_readiness(
        policy.as_ref(),
        &gateway.config,
        gateway.runner().store(),
        now,
    )?;
    let serving = candidates.iter().find(|c| c.ready).map(|c| c.model.clone());
    let listed: Vec<Value> = candidates
        .iter()
        .map(|c| json!({"model": c.model, "ready": c.ready, "why": c.why}))
        .collect();
    let body = json!({"ready": serving.is_some(), "serving": serving, "candidates": listed});
    Ok((serving.is_some(), body))
}

/// The gauges `/metrics` reads at scrape time.
pub(super) fn snapshot(gateway: &Gateway, now: u64) -> Result<Snapshot, StateError> {
    let store = gateway.runner().store();
    let (summaries, usage) = (store.summaries()?, store.usage()?);
    let mut counts: BTreeMap<(String, &'static str), i64> = BTreeMap::new();
    for summary in &summaries {
        let state = usage.get(&summary.id).map_or("ok", |u| state_name(u, now));
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
    let backend = store.backend_status();
    Ok(Snapshot {
        state_store: (
            backend.backend,
            backend.healthy(),
            backend.shared.as_ref().map_or(0, |s| s.pending),
        ),
        profiles: counts.into_iter().map(|((p, s), n)| (p, s, n)).collect(),
        policy,
        skipped_events: gateway.runner().provider().inner().skipped_events(),
        after_success: vec![
            ("policy_error", served.policy_errors_after_success),
            ("state_error", served.state_errors_after_success),
            ("stream_broken", served.streams_broken),
        ],
    })
}
