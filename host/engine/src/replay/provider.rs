//! The provider of a replay: answers each call from the recording.
//!
//! A call is answered, in this order, by
//! 1. **recorded** — the next unused outcome of the same request for the
//!    same provider, model and profile (what the original run saw);
//! 2. **covered** — otherwise the outcome of that provider, model and
//!    profile recorded nearest in time, within `COVER_WINDOW_MS` (a
//!    policy that calls something the original run did not still gets
//!    what that endpoint was doing then);
//! 3. **unrecorded** — otherwise as `--unrecorded` says: a success, or a
//!    failure that names the missing call.
//!
//! The virtual clock moves by the recorded latency of each answer.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;

use crate::runner::{CallError, Provider, Target};

use crate::time::VirtualClock;
use failover_policy::ProviderError;

use super::state_feed::StateFeed;
use super::trace::{BrokenEvent, OutcomeEvent};

/// How far from a call a recorded outcome of the same target still
/// answers it: rate limits and overloads last about this long.
pub(crate) const COVER_WINDOW_MS: u64 = 60_000;

/// What an unrecorded call gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Unrecorded {
    /// A failure ("no recorded outcome …"), which the policy classifies.
    #[default]
    Error,
    /// A success.
    Success,
}

/// How a call was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Answered {
    /// By the next unused outcome the request recorded for that target.
    Recorded,
    /// By the outcome of that target recorded nearest in time, within
    /// `COVER_WINDOW_MS`.
    Covered,
    /// By neither: as [`Unrecorded`] says.
    Unrecorded,
}

impl Answered {
    /// The name in a decision's JSON line (as serde names it).
    pub fn name(self) -> &'static str {
        match self {
            Answered::Recorded => "recorded",
            Answered::Covered => "covered",
            Answered::Unrecorded => "unrecorded",
        }
    }
}

/// How the last call was answered: when it started, and by what.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LastCall {
    /// When it started, on the replay's clock (ms since the epoch).
    pub at: u64,
    /// How it was answered.
    pub answered: Answered,
}

/// A recorded target: provider, model, profile, borrowed from the trace.
type TargetKey<'t> = (&'t str, &'t str, &'t str);

/// Answers calls from a recording it borrows: a replay reads the trace's
/// outcomes in place instead of copying them (copying and dropping the
/// whole recording was a third of a replay's own time).
pub(crate) struct ReplayProvider<'t> {
    outcomes: &'t [OutcomeEvent],
    /// Outcome indexes per request, in trace order.
    by_request: FxHashMap<u64, Vec<usize>>,
    /// Outcome indexes per (provider, model, profile), by time.
    by_target: FxHashMap<TargetKey<'t>, Vec<usize>>,
    /// Per outcome, whether a call used it as its recorded answer.
    used: Mutex<Vec<bool>>,
    clock: VirtualClock,
    unrecorded: Unrecorded,
    /// The last call, and how many calls nothing recorded answered.
    log: Mutex<CallLog>,
    /// Changes other processes made, applied as the clock reaches them.
    feed: Option<Arc<StateFeed>>,
    /// Per recorded request, what each candidate's shape cannot express,
    /// as the gateway decided live: `(shape-only features, endpoints)`.
    shapes: Option<Shapes>,
    /// The served streams that broke, by request and target.
    broken: FxHashMap<(u64, TargetKey<'t>), &'t BrokenEvent>,
}

/// What the replay asks of the calls made so far.
#[derive(Default)]
struct CallLog {
    last: Option<LastCall>,
    unrecorded: usize,
}

/// What replay needs to pass over the candidates the live run passed over
/// for what they cannot express.
pub(crate) struct Shapes {
    /// Per request id: its OpenAI-only and Anthropic-only features.
    pub requests: HashMap<u64, (Vec<String>, Vec<String>)>,
    /// The recorded config, for each provider's API.
    pub config: Arc<crate::config::Config>,
}

impl<'t> ReplayProvider<'t> {
    pub fn new(outcomes: &'t [OutcomeEvent], clock: VirtualClock, unrecorded: Unrecorded) -> Self {
        let mut by_request: FxHashMap<u64, Vec<usize>> = FxHashMap::default();
        let mut by_target: FxHashMap<TargetKey<'t>, Vec<usize>> = FxHashMap::default();
        for (index, o) in outcomes.iter().enumerate() {
            by_request.entry(o.request).or_default().push(index);
            by_target
                .entry((&o.provider, &o.model, &o.profile))
                .or_default()
                .push(index);
        }
        for indexes in by_target.values_mut() {
            indexes.sort_by_key(|&i| (outcomes[i].at, i));
        }
        ReplayProvider {
            by_request,
            by_target,
            outcomes,
            used: Mutex::new(vec![false; outcomes.len()]),
            clock,
            unrecorded,
            log: Mutex::new(CallLog::default()),
            feed: None,
            shapes: None,
            broken: FxHashMap::default(),
        }
    }

