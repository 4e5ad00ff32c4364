//! The runner's bookkeeping around calls: calling a target and recording
//! how it went — failures classified and recorded against the profile,
//! successes recorded (coalesced when they only move `lastUsed`), stored
//! profiles read with this process's unwritten uses — and what a failed
//! call tells the run; and the end of a reply served before it ended.

use failover_policy::Detail;
use failover_policy::ProviderError;
use failover_policy::{Decider, Success};

use crate::auth::{CooldownConfig, FailureEvent, RecordedReason, Usage};

use super::super::model::AttemptEnd;
use super::super::observer::RunObserver;
use super::super::options::RunOptions;
use super::super::outcome::{Attempt, RunError};
use super::super::provider::{CallError, Provider, Target};
use super::super::reply_end::{BrokenReply, ReplyEnd, Unfinished};
use super::super::shared::{Runner, LAST_USED_WRITE_INTERVAL_MS};
use crate::time::Clock;

/// A failed call, classified and recorded.
pub(in crate::runner) struct Failure {
    pub(in crate::runner) attempt: Attempt,
    pub(in crate::runner) aborted: bool,
    pub(in crate::runner) live_switch_to: Option<String>,
    /// The provider's wait, when the failure is one worth waiting on.
    pub(in crate::runner) retry_after_ms: Option<u64>,
    /// The attempt ran to its deadline with nothing received.
    pub(in crate::runner) hung: bool,
}

impl<P: Provider, C: Clock> Runner<P, C> {
    /// Calls one target; a failure is classified, recorded on the profile
    /// (unless it was a plain abort) and returned.
    pub(in crate::runner) async fn call_once(
        &self,
        policy: &dyn Decider,
        target: &Target,
        request: &P::Request,
        cooldowns: &CooldownConfig,
    ) -> Result<Result<P::Reply, Failure>, RunError> {
        let failure = match self.provider.call(target, request).await {
            Ok(reply) => {
                let now = self.clock.now_ms();
                self.health
                    .attempt_ended(policy, &target.model, AttemptEnd::Answered, now)?;
                return Ok(Ok(reply));
            }
            Err(failure) => failure,
        };
        let now = self.clock.now_ms();
        let hung = matches!(failure, CallError::Hung(_));
        let answered_or_hung = matches!(failure, CallError::Failed(_) | CallError::Hung(_));
        let (error, aborted, live_switch_to) = match failure {
            CallError::Failed(error) | CallError::Hung(error) => (*error, false, None),
            CallError::Aborted(error) => (*error, true, None),
            CallError::LiveSwitch { model } => (
                ProviderError::message(format!("live session model switch to {model}")),
                false,
                Some(model),
            ),
        };
        let verdict =
            policy.classify(&error.clone().with_provider(target.provider.clone()), now)?;
        let reason = if live_switch_to.is_some() {
            RecordedReason::Unknown
        } else {
            RecordedReason::from(verdict.reason)
        };
        if answered_or_hung {
            // F-12.3: an answer, even a fast error, is not a hang; an
            // untyped server failure counts against the model (F-12.7).
            let end = match (hung, reason) {
                (true, _) => AttemptEnd::Hung,
                (false, RecordedReason::ServerError) => AttemptEnd::ServerError,
                (false, _) => AttemptEnd::Answered,
            };
            self.health.attempt_ended(policy, &target.model, end, now)?;
        }
        if !aborted || reason == RecordedReason::Timeout {
            self.record_failure(
                policy,
                target,
                reason,
                verdict.retry_after_ms,
                now,
                cooldowns,
            )?;
        }
        let waitable = matches!(
            reason,
            RecordedReason::RateLimit | RecordedReason::Overloaded
        );
        Ok(Err(Failure {
            attempt: failed_attempt(target, reason, verdict.detail, &error),
            aborted,
            live_switch_to,
            retry_after_ms: verdict.retry_after_ms.filter(|_| waitable && !aborted),
            hung,
        }))
    }

    /// `wait_ms`, cut so that it ends by the run's deadline.
    pub(in crate::runner) fn within_deadline(&self, options: &RunOptions, wait_ms: u64) -> u64 {
        match options.deadline_ms {
            Some(deadline) => wait_ms.min(deadline.saturating_sub(self.clock.now_ms())),
            None => wait_ms,
        }
    }

    /// Records a success (F-6.9): written at once when it changes routing
    /// state, coalesced when it only moves `lastUsed`. `seen` is the
    /// profile's state as the run read it before the call: whether the
    /// success changes more than `lastUsed` is judged on it, which saves a
    /// read per request (a round trip with Redis). A change another
    /// process made during the call is then ordered before this success
    /// only when the success writes anyway — as if the success had
    /// happened first, which the overlap allows.
    pub(in crate::runner) fn record_success(
        &self,
        policy: &dyn Decider,
        target: &Target,
        now: u64,
        seen: Option<&Usage>,
        cooldowns: &CooldownConfig,
    ) -> Result<(), RunError> {
        let current = match seen {
            Some(usage) => usage.clone(),
            None => self
                .store
                .usage()?
                .get(&target.profile)
                .cloned()
                .unwrap_or_default(),
        };
        let success = Success {
            provider: &target.provider,
            model: Some(&target.model),
            now_ms: now,
        };
        let after = policy.record_success(&current, &success, cooldowns)?;
        let only_last_used = Usage {
            last_used: current.last_used,
            ..after.clone()
        } == current;
        // A stored time ahead of this clock (another host's) is recent.
        let written_lately = current
            .last_used
            .is_some_and(|at| now.saturating_sub(at) < LAST_USED_WRITE_INTERVAL_MS);
        // Claimed only when the stored time is old: of the successes that
        // read it before the first write landed, one writes.
        if only_last_used && (written_lately || !self.claim_last_used_write(&target.profile, now)) {
            self.recent_use
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(target.profile.clone(), now);
            return Ok(());
        }
        self.store.update_profile_usage(&target.profile, |before| {
            // The policy is pure: on the state it was just asked about, its
            // answer is the one it gave. (In replay every success writes;
            // this saves each request a second call.)
            if *before == current {
                return Ok(after.clone());
            }
            policy.record_success(before, &success, cooldowns)
        })?;
        Ok(())
    }

