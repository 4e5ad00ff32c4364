//! Served streams that end after their request's run (F-12.12), replayed
//! when the clock reaches the end the recording gives: a break is recorded
//! as the attempt's failure then — not before the requests that arrived
//! while the stream was still flowing — and a stream this side stopped (the
//! client left, a size bound) as nothing at all, as the live gateway did.

use failover_policy::Decider;
use failover_policy::ProviderError;

use crate::runner::{ReplyEnd, RunOutcome, Runner, Unfinished, Unobserved};

use crate::time::{Clock, VirtualClock};

use super::decision::Decision;
use super::provider::ReplayProvider;
use super::result::ReplayError;
use super::trace::BrokenEvent;

/// What a replayed call answers: the early end of the stream it served, if
/// the recording has one.
pub(super) type Replayed<'t> = Option<&'t BrokenEvent>;

/// A served stream whose recorded end is still ahead.
struct PendingEnd<'t> {
    request: u64,
    unfinished: Box<Unfinished>,
    end: &'t BrokenEvent,
}

/// The served streams whose ends are still ahead, soonest first.
#[derive(Default)]
pub(super) struct PendingEnds<'t>(Vec<PendingEnd<'t>>);

impl<'t> PendingEnds<'t> {
    /// Keeps the end of request `request`'s served stream, if the
    /// recording says it ended early.
    pub(super) fn keep(&mut self, request: u64, outcome: &mut RunOutcome<Replayed<'t>>) {
        let (Some(end), Some(unfinished)) = (outcome.reply, outcome.unfinished.take()) else {
            return;
        };
        let at = self.0.partition_point(|p| p.end.at <= end.at);
        self.0.insert(
            at,
            PendingEnd {
                request,
                unfinished,
                end,
            },
        );
    }

    /// Carries out the ends recorded at or before `until` (all of them
    /// with `None`), the clock moved to each (never back); the decisions
    /// they make.
    pub(super) fn reach(
        &mut self,
        until: Option<u64>,
        runner: &Runner<ReplayProvider<'t>, VirtualClock>,
        clock: &VirtualClock,
    ) -> Result<Vec<Decision>, ReplayError> {
        let due = self
            .0
            .partition_point(|p| until.is_none_or(|until| p.end.at <= until));
        let policy = runner.policy();
        let mut decisions = Vec::new();
        for pending in self.0.drain(..due) {
            let now = clock.now_ms();
            if pending.end.at > now {
                clock.advance(pending.end.at - now);
            }
            let at = clock.now_ms();
            decisions.extend(carry_out(runner, policy.as_ref(), pending, at)?);
        }
        Ok(decisions)
    }
}

/// One recorded end, recorded as the live gateway recorded it.
fn carry_out(
    runner: &Runner<ReplayProvider<'_>, VirtualClock>,
    policy: &dyn Decider,
    pending: PendingEnd<'_>,
    at: u64,
) -> Result<Option<Decision>, ReplayError> {
    // Checked when the trace was read.
    let error = (pending.end.failure())
        .map(|read| read.unwrap_or_else(|e| ProviderError::message(e.to_string())));
    let end = match &error {
        Some(error) => ReplyEnd::Broken(error),
        None => ReplyEnd::Stopped,
    };
    let recorded = runner
        .finish_reply(policy, &Unobserved, &pending.unfinished, end)
        .map_err(|cause| ReplayError::Run {
            request: pending.request,
            cause,
        })?;
    let target = &pending.unfinished.target;
    Ok(recorded.map(|broken| Decision::Broken {
        request: pending.request,
        at,
        model: target.model.clone(),
        profile: target.profile.clone(),
        reason: broken.reason.as_str().into(),
    }))
}
