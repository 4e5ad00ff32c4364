//! Replies that end after their run: a stream is served at its first
//! content, and only its end says whether the attempt succeeded (F-12.12).
//! Until then nothing is recorded as a success: no `lastUsed`, no cleared
//! window, no `ok` call for the observer.

use failover_policy::Decider;
use failover_policy::ProviderError;

use crate::auth::{RecordedReason, Usage};

use super::bookkeeping::failed_attempt;
use super::clock::Clock;
use super::driver::{Runner, LAST_USED_WRITE_INTERVAL_MS};
use super::observer::RunObserver;
use super::outcome::RunError;
use super::provider::{Provider, Target};

/// A served reply still arriving: what recording its end needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Unfinished {
    /// Who is answering.
    pub target: Target,
    /// The profile's state as the run read it before the call (see
    /// [`Runner::record_success`]), or `None` to read it again.
    pub(super) seen: Option<Usage>,
    /// When the call started, on the runner's clock.
    pub started_at: u64,
    /// How long the call took to start answering (ms).
    pub answered_ms: u64,
    /// The run's candidates after the one answering that a fallback may
    /// enter, in order: where a broken reply may restart.
    pub later: Vec<String>,
}

/// How a reply that ends after its run ended.
#[derive(Debug, Clone, Copy)]
pub enum ReplyEnd<'e> {
    /// The provider's terminal event arrived: the attempt succeeded.
    Complete,
    /// The reply broke — cut, stalled, unreadable, an error event, the
    /// run's deadline passed — a failure of the attempt, classified like
    /// any other.
    Broken(&'e ProviderError),
    /// This side stopped it (the client left, a size bound): the provider
    /// neither succeeded nor failed, and nothing is recorded.
    Stopped,
}

/// What recording a broken reply did: its reason and the profile's state
/// after.
#[derive(Debug, Clone, PartialEq)]
pub struct BrokenReply {
    /// The failure's reason, as the policy classified it.
    pub reason: RecordedReason,
    /// The profile's routing state after the failure.
    pub usage: Usage,
}

impl<P: Provider, C: Clock> Runner<P, C> {
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
