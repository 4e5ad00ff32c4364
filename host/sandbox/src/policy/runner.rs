//! The policy's runner decisions (spec §3, §7, §8, §10), called through the
//! component and checked before the host acts on them.

use super::adapter;
use super::module::Policy;
use failover_policy::{routes_to, PolicyError};
use policy_types::{
    AttemptEnd, CandidateDecision, CandidateFacts, CandidatePlan, CandidateRequest, FailedAttempt,
    ModelHealth, OrderRequest, OverrideSource, RankedProfile, RotationConfig, RunPlan, RunRequest,
    RunStep, RunSummary, SummaryRequest,
};

pub use policy_types::MAX_CHAIN;

impl Policy {
    /// Where a run starts and may go. A request without a session override
    /// carries no clock, so its checked answer is kept (see
    /// the memo module).
    pub fn plan_run(&self, request: &RunRequest) -> Result<RunPlan, PolicyError> {
        if request.session_override.is_some() {
            return self.ask_plan_run(request);
        }
        self.kept(&self.answers.plans, request, || self.ask_plan_run(request))
    }

    /// One `plan-run` call, checked.
    pub(crate) fn ask_plan_run(&self, request: &RunRequest) -> Result<RunPlan, PolicyError> {
        let sent = adapter::run_request(request);
        let plan = self.call("plan-run", |store, guest| {
            guest.failover_policy_runner().call_plan_run(store, &sent)
        })?;
        let plan = adapter::host_plan(plan);
        checked_plan(request, &plan)?;
        Ok(plan)
    }

    /// The order of a candidate's profiles and the decision on it: the
    /// module's own blocks go to `decide-candidate`.
    pub fn plan_candidate(
        &self,
        order: &OrderRequest,
        facts: &CandidateFacts,
    ) -> Result<CandidatePlan, PolicyError> {
        let (ranked, blocks) = self.order_with_blocks(order)?;
        let mut request = facts.request(order, ranked);
        request.blocks = blocks;
        let decision = self.decide_candidate(&request)?;
        Ok(CandidatePlan {
            ranked: request.ranked,
            decision,
        })
    }

    /// Attempt, trial, probe or skip a candidate.
    pub fn decide_candidate(
        &self,
        request: &CandidateRequest,
    ) -> Result<CandidateDecision, PolicyError> {
        self.kept(&self.answers.candidates, request, || {
            let sent = adapter::candidate_request(&request.model, request);
            let decision = self.call("decide-candidate", |store, guest| {
                guest
                    .failover_policy_runner()
                    .call_decide_candidate(store, &sent)
            })?;
            let decision = adapter::host_decision(decision);
            checked_decision("decide-candidate", &decision, &request.ranked)?;
            Ok(decision)
        })
    }

    /// The step after a failed attempt.
    pub fn next_step(
        &self,
        attempt: &FailedAttempt,
        config: &RotationConfig,
    ) -> Result<RunStep, PolicyError> {
        let key = (attempt.clone(), *config);
        self.kept(&self.answers.steps, &key, || {
            let sent = adapter::failed_attempt(attempt);
            let rotation = adapter::rotation_config(config);
            let step = self.call("next-step", |store, guest| {
                guest
                    .failover_policy_runner()
                    .call_next_step(store, &sent, rotation)
            })?;
            let step = adapter::host_step(step);
            checked_step(attempt, config, step)?;
            Ok(step)
        })
    }

    /// A model's health after an attempt on it ended (F-12.3).
    pub fn record_model_attempt(
        &self,
        health: &ModelHealth,
        end: AttemptEnd,
        now_ms: u64,
    ) -> Result<ModelHealth, PolicyError> {
        self.kept(&self.answers.health, &(*health, end, now_ms), || {
            let sent = adapter::health(health);
            let end = adapter::attempt_end(end);
            let health = self.call("record-model-attempt", |store, guest| {
                guest
                    .failover_policy_runner()
                    .call_record_model_attempt(store, sent, end, now_ms)
            })?;
            let health = adapter::host_health(health);
            checked_health("record-model-attempt", &health, now_ms)?;
            Ok(health)
        })
    }