    /// Whether this success is the one to write `profile`'s `lastUsed`:
    /// no other success of this process set out to within the interval.
    fn claim_last_used_write(&self, profile: &str, now: u64) -> bool {
        let mut claims = self
            .last_used_claims
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        // A claim ahead of the clock (set back since) is forgotten: it
        // would hold the writes off for as long as the clock went back.
        let claimed = |at: u64| at <= now && now - at < LAST_USED_WRITE_INTERVAL_MS;
        if claims.get(profile).is_some_and(|at| claimed(*at)) {
            return false;
        }
        claims.insert(profile.to_owned(), now);
        true
    }

    pub(in crate::runner) fn record_failure(
        &self,
        policy: &dyn Decider,
        target: &Target,
        reason: RecordedReason,
        retry_after_ms: Option<u64>,
        now: u64,
        cooldowns: &CooldownConfig,
    ) -> Result<Usage, RunError> {
        let event = FailureEvent {
            provider: target.provider.clone(),
            reason,
            model: Some(target.model.clone()),
            retry_after_ms,
            reset_at_ms: None,
            now_ms: now,
        };
        Ok(self.store.update_profile_usage(&target.profile, |before| {
            policy.record_failure(before, &event, cooldowns)
        })?)
    }

    /// Logs and counts a failure of the bookkeeping after a served answer.
    pub(in crate::runner) fn bookkeeping_failed(&self, target: &Target, error: &RunError) {
        match error {
            RunError::Policy(_) => self.counters.policy_error_after_success(),
            _ => self.counters.state_error_after_success(),
        }
        tracing::error!(
            model = %target.model,
            profile = %target.profile,
            %error,
            "the answer was served, but recording its success failed"
        );
    }

    /// Records how `unfinished` ended, and tells `observer` the call's end:
    /// a complete reply is the attempt's success (F-6.9; bookkeeping that
    /// fails is logged and counted, as after a whole reply), a broken one
    /// its failure, recorded against the profile as any failure is (a cut
    /// or stalled stream is a timeout, which by F-6.1 leaves the profile's
    /// state as it is). Returns the failure's record for a broken reply.
    pub fn finish_reply(
        &self,
        policy: &dyn Decider,
        observer: &dyn RunObserver,
        unfinished: &Unfinished,
        end: ReplyEnd<'_>,
    ) -> Result<Option<BrokenReply>, RunError> {
        let target = &unfinished.target;
        let error = match end {
            ReplyEnd::Stopped => return Ok(None),
            ReplyEnd::Complete => {
                observer.reply_ended(target, unfinished.started_at, unfinished.answered_ms, None);
                let now = self.clock.now_ms();
                let cooldowns = self.config.cooldown_config();
                // State read before a long stream is stale: read it again.
                let fresh = now.saturating_sub(unfinished.started_at) < LAST_USED_WRITE_INTERVAL_MS;
                let seen = unfinished.seen.as_ref().filter(|_| fresh);
                if let Err(error) = self.record_success(policy, target, now, seen, &cooldowns) {
                    self.bookkeeping_failed(target, &error);
                }
                return Ok(None);
            }
            ReplyEnd::Broken(error) => error,
        };
        self.counters.stream_broken();
        let now = self.clock.now_ms();
        let error = error.clone().with_provider(target.provider.clone());
        let verdict = policy.classify(&error, now)?;
        let reason = RecordedReason::from(verdict.reason);
        let attempt = failed_attempt(target, reason, verdict.detail, &error);
        let (at, answered) = (unfinished.started_at, unfinished.answered_ms);
        observer.reply_ended(target, at, answered, Some(&attempt));
        let cooldowns = self.config.cooldown_config();
        let retry_after = verdict.retry_after_ms;
        let usage = self.record_failure(policy, target, reason, retry_after, now, &cooldowns)?;
        Ok(Some(BrokenReply { reason, usage }))
    }
}

/// The record of `target`'s call that failed with `error`, classified as
/// `reason`.
pub(in crate::runner) fn failed_attempt(
    target: &Target,
    reason: RecordedReason,
    detail: Option<Detail>,
    error: &ProviderError,
) -> Attempt {
    Attempt {
        model: target.model.clone(),
        provider: target.provider.clone(),
        profile: Some(target.profile.clone()),
        reason,
        detail,
        status: error.status,
        code: error.code.clone(),
        summary: summarize_error(error),
    }
}

/// A short summary of a provider error for people: status, code and the
/// first line of the message, bounded. Provider messages do not carry our
/// keys (they are never sent in error bodies by this host).
fn summarize_error(error: &ProviderError) -> String {
    const MAX: usize = 200;
    let mut parts = Vec::new();
    if let Some(status) = error.status {
        parts.push(format!("HTTP {status}"));
    }
    if let Some(code) = &error.code {
        parts.push(code.clone());
    }
    let first_line = error.message.lines().next().unwrap_or_default().trim();
    if !first_line.is_empty() {
        let mut end = first_line.len().min(MAX);
        while !first_line.is_char_boundary(end) {
            end -= 1;
        }
        parts.push(first_line[..end].to_owned());
    }
    if parts.is_empty() {
        "no details".into()
    } else {
        parts.join(": ")
    }
}
