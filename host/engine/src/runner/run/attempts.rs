//! A candidate's profiles, tried one call at a time, and what the run does
//! after each failure: rotate, move along the chain, or stop.

use super::*;
use crate::runner::provider::UNSUPPORTED_FEATURE;

impl<P: Provider, C: Clock> Run<'_, P, C> {
    /// Tries a candidate's profiles until one answers or the policy moves
    /// the run on.
    pub(super) async fn profiles(
        &mut self,
        profiles: Profiles,
    ) -> Result<Flow<P::Reply>, RunError> {
        // Each profile after the first is one rotation; a profile is tried
        // at most twice (once more when the policy waits and retries).
        let mut index = 0;
        let mut retried = false;
        while let Some(profile) = profiles.ids.get(index) {
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
            let mut next = self.next_step(&profiles, &failure, rotations, left, retried)?;
            if let RunStep::WaitAndRetry(wait_ms) = next {
                if !retried {
                    retried = true;
                    self.wait(wait_ms).await;
                    continue;
                }
                // Waited once: the step the policy takes without the wait.
                next = self.next_step(&profiles, &failure, rotations, left, true)?;
            }
            if let Some(flow) = self.advance(next, &failure).await? {
                return Ok(flow);
            }
            retried = false;
            index += 1;
        }
        // Every profile was tried without the policy moving on: next model.
        self.runner.roll_back(&mut self.written)?;
        Ok(self.move_on_from(self.position + 1))
    }

    /// One call of `target`, told to the observer; a failure is recorded as
    /// an attempt and noted as a `Retry-After` to wait on.
    pub(super) async fn attempt(
        &mut self,
        target: &Target,
    ) -> Result<Result<P::Reply, Failure>, RunError> {
        let at = self.runner.clock.now_ms();
        let result = self
            .runner
            .call_once(self.policy, target, self.request, &self.cooldowns)
            .await?;
        let failure = match result {
            Ok(reply) => {
                // A reply still arriving is told when it ends.
                if self.runner.provider.completes_later(&reply) {
                    self.reply_started_at = at;
                } else {
                    self.observer.call_ended(target, at, None);
                }
                return Ok(Ok(reply));
            }
            Err(failure) => failure,
        };
        self.observer.call_ended(target, at, Some(&failure.attempt));
        if let Some(after) = failure.retry_after_ms {
            let ready_at = self.runner.clock.now_ms().saturating_add(after);
            if self
                .retry_wait
                .as_ref()
                .is_none_or(|w| ready_at < w.ready_at)
            {
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

    /// The policy's next step after a failed attempt — told of no explicit
    /// wait when this profile's was `waited` out already; a failed primary
    /// probe costs nothing else and goes on with the auto override (F-12.2).
    pub(super) fn next_step(
        &self,
        profiles: &Profiles,
        failure: &Failure,
        rotations: u32,
        left: usize,
        waited: bool,
    ) -> Result<RunStep, RunError> {
        if profiles.probe_only && !failure.aborted {
            return Ok(RunStep::Candidate(1));
        }
        Ok(self.policy.next_step(
            &FailedAttempt {
                reason: failure.attempt.reason,
                retry_after_ms: failure.retry_after_ms.filter(|_| !waited),
                aborted: failure.aborted,
                hung: failure.hung,
                live_switch_to: failure.live_switch_to.clone(),
                user_pinned_profile: profiles.by_user,
                rotations,
                profiles_left: u32::try_from(left).unwrap_or(u32::MAX),
                chain: self.plan.chain.clone(),
                position: u32::try_from(self.position).unwrap_or(u32::MAX),
                overflow_to: (self.runner.config.overflow_of(&profiles.model)).map(str::to_owned),
            },
            &self.rotation,
        )?)
    }

    /// Waits `wait_ms`, at most until the run's deadline.
    async fn wait(&self, wait_ms: u64) {
        let wait_ms = self.runner.within_deadline(self.options, wait_ms);
        if wait_ms > 0 {
            self.runner.clock.sleep(wait_ms).await;
        }
    }

    /// Carries out `next`; `None` to go on with the candidate's next profile
    /// (after its wait, for a rotation or a wait-and-retry the run has no
    /// more retries for).
    pub(super) async fn advance(
        &mut self,
        next: RunStep,
        failure: &Failure,
    ) -> Result<Option<Flow<P::Reply>>, RunError> {
        let attempt = &failure.attempt;
        match next {
            RunStep::RotateProfile(wait_ms) | RunStep::WaitAndRetry(wait_ms) => {
                self.wait(wait_ms).await;
                Ok(None)
            }
            RunStep::Candidate(to) => {
                self.runner.roll_back(&mut self.written)?;
                let to = match attempt.reason {
                    RecordedReason::ContextOverflow => to as usize,
                    _ => match self.routed_from(to as usize) {
                        Some(to) => to,
                        None => return Ok(Some(Flow::Exhausted)),
                    },
                };
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
    pub(super) fn skip(&mut self, reason: RecordedReason, summary: String) -> Flow<P::Reply> {
        self.skip_with_code(reason, None, summary)
    }

    /// Passes over a candidate that cannot express the request: a
    /// `format`-class skip coded [`UNSUPPORTED_FEATURE`].
    pub(super) fn skip_unsupported(&mut self, summary: String) -> Flow<P::Reply> {
        let code = Some(UNSUPPORTED_FEATURE.to_owned());
        self.skip_with_code(RecordedReason::Format, code, summary)
    }

    pub(super) fn skip_with_code(
        &mut self,
        reason: RecordedReason,
        code: Option<String>,
        summary: String,
    ) -> Flow<P::Reply> {
        let model = self.plan.chain[self.position].clone();
        let attempt = Attempt {
            provider: canonical_provider(split_model(&model).0).to_owned(),
            model: model.clone(),
            profile: None,
            reason,
            detail: None,
            status: None,
            code,
            summary,
        };
        self.observer.skipped(&attempt);
        let next = self.routed_from(self.position + 1);
        if let Some(next) = next.map(|n| self.plan.chain[n].clone()) {
            self.record_step(&model, Some(next), &attempt, self.position, "next_fallback");
        }
        self.attempts.push(attempt);
        self.move_on_from(self.position + 1)
    }

    /// The first chain position from `from` on that a step other than a
    /// context overflow's may enter: candidates held only for overflows
    /// are passed over.
    pub(super) fn routed_from(&self, from: usize) -> Option<usize> {
        (from..self.plan.chain.len()).find(|&n| self.routed(n))
    }

    /// Whether a fallback may enter chain position `n`: it is not held only
    /// for context overflows.
    fn routed(&self, n: usize) -> bool {
        !self.plan.overflow_only.contains(&self.plan.chain[n])
    }

    /// The candidates after the current one that a fallback may enter.
    pub(super) fn later_candidates(&self) -> Vec<String> {
        (self.position + 1..self.plan.chain.len())
            .filter(|&n| self.routed(n))
            .map(|n| self.plan.chain[n].clone())
            .collect()
    }

    /// On to the first candidate from `from` on that [`Self::routed_from`]
    /// allows, or the chain is spent.
    fn move_on_from(&self, from: usize) -> Flow<P::Reply> {
        self.routed_from(from).map_or(Flow::Exhausted, Flow::MoveTo)
    }

    /// Records a fallback step (F-10.2): logged, observed, kept.
    pub(super) fn record_step(
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
}