    /// The same provider, breaking the streams `broken` says broke after
    /// the call that served them answered.
    pub(crate) fn with_broken(mut self, broken: &'t [BrokenEvent]) -> Self {
        self.broken = (broken.iter())
            .map(|b| ((b.request, (&*b.provider, &*b.model, &*b.profile)), b))
            .collect();
        self
    }

    /// The same provider, passing over candidates as `shapes` says.
    pub(crate) fn with_shapes(mut self, shapes: Shapes) -> Self {
        self.shapes = Some(shapes);
        self
    }

    /// The same provider, applying `feed`'s changes after each call as the
    /// recorded latency moves the clock past them (F-12.4).
    pub(crate) fn with_feed(mut self, feed: Arc<StateFeed>) -> Self {
        self.feed = Some(feed);
        self
    }

    /// The last call so far, if any.
    pub(crate) fn last_call(&self) -> Option<LastCall> {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).last
    }

    /// How many calls so far nothing recorded answered.
    pub(crate) fn unrecorded_calls(&self) -> usize {
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .unrecorded
    }

    /// How the stream `outcome` served broke, if it did.
    fn broken_after(&self, outcome: &OutcomeEvent) -> Option<&'t BrokenEvent> {
        let target = (&*outcome.provider, &*outcome.model, &*outcome.profile);
        self.broken.get(&(outcome.request, target)).copied()
    }

    fn same_target(outcome: &OutcomeEvent, target: &Target) -> bool {
        outcome.provider == target.provider
            && outcome.model == target.model
            && outcome.profile == target.profile
    }

    fn find(&self, request: u64, target: &Target, now: u64) -> Option<(usize, Answered)> {
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        let recorded = self.by_request.get(&request).and_then(|indexes| {
            indexes
                .iter()
                .copied()
                .find(|&i| !used[i] && Self::same_target(&self.outcomes[i], target))
        });
        if let Some(index) = recorded {
            used[index] = true;
            return Some((index, Answered::Recorded));
        }
        let key = (
            target.provider.as_str(),
            target.model.as_str(),
            target.profile.as_str(),
        );
        let indexes = self.by_target.get(&key)?;
        // The outcomes around `now`: the last one at or before it, the first after.
        let split = indexes.partition_point(|&i| self.outcomes[i].at <= now);
        let before = split.checked_sub(1).map(|k| indexes[k]);
        let after = indexes.get(split).copied();
        [before, after]
            .into_iter()
            .flatten()
            .filter(|&i| self.outcomes[i].at.abs_diff(now) <= COVER_WINDOW_MS)
            .min_by_key(|&i| (self.outcomes[i].at.abs_diff(now), self.outcomes[i].at))
            .map(|index| (index, Answered::Covered))
    }
}

impl<'t> Provider for ReplayProvider<'t> {
    /// The id of the recorded request being replayed.
    type Request = u64;
    /// How the served stream broke later, if the recording says it did.
    type Reply = Option<&'t BrokenEvent>;

    fn completes_later(&self, reply: &Self::Reply) -> bool {
        reply.is_some()
    }

    fn cannot_express(&self, model: &str, request: &u64) -> Option<String> {
        let shapes = self.shapes.as_ref()?;
        let (openai_only, anthropic_only) = shapes.requests.get(request)?;
        let provider = crate::names::canonical_provider(crate::names::split_model(model).0);
        let api = shapes.config.api_of(provider)?;
        crate::model::unexpressible(api, openai_only, anthropic_only)
    }

    async fn call(&self, target: &Target, request: &u64) -> Result<Self::Reply, CallError> {
        use crate::time::Clock;
        let now = self.clock.now_ms();
        let found = self.find(*request, target, now);
        let (result, answered) = match found {
            Some((index, answered)) => {
                let outcome = &self.outcomes[index];
                self.clock.advance(outcome.latency_ms);
                // A break belongs to the call recorded for it, not to a
                // call another request's outcome stands in for.
                let broken = self
                    .broken_after(outcome)
                    .filter(|_| answered == Answered::Recorded);
                let result = match outcome.failure() {
                    None => Ok(broken),
                    Some(Ok(error)) if outcome.hung => Err(CallError::Hung(Box::new(error))),
                    Some(Ok(error)) => Err(CallError::Failed(Box::new(error))),
                    // Checked when the trace was read.
                    Some(Err(e)) => Err(CallError::Failed(Box::new(ProviderError::message(
                        e.to_string(),
                    )))),
                };
                (result, answered)
            }
            None => {
                let result = match self.unrecorded {
                    Unrecorded::Success => Ok(None),
                    Unrecorded::Error => Err(CallError::Failed(Box::new(
                        ProviderError::message(format!(
                            "replay: no recorded outcome for {} via {}",
                            target.model, target.profile
                        ))
                        .with_provider(target.provider.clone()),
                    ))),
                };
                (result, Answered::Unrecorded)
            }
        };
        if let Some(feed) = &self.feed {
            // A change that cannot be applied stays pending; the replay
            // reports it at the next request.
            let _ = feed.catch_up(self.clock.now_ms());
        }
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        log.last = Some(LastCall { at: now, answered });
        if answered == Answered::Unrecorded {
            log.unrecorded += 1;
        }
        result
    }
}
