//! The policy's runner decisions (spec §3, §7, §8, §10), called through the
//! component and checked before the host acts on them.

use super::bindings::on_guest;
use super::error::PolicyError;
use super::module::Policy;
use policy_types::{
    CandidateDecision, CandidateRequest, ChainRequest, FailedAttempt, FallbackChain, Gate,
    GateDecision, ModelHealth, OverrideSource, RankedProfile, RotationConfig, RunStep, RunSummary,
    Selection, SelectionRequest, SummaryRequest,
};

/// `model-gate`'s answer for a model with no kept health, fixed by the
/// contract from 0.6.0 on.
pub(crate) const IDLE_GATE: GateDecision = GateDecision {
    gate: Gate::Open,
    health: ModelHealth {
        hangs: 0,
        last_hang_at: None,
        slow_until: None,
        trial_started_at: None,
    },
};

/// Longest chain a policy may return: far beyond any configured list, short
/// enough that a runaway module cannot make a run try thousands of models.
pub const MAX_CHAIN: usize = 64;

impl Policy {
    /// The model a run starts with and why. From contract 0.6.0 on, a
    /// request without a session override goes untimed (`now-ms` 0, no
    /// probe time) and the module is asked once per distinct one (see
    /// [`super::memo`]).
    pub fn resolve_selection(&self, request: &SelectionRequest) -> Result<Selection, PolicyError> {
        if !self.contract().fixes_idle_answers() || request.session_override.is_some() {
            return self.ask_resolve_selection(request);
        }
        let untimed = SelectionRequest {
            now_ms: 0,
            last_primary_probe_at: None,
            ..request.clone()
        };
        self.selections
            .get_or_try(&untimed, || self.ask_resolve_selection(&untimed))
    }

    /// `resolve-selection`, asked of the module as `request` says.
    pub(crate) fn ask_resolve_selection(
        &self,
        request: &SelectionRequest,
    ) -> Result<Selection, PolicyError> {
        let selection: Selection = self.call("resolve-selection", |store, guest| {
            on_guest!(guest, g => g
                .failover_policy_runner()
                .call_resolve_selection(store, &request.clone().mirror()))
        })?;
        let offered = [
            &request.configured_primary,
            &request.agent_primary,
            &request.cron_model,
            &request.heartbeat_model,
        ]
        .into_iter()
        .flatten()
        .chain(request.session_override.as_ref().map(|o| &o.model));
        let known = offered.clone().any(|m| Some(m) == selection.model.as_ref());
        if selection.model.is_some() && !known {
            return Err(PolicyError::InvalidOutput {
                call: "resolve-selection",
                problem: "it chose a model it was not offered".into(),
            });
        }
        let auto = request
            .session_override
            .as_ref()
            .is_some_and(|o| o.source == Some(OverrideSource::Auto));
        let probe_allowed = auto
            && request.configured_primary.is_some()
            && request.configured_primary != selection.model;
        if selection.probe_primary && !probe_allowed {
            return Err(PolicyError::InvalidOutput {
                call: "resolve-selection",
                problem: "it asked to probe the primary without an auto override on another model"
                    .into(),
            });
        }
        Ok(selection)
    }

    /// The candidates of a run, requested model first. The module is asked
    /// once per distinct request (see [`super::memo`]).
    pub fn candidate_chain(&self, request: &ChainRequest) -> Result<FallbackChain, PolicyError> {
        self.chains
            .get_or_try(request, || self.ask_candidate_chain(request))
    }

    fn ask_candidate_chain(&self, request: &ChainRequest) -> Result<FallbackChain, PolicyError> {
        let chain: FallbackChain = self.call("candidate-chain", |store, guest| {
            on_guest!(guest, g => g
                .failover_policy_runner()
                .call_candidate_chain(store, &request.clone().mirror()))
        })?;
        let invalid = |problem: String| PolicyError::InvalidOutput {
            call: "candidate-chain",
            problem,
        };
        if chain.candidates.first() != Some(&request.requested) {
            return Err(invalid("the requested model must come first".into()));
        }
        if chain.candidates.len() > MAX_CHAIN {
            return Err(invalid(format!(
                "{} candidates (at most {MAX_CHAIN})",
                chain.candidates.len()
            )));
        }
        let offered = |model: &String| {
            request.configured_fallbacks.contains(model)
                || request.configured_primary.as_ref() == Some(model)
                || request
                    .source_fallbacks
                    .iter()
                    .flatten()
                    .any(|m| m == model)
                || request
                    .fallbacks_override
                    .iter()
                    .flatten()
                    .any(|m| m == model)
        };
        if let Some(stranger) = chain.candidates[1..].iter().find(|m| !offered(m)) {
            return Err(invalid(format!(
                "it added {stranger:?}, which no list offered"
            )));
        }
        Ok(chain)
    }

    /// Attempt, probe or skip a candidate.
    pub fn decide_candidate(
        &self,
        request: &CandidateRequest,
    ) -> Result<CandidateDecision, PolicyError> {
        let decision: CandidateDecision = self.call("decide-candidate", |store, guest| {
            on_guest!(guest, g => g
                .failover_policy_runner()
                .call_decide_candidate(store, &request.clone().mirror()))
        })?;
        checked_decision("decide-candidate", &decision, &request.ranked)?;
        Ok(decision)
    }

