//! One run as an object: its plan and everything it carries from step to
//! step — the chain position, the attempts and fallback steps so far, the
//! providers already probed, the session write to roll back, the best
//! `Retry-After` to wait on. Every decision is the policy's; a run only
//! carries them out, in steps of readable size:
//!
//! - [`Run::drive`] walks the chain, candidate by candidate;
//! - [`Run::candidate`] orders, decides and pins one candidate;
//! - [`Run::profiles`] tries its profiles, one call each ([`Run::attempt`]);
//! - [`Run::advance`] carries out the policy's next step after a failure;
//! - [`Run::succeed`] records a served answer, [`Run::exhausted`] waits on
//!   the soonest `Retry-After` once and then summarises the failure.
//!
//! Whatever ends a run early — a stop, the deadline, a policy or state
//! error — rolls its session write back first (F-9.7).

use std::collections::HashSet;

use failover_policy::Decider;

use crate::auth::{CooldownConfig, RecordedReason};
use crate::names::{canonical_provider, split_model};

mod attempts;
mod finish;

use crate::runner::events;
use crate::runner::ledger::calls::Failure;
use crate::runner::ledger::session::Written;
use crate::runner::model::{
    AttemptRecord, CandidateDecision, CandidateFacts, FailedAttempt, ModelHealth, RotationConfig,
    RunStep, SelectionSource, StopReason, SummaryRequest,
};
use crate::runner::observer::RunObserver;
use crate::runner::options::RunOptions;
use crate::runner::outcome::{Attempt, FallbackStep, FallbackSummaryError, RunError, RunOutcome};
use crate::runner::plan::Plan;
use crate::runner::provider::{Provider, Target, NO_CREDENTIALS};
use crate::runner::reply_end::Unfinished;
use crate::runner::shared::Runner;
use crate::time::Clock;

/// The best `Retry-After` to wait on if nothing else remains: the target
/// that is ready soonest.
struct RetryWait {
    target: Target,
    ready_at: u64,
    position: usize,
}

/// Where a run goes after a candidate.
enum Flow<Reply> {
    /// A call answered.
    Served {
        target: Target,
        reply: Reply,
        source: SelectionSource,
    },
    /// On to this chain position.
    MoveTo(usize),
    /// The policy says no candidate is left.
    Exhausted,
    /// The run ends with this error (its session write rolled back).
    Ended(RunError),
}

/// A candidate's profiles and how to try them.
struct Profiles {
    model: String,
    provider: String,
    ids: Vec<String>,
    /// A person pinned the profile (F-4.5).
    by_user: bool,
    /// The primary probe: one attempt, one profile (F-12.2).
    probe_only: bool,
}

/// One run in progress.
pub(super) struct Run<'a, P: Provider, C> {
    runner: &'a Runner<P, C>,
    policy: &'a dyn Decider,
    options: &'a RunOptions,
    request: &'a P::Request,
    observer: &'a dyn RunObserver,
    plan: Plan,
    cooldowns: CooldownConfig,
    rotation: RotationConfig,
    position: usize,
    attempts: Vec<Attempt>,
    steps: Vec<FallbackStep>,
    transient_probed: HashSet<String>,
    written: Option<Written>,
    retry_wait: Option<RetryWait>,
    /// Routing state as the store held it when profiles were last ordered.
    seen_usage: std::collections::BTreeMap<String, crate::auth::Usage>,
    /// When the last call that answered with a reply still arriving
    /// started.
    reply_started_at: u64,
}

