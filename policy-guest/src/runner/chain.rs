//! Which model a run starts from and which candidates it may fall back to
//! (spec §3 and F-7.3).

use policy_types::{
    ChainRequest, FallbackChain, OverrideSource, RunPlan, RunRequest, Selection, SelectionRequest,
    SelectionSource,
};

/// Where a run starts and may go: a model the caller named is the user's
/// and strict unless the caller gave fallbacks with it (F-7.6); otherwise
/// [`resolve_selection`] picks the start, and [`candidate_chain`] follows
/// from it. A chain that may fall back ends with the larger models its
/// candidates' context overflows go to (`overflow-to`), for
/// [`super::advance::next_step`] to reach on an overflow; the host passes
/// them over on any other step. A strict chain has none: an overflow of a
/// model the user chose ends the run (F-5.9).
pub fn plan_run(request: &RunRequest) -> RunPlan {
    let selection = match &request.requested {
        Some(model) => Selection {
            model: Some(model.clone()),
            source: match request.fallbacks_override {
                Some(_) => SelectionSource::ConfiguredDefault,
                None => SelectionSource::UserOverride,
            },
            clear_override: false,
            probe_primary: false,
        },
        None => resolve_selection(&selection_request(request)),
    };
    let Some(first) = selection.model else {
        return RunPlan {
            candidates: Vec::new(),
            source: selection.source,
            strict: false,
            clear_override: selection.clear_override,
            probe_primary: false,
        };
    };
    let source_fallbacks = match selection.source {
        SelectionSource::AgentPrimary => request.agent_fallbacks.clone(),
        SelectionSource::CronJob => request.cron_fallbacks.clone(),
        _ => None,
    };
    let chain = candidate_chain(&ChainRequest {
        requested: first,
        source: selection.source,
        configured_primary: request.configured_primary.clone(),
        configured_fallbacks: request.configured_fallbacks.clone(),
        source_fallbacks,
        fallbacks_override: request.fallbacks_override.clone(),
    });
    let mut candidates = chain.candidates;
    if !chain.strict {
        add_overflow_targets(&mut candidates, &request.overflow_to);
    }
    RunPlan {
        candidates,
        source: selection.source,
        strict: chain.strict,
        clear_override: selection.clear_override,
        probe_primary: selection.probe_primary,
    }
}

/// Appends the larger model of each candidate's context overflows, and of
/// theirs, that the chain does not hold yet.
fn add_overflow_targets(candidates: &mut Vec<String>, overflow_to: &[(String, String)]) {
    let mut index = 0;
    while index < candidates.len() && candidates.len() < policy_types::MAX_CHAIN {
        let larger = overflow_to
            .iter()
            .find(|(from, _)| *from == candidates[index])
            .map(|(_, to)| to);
        if let Some(to) = larger.filter(|to| !candidates.contains(to)) {
            candidates.push(to.clone());
        }
        index += 1;
    }
}

/// The part of a run's request that picks its start.
fn selection_request(request: &RunRequest) -> SelectionRequest {
    SelectionRequest {
        configured_primary: request.configured_primary.clone(),
        agent_primary: request.agent_primary.clone(),
        cron_model: request.cron_model.clone(),
        heartbeat: request.heartbeat,
        heartbeat_model: request.heartbeat_model.clone(),
        session_override: request.session_override.clone(),
        primary_probe_interval_ms: request.primary_probe_interval_ms,
        last_primary_probe_at: request.last_primary_probe_at,
        now_ms: request.now_ms,
    }
}

/// The candidate chain for a run (F-7.3, with the selection-source policy of
/// F-3.1 … F-3.6).
///
/// User and legacy overrides are strict. An agent primary is strict unless
/// its model object lists fallbacks (an empty list is explicitly strict); a
/// cron job uses the configured fallbacks unless its payload lists its own
/// (empty: strict). A selection's own list, like a caller's
/// `fallbacksOverride`, is used exactly: the requested model, then that
/// list. Otherwise the requested model is followed by the configured
/// fallbacks — deduplicated, not filtered by any allow-list, tried before
/// the configured primary even across providers — and then the configured
/// primary, so the chain can return to the normal default.
pub fn candidate_chain(request: &ChainRequest) -> FallbackChain {
    let strict = |requested: &str| FallbackChain {
        candidates: vec![requested.to_owned()],
        strict: true,
    };
    let exactly = |list: &[String]| chain_of(&request.requested, list.iter(), list.is_empty());
    match request.source {
        SelectionSource::UserOverride | SelectionSource::LegacyOverride => {
            return strict(&request.requested)
        }
        SelectionSource::AgentPrimary => {
            return match request.source_fallbacks.as_deref() {
                Some(list) if !list.is_empty() => exactly(list),
                _ => strict(&request.requested),
            };
        }
        SelectionSource::CronJob => {
            if let Some(list) = request.source_fallbacks.as_deref() {
                return exactly(list);
            }
        }
        SelectionSource::ConfiguredDefault
        | SelectionSource::AutoOverride
        | SelectionSource::Heartbeat => {}
    }
    if let Some(list) = request.fallbacks_override.as_deref() {
        return exactly(list);
    }
    let configured = request
        .configured_fallbacks
        .iter()
        .chain(request.configured_primary.as_ref());
    chain_of(&request.requested, configured, false)
}