    /// The step after a failed attempt.
    pub fn next_step(
        &self,
        attempt: &FailedAttempt,
        config: &RotationConfig,
    ) -> Result<RunStep, PolicyError> {
        let step: RunStep = self.call("next-step", |store, guest| {
            on_guest!(guest, g => g
                .failover_policy_runner()
                .call_next_step(store, &attempt.clone().mirror(), (*config).mirror()))
        })?;
        let invalid = |problem: String| PolicyError::InvalidOutput {
            call: "next-step",
            problem,
        };
        match step {
            RunStep::RotateProfile(wait_ms) => {
                if attempt.profiles_left == 0 {
                    return Err(invalid("it rotated with no profile left".into()));
                }
                if wait_ms > super::MAX_WINDOW_MS {
                    return Err(invalid(format!("a wait of {wait_ms} ms")));
                }
            }
            RunStep::Candidate(position) => {
                if position <= attempt.position || position as usize >= attempt.chain.len() {
                    return Err(invalid(format!(
                        "it moved to position {position} from {} of a chain of {}",
                        attempt.position,
                        attempt.chain.len()
                    )));
                }
            }
            RunStep::Stop(_) => {}
        }
        Ok(step)
    }

    /// Whether a model may be attempted now (F-12.3), and its health from
    /// now on. From contract 0.6.0 on, a model with no kept health is open
    /// and stays so without a call: the contract fixes that answer.
    pub fn model_gate(
        &self,
        health: &ModelHealth,
        others_remain: bool,
        now_ms: u64,
    ) -> Result<GateDecision, PolicyError> {
        if self.contract().fixes_idle_answers() && *health == ModelHealth::default() {
            return Ok(IDLE_GATE);
        }
        self.ask_model_gate(health, others_remain, now_ms)
    }

    /// `model-gate`, asked of the module.
    pub(crate) fn ask_model_gate(
        &self,
        health: &ModelHealth,
        others_remain: bool,
        now_ms: u64,
    ) -> Result<GateDecision, PolicyError> {
        let decision: GateDecision = self.call("model-gate", |store, guest| {
            on_guest!(guest, g => g
                .failover_policy_runner()
                .call_model_gate(store, health.mirror(), others_remain, now_ms))
        })?;
        checked_health("model-gate", &decision.health, now_ms)?;
        Ok(decision)
    }

    /// A model's health after an attempt on it ended (F-12.3). From
    /// contract 0.6.0 on, an answer from a model with no kept health leaves
    /// it so without a call: the contract fixes that answer.
    pub fn record_attempt_end(
        &self,
        health: &ModelHealth,
        hung: bool,
        now_ms: u64,
    ) -> Result<ModelHealth, PolicyError> {
        if self.contract().fixes_idle_answers() && !hung && *health == ModelHealth::default() {
            return Ok(ModelHealth::default());
        }
        self.ask_record_attempt_end(health, hung, now_ms)
    }

    /// `record-attempt-end`, asked of the module.
    pub(crate) fn ask_record_attempt_end(
        &self,
        health: &ModelHealth,
        hung: bool,
        now_ms: u64,
    ) -> Result<ModelHealth, PolicyError> {
        let health: ModelHealth = self.call("record-attempt-end", |store, guest| {
            on_guest!(guest, g => g
                .failover_policy_runner()
                .call_record_attempt_end(store, health.mirror(), hung, now_ms))
        })?;
        checked_health("record-attempt-end", &health, now_ms)?;
        Ok(health)
    }

    /// The summary of an exhausted chain.
    pub fn summarise(&self, request: &SummaryRequest) -> Result<RunSummary, PolicyError> {
        let summary: RunSummary = self.call("summarise", |store, guest| {
            on_guest!(guest, g => g
                .failover_policy_runner()
                .call_summarise(store, &request.clone().mirror()))
        })?;
        if summary.ready_at.is_some_and(|at| {
            at <= request.now_ms || at > request.now_ms.saturating_add(super::MAX_WINDOW_MS)
        }) {
            return Err(PolicyError::InvalidOutput {
                call: "summarise",
                problem: "its ready time is not in the coming week".into(),
            });
        }
        Ok(summary)
    }
}

/// A candidate's decision, refused when it names a profile that is not
/// one of `ranked`'s, or attempts none.
pub(super) fn checked_decision(
    call: &'static str,
    decision: &CandidateDecision,
    ranked: &[RankedProfile],
) -> Result<(), PolicyError> {
    let offered = |id: &str| ranked.iter().any(|r| r.id == id);
    let named: Vec<&str> = match decision {
        CandidateDecision::Attempt(profiles) => profiles.iter().map(String::as_str).collect(),
        CandidateDecision::Probe { profile, .. } => vec![profile.as_str()],
        CandidateDecision::Skip(_) => Vec::new(),
    };
    if let Some(stranger) = named.iter().find(|id| !offered(id)) {
        return Err(PolicyError::InvalidOutput {
            call,
            problem: format!("it named profile {stranger:?}, which was not offered"),
        });
    }
    if matches!(decision, CandidateDecision::Attempt(p) if p.is_empty()) {
        return Err(PolicyError::InvalidOutput {
            call,
            problem: "it asked to attempt no profile".into(),
        });
    }
    Ok(())
}

/// A module's model health, refused when a time in it lies more than
/// [`super::MAX_WINDOW_MS`] ahead of `now_ms` (the past is harmless: a
/// record kept from a month ago is just old).
fn checked_health(
    call: &'static str,
    health: &ModelHealth,
    now_ms: u64,
) -> Result<(), PolicyError> {
    let latest = now_ms.saturating_add(super::MAX_WINDOW_MS);
    let times = [
        ("last-hang-at", health.last_hang_at),
        ("slow-until", health.slow_until),
        ("trial-started-at", health.trial_started_at),
    ];
    if let Some((name, at)) = times
        .iter()
        .find_map(|(name, at)| at.filter(|at| *at > latest).map(|at| (name, at)))
    {
        return Err(PolicyError::InvalidOutput {
            call,
            problem: format!("it set {name} to {at}, more than a week after {now_ms}"),
        });
    }
    Ok(())
}