impl<'a, P: Provider, C: Clock> Run<'a, P, C> {
    pub(super) fn new(
        runner: &'a Runner<P, C>,
        policy: &'a dyn Decider,
        options: &'a RunOptions,
        request: &'a P::Request,
        observer: &'a dyn RunObserver,
        plan: Plan,
    ) -> Self {
        let cooldowns = &runner.config.auth.cooldowns;
        Run {
            rotation: RotationConfig {
                rate_limited_profile_rotations: cooldowns.rate_limited_profile_rotations,
                overloaded_profile_rotations: cooldowns.overloaded_profile_rotations,
                overloaded_backoff_ms: cooldowns.overloaded_backoff_ms,
                // A run waits mid-way only on short waits (F-12.10), never
                // longer than the environment lets any wait be (F-6.8); the
                // configured overload backoff is an explicit wait too.
                wait_cap_ms: runner
                    .retry_wait_cap_ms
                    .min(cooldowns.short_wait_ms)
                    .max(cooldowns.overloaded_backoff_ms),
            },
            cooldowns: runner.config.cooldown_config(),
            runner,
            policy,
            options,
            request,
            observer,
            plan,
            position: 0,
            attempts: Vec::new(),
            steps: Vec::new(),
            transient_probed: HashSet::new(),
            written: None,
            retry_wait: None,
            seen_usage: Default::default(),
            reply_started_at: 0,
        }
    }

    /// Walks the chain until a candidate answers or none is left.
    pub(super) async fn drive(mut self) -> Result<RunOutcome<P::Reply>, RunError> {
        while self.position < self.plan.chain.len() {
            let flow = match self.candidate().await {
                Ok(flow) => flow,
                Err(error) => return Err(self.end(error)),
            };
            match flow {
                Flow::Served {
                    target,
                    reply,
                    source,
                } => return Ok(self.succeed(target, reply, source)),
                Flow::MoveTo(position) => self.position = position,
                Flow::Exhausted => break,
                Flow::Ended(error) => return Err(error),
            }
        }
        match self.exhausted().await {
            Ok(outcome) => Ok(outcome),
            Err(error) => Err(self.end(error)),
        }
    }

    /// Orders, decides and pins the candidate at the run's position, then
    /// tries its profiles.
    async fn candidate(&mut self) -> Result<Flow<P::Reply>, RunError> {
        let model = self.plan.chain[self.position].clone();
        let provider = canonical_provider(split_model(&model).0).to_owned();
        let now = self.runner.clock.now_ms();
        if let Some(what) = self.runner.provider.cannot_express(&model, self.request) {
            // Not the request's fault, not the profiles': this candidate
            // cannot say it, so it is passed over without a call.
            let summary = format!("skipped: {model} cannot express {what}");
            return Ok(self.skip_unsupported(summary));
        }
        let (order, seen_usage) = (self.runner).order_for(&provider, &model, now)?;
        self.seen_usage = seen_usage;
        let facts = self.facts(&provider);
        let policy = self.policy;
        let (plan, health) = self.runner.health.decide(
            &model,
            now,
            |health| {
                let facts = CandidateFacts { health, ..facts };
                Ok((policy.plan_candidate(&order, &facts)?, health))
            },
            |(plan, _)| &plan.decision,
        )?;
        let ranked = plan.ranked;
        let mut ids = match self.carry_out(&provider, plan.decision, now) {
            Ok(ids) => ids,
            Err(reason) => {
                let no_profiles = ranked.is_empty();
                return Ok(self.pass_over(&model, &provider, &health, no_profiles, reason));
            }
        };
        let probe_only = self.plan.probing_primary && self.position == 0;
        if probe_only {
            ids.truncate(1);
        }
        // F-9.3: the fallback override is on the session before the attempt
        // starts — when a candidate before failed, not when it was only
        // passed over for a feature of this one request.
        // A one-off selection never touches the session's override (F-7.6).
        let write = self.failed_before(self.position) && self.options.model.is_none();
        if let (true, Some(id)) = (write, &self.options.session) {
            let reason = self.last_failure_reason(self.position);
            self.written = self
                .runner
                .persist_fallback(id, &model, &self.plan.chain[0], reason)?;
        }
        let pin = self.runner.apply_pin(
            self.policy,
            self.options,
            self.plan.session.as_ref(),
            &ranked,
            &mut ids,
        )?;
        if let Some(written) = self.written.as_mut() {
            written.pinned = pin.written;
        }
        let profiles = Profiles {
            model,
            provider,
            ids,
            by_user: pin.by_user,
            probe_only,
        };
        self.profiles(profiles).await
    }