fn chain_of<'a>(
    requested: &str,
    rest: impl Iterator<Item = &'a String>,
    strict: bool,
) -> FallbackChain {
    let mut candidates = vec![requested.to_owned()];
    for model in rest {
        let model = model.trim();
        if !model.is_empty() && !candidates.iter().any(|c| c == model) {
            candidates.push(model.to_owned());
        }
    }
    FallbackChain { candidates, strict }
}

/// The starting model of a run (spec §3).
///
/// A cron job's model wins for its run; a heartbeat with its own model uses
/// it. Otherwise a session override decides (user, auto, or legacy when it
/// has no source) — except that a heartbeat drops an auto override whose
/// origin no longer matches the configured default. Then the agent's own
/// model, then the configured default. An auto override that stays
/// re-probes the configured primary at most once per interval (F-12.2).
pub fn resolve_selection(request: &SelectionRequest) -> Selection {
    let pick = |model: &Option<String>, source| Selection {
        model: model.clone(),
        source,
        clear_override: false,
        probe_primary: false,
    };
    if request.cron_model.is_some() {
        return pick(&request.cron_model, SelectionSource::CronJob);
    }
    if request.heartbeat && request.heartbeat_model.is_some() {
        return pick(&request.heartbeat_model, SelectionSource::Heartbeat);
    }
    let fallback_default = || match &request.agent_primary {
        Some(_) => pick(&request.agent_primary, SelectionSource::AgentPrimary),
        None => pick(
            &request.configured_primary,
            SelectionSource::ConfiguredDefault,
        ),
    };
    match &request.session_override {
        Some(over) => match over.source {
            Some(OverrideSource::User) => {
                pick(&Some(over.model.clone()), SelectionSource::UserOverride)
            }
            None => pick(&Some(over.model.clone()), SelectionSource::LegacyOverride),
            Some(OverrideSource::Auto) => {
                let stale = request.heartbeat && over.origin != request.configured_primary;
                if stale {
                    Selection {
                        clear_override: true,
                        ..fallback_default()
                    }
                } else {
                    Selection {
                        probe_primary: primary_probe_due(request, &over.model),
                        ..pick(&Some(over.model.clone()), SelectionSource::AutoOverride)
                    }
                }
            }
        },
        None => fallback_default(),
    }
}

/// Whether an auto override on `model` should try the configured primary
/// first in this run: probing is on, the primary is another model, and the
/// interval has passed since the session last tried it.
fn primary_probe_due(request: &SelectionRequest, model: &str) -> bool {
    let interval = request.primary_probe_interval_ms;
    let other_primary = request
        .configured_primary
        .as_deref()
        .is_some_and(|primary| primary != model);
    interval > 0
        && other_primary
        && request
            .last_primary_probe_at
            .is_none_or(|at| request.now_ms.saturating_sub(at) >= interval)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(source: SelectionSource) -> ChainRequest {
        ChainRequest {
            requested: "openai/gpt-4o".into(),
            source,
            configured_primary: Some("anthropic/claude-sonnet-4".into()),
            configured_fallbacks: vec!["openai/gpt-4o-mini".into(), "google/gemini-2.5-pro".into()],
            source_fallbacks: None,
            fallbacks_override: None,
        }
    }

    #[test]
    fn configured_chain_appends_the_primary_last() {
        let chain = candidate_chain(&request(SelectionSource::ConfiguredDefault));
        assert_eq!(
            chain.candidates,
            [
                "openai/gpt-4o",
                "openai/gpt-4o-mini",
                "google/gemini-2.5-pro",
                "anthropic/claude-sonnet-4"
            ]
        );
        assert!(!chain.strict);
    }

    #[test]
    fn user_selections_are_strict() {
        let chain = candidate_chain(&request(SelectionSource::UserOverride));
        assert_eq!(chain.candidates, ["openai/gpt-4o"]);
        assert!(chain.strict);
    }

    /// A chain that may fall back ends with its candidates' larger models
    /// for context overflows (theirs too, each once); a strict one does
    /// not.
    #[test]
    fn overflow_targets_end_a_chain_that_may_fall_back() {
        let pair = |from: &str, to: &str| (from.to_owned(), to.to_owned());
        let request = RunRequest {
            configured_primary: Some("openai/small".into()),
            configured_fallbacks: vec!["anthropic/haiku".into()],
            overflow_to: vec![
                pair("openai/small", "openai/big"),
                pair("openai/big", "openai/huge"),
                pair("anthropic/haiku", "openai/big"),
            ],
            ..RunRequest::default()
        };
        assert_eq!(
            plan_run(&request).candidates,
            [
                "openai/small",
                "anthropic/haiku",
                "openai/big",
                "openai/huge"
            ]
        );
        let pinned = RunRequest {
            requested: Some("openai/small".into()),
            ..request
        };
        let plan = plan_run(&pinned);
        assert!(plan.strict);
        assert_eq!(plan.candidates, ["openai/small"]);
    }
}
