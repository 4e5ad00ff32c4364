//! How a run ends: a served answer recorded, or a spent chain — after one
//! wait on the soonest `Retry-After` — summarised; and the rollback every
//! early end does first.

use super::*;

impl<P: Provider, C: Clock> Run<'_, P, C> {
    /// A served answer: its success recorded — bookkeeping whose failure is
    /// logged and counted, never losing the answer; for a reply still
    /// arriving, when it ends — the fallback override kept (F-9.4), the
    /// serving profile pinned on the session.
    pub(super) fn succeed(
        &mut self,
        target: Target,
        reply: P::Reply,
        source: SelectionSource,
    ) -> RunOutcome<P::Reply> {
        let runner = self.runner;
        let now = runner.clock.now_ms();
        // The state read before the call, unless this run has since
        // recorded a failure of the same profile (a retry after a wait):
        // then the store's, which holds that failure. A profile never
        // stored has the default state.
        let failed_here = self
            .attempts
            .iter()
            .any(|a| a.profile.as_deref() == Some(target.profile.as_str()));
        let seen = (!failed_here).then(|| {
            self.seen_usage
                .get(&target.profile)
                .cloned()
                .unwrap_or_default()
        });
        // A reply still arriving succeeds only when it ends (F-12.12).
        let unfinished = runner.provider.completes_later(&reply).then(|| {
            Box::new(Unfinished {
                target: target.clone(),
                seen: seen.clone(),
                started_at: self.reply_started_at,
                answered_ms: now.saturating_sub(self.reply_started_at),
                later: self.later_candidates(),
            })
        });
        if unfinished.is_none() {
            let seen = seen.as_ref();
            if let Err(error) =
                runner.record_success(self.policy, &target, now, seen, &self.cooldowns)
            {
                runner.bookkeeping_failed(&target, &error);
            }
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
            unfinished,
        }
    }

    /// The chain is spent: wait on the soonest `Retry-After` once if it is
    /// within the cap and the deadline (F-6.8a, F-6.8), then summarise.
    pub(super) async fn exhausted(&mut self) -> Result<RunOutcome<P::Reply>, RunError> {
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

    pub(super) fn may_wait(&self, wait: &RetryWait) -> bool {
        let delay = wait.ready_at.saturating_sub(self.runner.clock.now_ms());
        let fits = self
            .options
            .deadline_ms
            .is_none_or(|deadline| wait.ready_at < deadline);
        self.runner.retry_wait_cap_ms > 0 && delay <= self.runner.retry_wait_cap_ms && fits
    }

    /// Waits for `wait`'s target to be ready and tries it once more.
    pub(super) async fn wait_and_retry(
        &mut self,
        wait: RetryWait,
    ) -> Result<Option<RunOutcome<P::Reply>>, RunError> {
        let delay = wait.ready_at.saturating_sub(self.runner.clock.now_ms());
        tracing::info!(
            model = %wait.target.model,
            profile = %wait.target.profile,
            wait_ms = delay,
            "nothing else to try: waiting on the provider's Retry-After"
        );
        self.runner.clock.sleep(delay).await;
        let write = self.failed_before(wait.position) && self.options.model.is_none();
        if let (true, Some(id)) = (write, &self.options.session) {
            let reason = self.last_failure_reason(wait.position);
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
    pub(super) fn summary(&mut self) -> Result<FallbackSummaryError, RunError> {
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
    pub(super) fn ended(&mut self, error: RunError) -> Flow<P::Reply> {
        Flow::Ended(match self.runner.roll_back(&mut self.written) {
            Ok(()) => error,
            Err(rollback) => rollback,
        })
    }

    /// `error`, after rolling back whatever the run wrote (a policy or
    /// state error mid-run must not leave a fallback override behind).
    pub(super) fn end(&mut self, error: RunError) -> RunError {
        if let Err(rollback) = self.runner.roll_back(&mut self.written) {
            tracing::error!(%rollback, "cannot roll back the session after a failed run");
        }
        error
    }
}