    /// A candidate none of whose profiles is tried: a slow model while
    /// others remain (F-12.3), a provider without credentials, or every
    /// profile blocked.
    fn pass_over(
        &mut self,
        model: &str,
        provider: &str,
        health: &ModelHealth,
        no_profiles: bool,
        reason: RecordedReason,
    ) -> Flow<P::Reply> {
        if slow(health, reason) {
            let summary = format!("skipped: {model} is slow (its attempts hang to the deadline)");
            return self.skip(reason, summary);
        }
        if no_profiles {
            let summary = format!(
                "skipped: {provider} has no credentials (add one with `failover profiles add {provider}:<name>`)"
            );
            let code = Some(NO_CREDENTIALS.to_owned());
            return self.skip_with_code(reason, code, summary);
        }
        let summary = format!(
            "skipped: every profile of {provider} is blocked ({})",
            reason.as_str()
        );
        self.skip(reason, summary)
    }

    /// The real failures (not pass-overs for a feature of this one request)
    /// of the candidates before `position`.
    fn failures_before(&self, position: usize) -> impl DoubleEndedIterator<Item = &Attempt> {
        let earlier = &self.plan.chain[..position.min(self.plan.chain.len())];
        self.attempts
            .iter()
            .filter(move |a| !a.is_unsupported_skip() && earlier.contains(&a.model))
    }

    /// Whether a candidate before `position` failed (F-9.3 then moves the
    /// session to the fallback; a pass-over alone does not).
    fn failed_before(&self, position: usize) -> bool {
        self.failures_before(position).next().is_some()
    }

    /// The reason of the last real failure before `position`.
    fn last_failure_reason(&self, position: usize) -> Option<RecordedReason> {
        self.failures_before(position).next_back().map(|a| a.reason)
    }

    /// What the policy's decision on the candidate at the run's position
    /// needs besides its profiles' order.
    fn facts(&self, provider: &str) -> CandidateFacts {
        let chain = &self.plan.chain;
        let sibling = chain[..self.position]
            .iter()
            .any(|m| canonical_provider(split_model(m).0) == provider);
        let last_probe_at = (self.runner.probes.lock())
            .unwrap_or_else(|e| e.into_inner())
            .get(provider)
            .copied();
        CandidateFacts {
            primary: self.position == 0,
            sibling,
            last_probe_at,
            transient_probe_used: self.transient_probed.contains(provider),
            // Candidates held for overflows alone are none a fallback enters.
            later_candidates: self.routed_from(self.position + 1).is_some(),
            health: ModelHealth::default(),
        }
    }

    /// Carries out the policy's word on a candidate: the profiles to try,
    /// or the reason to skip it. A probe is noted for the throttle (F-8.3,
    /// F-8.5).
    fn carry_out(
        &mut self,
        provider: &str,
        decision: CandidateDecision,
        now: u64,
    ) -> Result<Vec<String>, RecordedReason> {
        let probes = &self.runner.probes;
        match decision {
            CandidateDecision::Attempt(ids) | CandidateDecision::Trial(ids) => Ok(ids),
            CandidateDecision::Probe { profile, transient } => {
                probes
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(provider.to_owned(), now);
                if transient {
                    self.transient_probed.insert(provider.to_owned());
                }
                Ok(vec![profile])
            }
            CandidateDecision::Skip(reason) => Err(reason),
        }
    }
}

/// Whether a skip for `reason` is a slow model's (F-12.3): a timeout skip
/// of a model whose attempts have been hanging.
fn slow(health: &ModelHealth, reason: RecordedReason) -> bool {
    reason == RecordedReason::Timeout && health.slow_until.is_some()
}
