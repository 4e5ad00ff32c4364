//! One run as an object: its plan and everything it carries from step to
//! step — the chain position, the attempts and fallback steps so far, the
//! providers already probed, the session write to roll back, the best
//! `Retry-After` to wait on. Every decision is the policy's; a run only
//! carries them out, in steps of readable size:
//!
//! - [`Run::drive`] walks the chain, candidate by candidate;
//! - [`Run::candidate`] gates, orders, decides and pins one candidate;
//! - [`Run::profiles`] tries its profiles, one call each ([`Run::attempt`]);
//! - [`Run::advance`] carries out the policy's next step after a failure;
//! - [`Run::succeed`] records a served answer, [`Run::exhausted`] waits on
//!   the soonest `Retry-After` once and then summarises the failure.
//!
//! Whatever ends a run early — a stop, the deadline, a policy or state
//! error — rolls its session write back first (F-9.7).

use std::collections::HashSet;

use failover_sandbox::policy::Decider;

use crate::auth::{CooldownConfig, OrderRequest, RecordedReason, StoredProfile};
use crate::state::{canonical_provider, split_model};

use super::bookkeeping::Failure;
use super::clock::Clock;
use super::driver::Runner;
use super::events;
use super::model::{
    AttemptRecord, CandidateDecision, CandidateRequest, FailedAttempt, Gate, ProfileBlock,
    RotationConfig, RunStep, SelectionSource, StopReason, SummaryRequest,
};
use super::observer::RunObserver;
use super::options::RunOptions;
use super::outcome::{Attempt, FallbackStep, FallbackSummaryError, RunError, RunOutcome};
use super::plan::Plan;
use super::provider::{Provider, Target};
use super::session_writes::Written;

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

    /// Gates, orders, decides and pins the candidate at the run's position,
    /// then tries its profiles.
    async fn candidate(&mut self) -> Result<Flow<P::Reply>, RunError> {
        let model = self.plan.chain[self.position].clone();
        let provider = canonical_provider(split_model(&model).0).to_owned();
        let now = self.runner.clock.now_ms();
        let others_remain = self.position + 1 < self.plan.chain.len();
        let gate = self
            .runner
            .health
            .gate(self.policy, &model, others_remain, now)?;
        if gate == Gate::Skip {
            // F-12.3: a slow model is skipped while others remain.
            let summary = format!("skipped: {model} is slow (its attempts hang to the deadline)");
            return Ok(self.skip(RecordedReason::Timeout, summary));
        }
        let stored = self.runner.stored()?;
        let ranked = self.policy.order_profiles(&OrderRequest {
            provider: provider.clone(),
            explicit_order: self.runner.config.explicit_order(&provider),
            configured: self.runner.config.configured_profiles(),
            stored: stored.clone(),
            model: Some(model.clone()),
            now_ms: now,
        })?;
        let mut ids = match self.decide(&provider, &stored, &ranked, now)? {
            Ok(ids) => ids,
            Err(reason) => {
                let summary = format!(
                    "skipped: every profile of {provider} is blocked ({})",
                    reason.as_str()
                );
                return Ok(self.skip(reason, summary));
            }
        };
        let probe_only = self.plan.probing_primary && self.position == 0;
        if probe_only {
            ids.truncate(1);
        }
        // F-9.3: the fallback override is on the session before the attempt starts.
        if let (true, Some(id)) = (self.position > 0, &self.options.session) {
            let reason = self.attempts.last().map(|a| a.reason);
            self.written =
                self.runner
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

    /// The policy's word on a candidate: the profiles to try, or the reason
    /// to skip it. A probe is noted for the throttle (F-8.3, F-8.5).
    fn decide(
        &mut self,
        provider: &str,
        stored: &[StoredProfile],
        ranked: &[crate::auth::RankedProfile],
        now: u64,
    ) -> Result<Result<Vec<String>, RecordedReason>, RunError> {
        let chain = &self.plan.chain;
        let sibling = chain[..self.position]
            .iter()
            .any(|m| canonical_provider(split_model(m).0) == provider);
        let probes = &self.runner.probes;
        let last_probe_at = probes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(provider)
            .copied();
        let decision = self.policy.decide_candidate(&CandidateRequest {
            primary: self.position == 0,
            sibling,
            ranked: ranked.to_vec(),
            blocks: blocks_of(stored, ranked),
            last_probe_at,
            transient_probe_used: self.transient_probed.contains(provider),
            has_fallbacks: chain.len() > 1,
            now_ms: now,
        })?;
        Ok(match decision {
            CandidateDecision::Attempt(ids) => Ok(ids),
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
        })
    }

    /// Tries a candidate's profiles until one answers or the policy moves
    /// the run on.
    async fn profiles(&mut self, profiles: Profiles) -> Result<Flow<P::Reply>, RunError> {
        // Each profile after the first is one rotation.
        for (index, profile) in profiles.ids.iter().enumerate() {
            let target = Target {
                provider: profiles.provider.clone(),
                model: profiles.model.clone(),
                profile: profile.clone(),
            };
            if let Some(deadline) = self.options.deadline_ms {
                if self.runner.clock.now_ms() >= deadline {
                    let attempts = std::mem::take(&mut self.attempts);
                    return Ok(self.ended(RunError::DeadlineExceeded { attempts }));
                }
            }
            let failure = match self.attempt(&target).await? {
                Ok(reply) => {
                    let source = if profiles.probe_only {
                        self.runner
                            .primary_answered(self.options, &self.plan.requested)?;
                        SelectionSource::ConfiguredDefault
                    } else {
                        self.plan.source
                    };
                    return Ok(Flow::Served {
                        target,
                        reply,
                        source,
                    });
                }
                Err(failure) => failure,
            };
            let left = profiles.ids.len() - index - 1;
            let rotations = u32::try_from(index).unwrap_or(u32::MAX);
            let next = self.next_step(&profiles, &failure, rotations, left)?;
            if let Some(flow) = self.advance(next, &failure).await? {
                return Ok(flow);
            }
        }
        // Every profile was tried without the policy moving on: next model.
        self.runner.roll_back(&mut self.written)?;
        Ok(Flow::MoveTo(self.position + 1))
    }

    /// One call of `target`, told to the observer; a failure is recorded as
    /// an attempt and noted as a `Retry-After` to wait on.
    async fn attempt(&mut self, target: &Target) -> Result<Result<P::Reply, Failure>, RunError> {
        let at = self.runner.clock.now_ms();
        let result = self
            .runner
            .call_once(self.policy, target, self.request, &self.cooldowns)
            .await?;
        let failure = match result {
            Ok(reply) => {
                self.observer.call_ended(target, at, None);
                return Ok(Ok(reply));
            }
            Err(failure) => failure,
        };
        self.observer
            .call_ended(target, at, Some(&failure.attempt));
        if let Some(after) = failure.retry_after_ms {
            let ready_at = self.runner.clock.now_ms().saturating_add(after);
            if self.retry_wait.as_ref().is_none_or(|w| ready_at < w.ready_at) {
                self.retry_wait = Some(RetryWait {
                    target: target.clone(),
                    ready_at,
                    position: self.position,
                });
            }
        }
        self.attempts.push(failure.attempt.clone());
        Ok(Err(failure))
    }

    /// The policy's next step after a failed attempt; a failed primary probe
    /// costs nothing else and goes on with the auto override (F-12.2).
    fn next_step(
        &self,
        profiles: &Profiles,
        failure: &Failure,
        rotations: u32,
        left: usize,
    ) -> Result<RunStep, RunError> {
        if profiles.probe_only && !failure.aborted {
            return Ok(RunStep::Candidate(1));
        }
        Ok(self.policy.next_step(
            &FailedAttempt {
                reason: failure.attempt.reason,
                aborted: failure.aborted,
                live_switch_to: failure.live_switch_to.clone(),
                user_pinned_profile: profiles.by_user,
                rotations,
                profiles_left: u32::try_from(left).unwrap_or(u32::MAX),
                chain: self.plan.chain.clone(),
                position: u32::try_from(self.position).unwrap_or(u32::MAX),
            },
            &self.rotation,
        )?)
    }

    /// Carries out `next`; `None` to go on with the candidate's next profile.
    async fn advance(
        &mut self,
        next: RunStep,
        failure: &Failure,
    ) -> Result<Option<Flow<P::Reply>>, RunError> {
        let attempt = &failure.attempt;
        match next {
            RunStep::RotateProfile(wait_ms) => {
                let wait_ms = self.runner.within_deadline(self.options, wait_ms);
                if wait_ms > 0 {
                    self.runner.clock.sleep(wait_ms).await;
                }
                Ok(None)
            }
            RunStep::Candidate(to) => {
                self.runner.roll_back(&mut self.written)?;
                let to = to as usize;
                let next_model = self.plan.chain[to].clone();
                self.record_step(
                    &attempt.model,
                    Some(next_model),
                    attempt,
                    self.position,
                    "next_fallback",
                );
                Ok(Some(Flow::MoveTo(to)))
            }
            RunStep::Stop(StopReason::Exhausted) => Ok(Some(Flow::Exhausted)),
            RunStep::Stop(reason) => {
                let error = RunError::Stopped {
                    reason,
                    attempt: Box::new(attempt.clone()),
                    attempts: std::mem::take(&mut self.attempts),
                };
                Ok(Some(self.ended(error)))
            }
        }
    }

    /// Records a skipped candidate and the step to the next one.
    fn skip(&mut self, reason: RecordedReason, summary: String) -> Flow<P::Reply> {
        let model = self.plan.chain[self.position].clone();
        let attempt = Attempt {
            provider: canonical_provider(split_model(&model).0).to_owned(),
            model: model.clone(),
            profile: None,
            reason,
            detail: None,
            status: None,
            code: None,
            summary,
        };
        self.observer.skipped(&attempt);
        if let Some(next) = self.plan.chain.get(self.position + 1).cloned() {
            self.record_step(&model, Some(next), &attempt, self.position, "next_fallback");
        }
        self.attempts.push(attempt);
        Flow::MoveTo(self.position + 1)
    }

    /// Records a fallback step (F-10.2): logged, observed, kept.
    fn record_step(
        &mut self,
        from: &str,
        to: Option<String>,
        failure: &Attempt,
        position: usize,
        outcome: &'static str,
    ) {
        let step = FallbackStep {
            from_model: from.to_owned(),
            to_model: to,
            from_failure_reason: failure.reason,
            from_failure_detail: failure.detail,
            chain_position: u32::try_from(position + 1).unwrap_or(u32::MAX),
            final_outcome: outcome,
        };
        events::emit(&step);
        self.observer.step(&step);
        self.steps.push(step);
    }

    /// A served answer: its success recorded — bookkeeping whose failure is
    /// logged and counted, never losing the answer — the fallback override
    /// kept (F-9.4), the serving profile pinned on the session.
    fn succeed(
        &mut self,
        target: Target,
        reply: P::Reply,
        source: SelectionSource,
    ) -> RunOutcome<P::Reply> {
        let runner = self.runner;
        let now = runner.clock.now_ms();
        if let Err(error) = runner.record_success(self.policy, &target, now) {
            runner.bookkeeping_failed(&target, &error);
        }
        // The fallback override stays (F-9.4): nothing to roll back.
        self.written = None;
        if self.position > 0 {
            if let Some(first) = self.attempts.first().cloned() {
                self.record_step(
                    &first.model,
                    Some(target.model.clone()),
                    &first,
                    0,
                    "succeeded",
                );
            }
        }
        if let Some(id) = &self.options.session {
            if let Err(error) = runner.pin_served(id, &target) {
                runner.bookkeeping_failed(&target, &error);
            }
        }
        RunOutcome {
            reply,
            model: target.model,
            provider: target.provider,
            profile: target.profile,
            source,
            attempts: std::mem::take(&mut self.attempts),
            steps: std::mem::take(&mut self.steps),
        }
    }

    /// The chain is spent: wait on the soonest `Retry-After` once if it is
    /// within the cap and the deadline (F-6.8a, F-6.8), then summarise.
    async fn exhausted(&mut self) -> Result<RunOutcome<P::Reply>, RunError> {
        self.runner.roll_back(&mut self.written)?;
        if let Some(wait) = self.retry_wait.take() {
            if self.may_wait(&wait) {
                if let Some(outcome) = self.wait_and_retry(wait).await? {
                    return Ok(outcome);
                }
            }
        }
        Err(self.summary()?.into())
    }

    fn may_wait(&self, wait: &RetryWait) -> bool {
        let delay = wait
            .ready_at
            .saturating_sub(self.runner.clock.now_ms());
        let fits = self
            .options
            .deadline_ms
            .is_none_or(|deadline| wait.ready_at < deadline);
        self.runner.retry_wait_cap_ms > 0 && delay <= self.runner.retry_wait_cap_ms && fits
    }

    /// Waits for `wait`'s target to be ready and tries it once more.
    async fn wait_and_retry(
        &mut self,
        wait: RetryWait,
    ) -> Result<Option<RunOutcome<P::Reply>>, RunError> {
        let delay = wait
            .ready_at
            .saturating_sub(self.runner.clock.now_ms());
        tracing::info!(
            model = %wait.target.model,
            profile = %wait.target.profile,
            wait_ms = delay,
            "nothing else to try: waiting on the provider's Retry-After"
        );
        self.runner.clock.sleep(delay).await;
        if let (true, Some(id)) = (wait.position > 0, &self.options.session) {
            let reason = self.attempts.last().map(|a| a.reason);
            self.written = self.runner.persist_fallback(
                id,
                &wait.target.model,
                &self.plan.chain[0],
                reason,
            )?;
        }
        self.position = wait.position;
        match self.attempt(&wait.target).await? {
            Ok(reply) => {
                let source = self.plan.source;
                Ok(Some(self.succeed(wait.target, reply, source)))
            }
            Err(_) => {
                self.runner.roll_back(&mut self.written)?;
                Ok(None)
            }
        }
    }

    /// What people are told about a spent chain (F-10.3, F-10.4), with the
    /// last step.
    fn summary(&mut self) -> Result<FallbackSummaryError, RunError> {
        let now = self.runner.clock.now_ms();
        let summary = self.policy.summarise(&SummaryRequest {
            attempts: self
                .attempts
                .iter()
                .map(|a| AttemptRecord {
                    model: a.model.clone(),
                    provider: a.provider.clone(),
                    reason: a.reason,
                })
                .collect(),
            profiles: self.runner.stored()?,
            now_ms: now,
        })?;
        if let Some(last) = self.attempts.last().cloned() {
            let chain = &self.plan.chain;
            let position = chain.iter().position(|m| *m == last.model).unwrap_or(0);
            self.record_step(&last.model, None, &last, position, "chain_exhausted");
        }
        Ok(FallbackSummaryError {
            attempts: std::mem::take(&mut self.attempts),
            summary,
            steps: std::mem::take(&mut self.steps),
            now_ms: now,
        })
    }

    /// Ends the run with `error`, its session write rolled back.
    fn ended(&mut self, error: RunError) -> Flow<P::Reply> {
        Flow::Ended(match self.runner.roll_back(&mut self.written) {
            Ok(()) => error,
            Err(rollback) => rollback,
        })
    }

    /// `error`, after rolling back whatever the run wrote (a policy or
    /// state error mid-run must not leave a fallback override behind).
    fn end(&mut self, error: RunError) -> RunError {
        if let Err(rollback) = self.runner.roll_back(&mut self.written) {
            tracing::error!(%rollback, "cannot roll back the session after a failed run");
        }
        error
    }
}

/// Why each blocked profile is blocked: the reason of its later window.
fn blocks_of(stored: &[StoredProfile], ranked: &[crate::auth::RankedProfile]) -> Vec<ProfileBlock> {
    ranked
        .iter()
        .filter_map(|r| {
            let until = r.blocked_until?;
            let usage = &stored.iter().find(|p| p.id == r.id)?.usage;
            let reason = if usage.disabled_until == Some(until) {
                usage.disabled_reason
            } else {
                usage.cooldown_reason
            }
            .unwrap_or(RecordedReason::Unknown);
            Some(ProfileBlock {
                profile: r.id.clone(),
                reason,
                until,
            })
        })
        .collect()
}