    /// The summary of an exhausted chain.
    pub fn summarise(&self, request: &SummaryRequest) -> Result<RunSummary, PolicyError> {
        let attempts = adapter::attempt_records(&request.attempts);
        let profiles: Vec<_> = request.profiles.iter().map(adapter::stored).collect();
        let summary = self.call("summarise", |store, guest| {
            guest.failover_policy_runner().call_summarise(
                store,
                &attempts,
                &profiles,
                request.now_ms,
            )
        })?;
        let summary = adapter::host_summary(summary);
        if summary.ready_at.is_some_and(|at| {
            at <= request.now_ms
                || at
                    > request
                        .now_ms
                        .saturating_add(super::profiles::MAX_WINDOW_MS)
        }) {
            return Err(PolicyError::InvalidOutput {
                call: "summarise",
                problem: "its ready time is not in the coming week".into(),
            });
        }
        Ok(summary)
    }
}

/// A run's plan, refused as `plan-run`'s documentation says.
fn checked_plan(request: &RunRequest, plan: &RunPlan) -> Result<(), PolicyError> {
    let invalid = |problem: String| {
        Err(PolicyError::InvalidOutput {
            call: "plan-run",
            problem,
        })
    };
    if plan.candidates.len() > MAX_CHAIN {
        return invalid(format!(
            "{} candidates (at most {MAX_CHAIN})",
            plan.candidates.len()
        ));
    }
    if let Some(requested) = &request.requested {
        if plan.candidates.first() != Some(requested) {
            return invalid("the requested model must come first".into());
        }
    }
    if let Some(stranger) = plan.candidates.iter().find(|m| !offered(request, m)) {
        return invalid(format!("it chose {stranger:?}, which no field offered"));
    }
    if plan.strict && plan.candidates.len() > 1 {
        return invalid("a strict plan has more than one candidate".into());
    }
    let auto =
        (request.session_override.as_ref()).is_some_and(|o| o.source == Some(OverrideSource::Auto));
    let primary_elsewhere = request.configured_primary.is_some()
        && request.configured_primary.as_ref() != plan.candidates.first();
    if plan.probe_primary && !(auto && primary_elsewhere) {
        return invalid(
            "it asked to probe the primary without an auto override on another model".into(),
        );
    }
    Ok(())
}

/// Whether some field of `request` names `model`.
fn offered(request: &RunRequest, model: &str) -> bool {
    routes_to(request, model) || request.overflow_to.iter().any(|(_, to)| to == model)
}

/// A step, refused as `next-step`'s documentation says.
fn checked_step(
    attempt: &FailedAttempt,
    config: &RotationConfig,
    step: RunStep,
) -> Result<(), PolicyError> {
    let invalid = |problem: String| {
        Err(PolicyError::InvalidOutput {
            call: "next-step",
            problem,
        })
    };
    let cap = config.wait_cap_ms.min(super::profiles::MAX_WINDOW_MS);
    match step {
        RunStep::RotateProfile(_) if attempt.profiles_left == 0 => {
            invalid("it rotated with no profile left".into())
        }
        RunStep::RotateProfile(wait_ms) | RunStep::WaitAndRetry(wait_ms) if wait_ms > cap => {
            invalid(format!("a wait of {wait_ms} ms (at most {cap})"))
        }
        RunStep::Candidate(position)
            if position <= attempt.position || position as usize >= attempt.chain.len() =>
        {
            invalid(format!(
                "it moved to position {position} from {} of a chain of {}",
                attempt.position,
                attempt.chain.len()
            ))
        }
        _ => Ok(()),
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
        CandidateDecision::Attempt(profiles) | CandidateDecision::Trial(profiles) => {
            profiles.iter().map(String::as_str).collect()
        }
        CandidateDecision::Probe { profile, .. } => vec![profile.as_str()],
        CandidateDecision::Skip(_) => Vec::new(),
    };
    if let Some(stranger) = named.iter().find(|id| !offered(id)) {
        return Err(PolicyError::InvalidOutput {
            call,
            problem: format!("it named profile {stranger:?}, which was not offered"),
        });
    }
    if matches!(decision, CandidateDecision::Attempt(p) | CandidateDecision::Trial(p) if p.is_empty())
    {
        return Err(PolicyError::InvalidOutput {
            call,
            problem: "it asked to attempt no profile".into(),
        });
    }
    Ok(())
}

/// A module's model health, refused when a time in it lies more than
/// [`super::profiles::MAX_WINDOW_MS`] ahead of `now_ms` (the past is harmless: a
/// record kept from a month ago is just old).
fn checked_health(
    call: &'static str,
    health: &ModelHealth,
    now_ms: u64,
) -> Result<(), PolicyError> {
    let latest = now_ms.saturating_add(super::profiles::MAX_WINDOW_MS);
    let times = [
        ("last-strike-at", health.last_hang_at),
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
