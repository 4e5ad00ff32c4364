//! Runs a trace through a policy: the recorded requests, in order, through
//! the real runner with a virtual clock and the [`ReplayProvider`]; no
//! network, no sleeping, deterministic. Produces the decision timeline and
//! the final profile and session state.
//!
//! The timeline of a request comes from a [`RunObserver`] told every call
//! as it ends — each failed call paired with its attempt, and with how the
//! recording answered it, at the moment it happens.

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};

use crate::inspect::status::state_json;
use crate::runner::{Attempt, FallbackStep, RunError, RunObserver, RunOutcome, Runner, Target};
use crate::state::{AuthStore, SessionStore};
use crate::time::{Clock, VirtualClock};
use failover_policy::Decider;

use super::decision::Decision;
use super::provider::{Answered, ReplayProvider, Shapes};
use super::result::{Replay, ReplayError, ReplayOptions};
use super::setup::{
    error_kind, options_for, read_horizons, recorded_config, seed_state, settings_of,
};
use super::state_feed::StateFeed;
use super::stream_ends::{PendingEnds, Replayed};
use super::trace::{Header, RequestEvent, Trace};

/// The replay's runner, answering from a trace it borrows.
type ReplayRunner<'t> = Runner<ReplayProvider<'t>, VirtualClock>;

/// Replays `trace` through `policy`; `progress` is told after each request.
pub fn replay(
    trace: &Trace,
    trace_path: &Path,
    policy: Arc<dyn Decider>,
    options: &ReplayOptions,
    mut progress: impl FnMut(usize, usize),
) -> Result<Replay, ReplayError> {
    let header = &trace.header;
    let config = recorded_config(header, trace_path)?;
    let (retry_wait_cap_ms, run_timeout_ms) = settings_of(header, options);
    let (store, sessions) = seed_state(header)?;
    let clock = VirtualClock::at(header.clock_start);
    let feed = Arc::new(StateFeed::new(
        trace.states.clone(),
        store.clone(),
        sessions.clone(),
    ));
    let shapes = Shapes {
        requests: trace
            .requests
            .iter()
            .filter(|r| !r.openai_only.is_empty() || !r.anthropic_only.is_empty())
            .map(|r| (r.id, (r.openai_only.clone(), r.anthropic_only.clone())))
            .collect(),
        config: Arc::new(config.clone()),
    };
    let provider = ReplayProvider::new(&trace.outcomes, clock.clone(), options.unrecorded)
        .with_broken(&trace.broken)
        .with_feed(feed.clone())
        .with_shapes(shapes);
    let runner = Runner::new(
        policy,
        config,
        store.clone(),
        sessions.clone(),
        provider,
        clock.clone(),
    )
    .with_retry_wait_cap(retry_wait_cap_ms);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(ReplayError::Runtime)?;
    let mut requests: Vec<&RequestEvent> = trace.requests.iter().collect();
    requests.sort_by_key(|r| (r.at, r.id));
    let horizons = read_horizons(&requests, &trace.outcomes);
    let mut decisions = Vec::new();
    let mut ends = PendingEnds::default();
    for (done, request) in requests.iter().enumerate() {
        decisions.extend(ends.reach(Some(request.at), &runner, &clock)?);
        let now = clock.now_ms();
        if request.at > now {
            clock.advance(request.at - now);
        }
        feed.catch_up(clock.now_ms().max(horizons[done]))?;
        decisions.extend(feed.take_applied().into_iter().map(Decision::from));
        let replayed = ReplayedRequest {
            runner: &runner,
            clock: &clock,
            header,
            request,
            run_timeout_ms,
        };
        decisions.extend(runtime.block_on(replayed.run(&feed, &mut ends))?);
        progress(done + 1, requests.len());
    }
    decisions.extend(ends.reach(None, &runner, &clock)?);
    finish(
        &runner,
        clock.now_ms(),
        header,
        &store,
        &sessions,
        decisions,
        trace,
    )
}

/// One recorded request, replayed.
struct ReplayedRequest<'a> {
    runner: &'a ReplayRunner<'a>,
    clock: &'a VirtualClock,
    header: &'a Header,
    request: &'a RequestEvent,
    run_timeout_ms: Option<u64>,
}

impl<'a> ReplayedRequest<'a> {
    /// Runs the request; its decisions, in the timeline's order. The end of
    /// a stream it served that the recording says ended early goes to
    /// `ends`.
    async fn run(
        &self,
        feed: &StateFeed,
        ends: &mut PendingEnds<'a>,
    ) -> Result<Vec<Decision>, ReplayError> {
        let request = self.request;
        let started = self.clock.now_ms();
        let mut decisions = vec![Decision::Request {
            request: request.id,
            at: started,
            session: request.session.clone(),
            model: request.model.clone(),
        }];
        let mut run_options = options_for(&self.header.agent, request);
        run_options.deadline_ms = self.run_timeout_ms.map(|ms| started.saturating_add(ms));
        let timeline = Timeline::new(self.runner.provider());
        let policy = self.runner.policy();
        let mut result = self
            .runner
            .run_observed(policy.as_ref(), &run_options, &request.id, &timeline)
            .await;
        // A served stream the recording says ended early: its end waits
        // for the clock.
        if let Ok(outcome) = &mut result {
            ends.keep(request.id, outcome);
        }
        let at = self.clock.now_ms();
        // Changes another process made while this request ran.
        decisions.extend(feed.take_applied().into_iter().map(Decision::from));
        decisions.extend(timeline.decisions(request.id, &result));
        match result {
            Ok(outcome) => decisions.push(served(request.id, at, outcome)),
            Err(RunError::State(source)) => {
                return Err(ReplayError::Run {
                    request: request.id,
                    cause: RunError::State(source),
                })
            }
            Err(error) => decisions.push(Decision::Failed {
                request: request.id,
                at,
                error: error_kind(&error),
                message: error.to_string(),
            }),
        }
        Ok(decisions)
    }
}

/// The served decision of a run.
fn served(request: u64, at: u64, outcome: RunOutcome<Replayed<'_>>) -> Decision {
    Decision::Served {
        request,
        at,
        model: outcome.model,
        profile: outcome.profile,
        source: serde_json::to_value(outcome.source)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
    }
}

/// A call as the timeline saw it end.
struct SeenCall {
    target: Target,
    at: u64,
    answered: Answered,
    failure: Option<Attempt>,
}

/// What one run did, as it happened.
enum Seen {
    Call(SeenCall),
    Skip(Attempt),
}

/// The observer that builds a request's timeline.
struct Timeline<'a> {
    provider: &'a ReplayProvider<'a>,
    seen: Mutex<Vec<Seen>>,
    steps: Mutex<Vec<FallbackStep>>,
}

impl<'a> Timeline<'a> {
    fn new(provider: &'a ReplayProvider<'a>) -> Self {
        Timeline {
            provider,
            seen: Mutex::new(Vec::new()),
            steps: Mutex::new(Vec::new()),
        }
    }

    /// The attempts, skips, steps and served call of a run that ended in
    /// `result`: failed attempts and skips in the order they happened, then
    /// the fallback steps, then the served call. A run that stopped or hit
    /// its deadline reports no steps; one the policy or the state failed,
    /// no attempts either.
    fn decisions(
        &self,
        request: u64,
        result: &Result<RunOutcome<Replayed<'_>>, RunError>,
    ) -> Vec<Decision> {
        let seen = std::mem::take(&mut *self.seen.lock().unwrap_or_else(|e| e.into_inner()));
        let steps = std::mem::take(&mut *self.steps.lock().unwrap_or_else(|e| e.into_inner()));
        let (attempts, steps) = match result {
            Ok(_) | Err(RunError::Exhausted(_)) => (true, steps),
            Err(RunError::Stopped { .. }) | Err(RunError::DeadlineExceeded { .. }) => {
                (true, Vec::new())
            }
            Err(_) => (false, Vec::new()),
        };
        let mut decisions = Vec::new();
        let mut served = None;
        for seen in seen {
            match seen {
                Seen::Skip(attempt) if attempts => decisions.push(Decision::Skip {
                    request,
                    model: attempt.model,
                    reason: attempt.reason.as_str().into(),
                }),
                Seen::Call(call) => match &call.failure {
                    Some(attempt) if attempts => {
                        decisions.push(attempt_decision(request, &call, attempt));
                    }
                    None => served = Some(call),
                    Some(_) => {}
                },
                Seen::Skip(_) => {}
            }
        }
        decisions.extend(steps.into_iter().map(|step| Decision::Fallback {
            request,
            from: step.from_model,
            to: step.to_model,
            reason: step.from_failure_reason.as_str().into(),
            final_outcome: step.final_outcome.into(),
        }));
        if let (Some(call), Ok(_)) = (served, result) {
            decisions.push(Decision::Attempt {
                request,
                at: call.at,
                model: call.target.model,
                profile: call.target.profile,
                outcome: "ok".into(),
                answered: call.answered,
                status: None,
            });
        }
        decisions
    }
}

fn attempt_decision(request: u64, call: &SeenCall, attempt: &Attempt) -> Decision {
    Decision::Attempt {
        request,
        at: call.at,
        model: attempt.model.clone(),
        profile: call.target.profile.clone(),
        outcome: attempt.reason.as_str().into(),
        answered: call.answered,
        status: attempt.status,
    }
}

impl RunObserver for Timeline<'_> {
    fn call_ended(&self, target: &Target, _at: u64, failure: Option<&Attempt>) {
        // The provider logged this call last; how it was answered is there.
        let call = self.provider.last_call();
        self.seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Seen::Call(SeenCall {
                target: target.clone(),
                at: call.map_or(0, |c| c.at),
                answered: call.map_or(Answered::Unrecorded, |c| c.answered),
                failure: failure.cloned(),
            }));
    }

    fn skipped(&self, attempt: &Attempt) {
        self.seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Seen::Skip(attempt.clone()));
    }

    fn step(&self, step: &FallbackStep) {
        self.steps
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(step.clone());
    }
}

/// The replay's result: the timeline, and the final profile and session
/// state.
fn finish(
    runner: &ReplayRunner,
    final_now: u64,
    header: &Header,
    store: &AuthStore,
    sessions: &SessionStore,
    decisions: Vec<Decision>,
    trace: &Trace,
) -> Result<Replay, ReplayError> {
    let unrecorded = runner.provider().unrecorded_calls();
    let profiles = store
        .usage()?
        .into_iter()
        .filter(|(id, _)| header.profiles.iter().any(|p| &p.id == id))
        .map(|(id, usage)| {
            let mut line = Map::new();
            line.insert("kind".into(), "profile".into());
            line.insert("id".into(), id.into());
            if let Value::Object(state) = state_json(&usage, final_now) {
                line.extend(state);
            }
            Value::Object(line)
        })
        .collect();
    let sessions = sessions
        .all()?
        .into_iter()
        .map(|(id, entry)| {
            let mut line = json!({"kind": "session", "id": id});
            if let (Some(line), Ok(Value::Object(fields))) =
                (line.as_object_mut(), serde_json::to_value(entry))
            {
                line.extend(fields);
            }
            line
        })
        .collect();
    Ok(Replay {
        clock_start: header.clock_start,
        decisions,
        profiles,
        sessions,
        unrecorded,
        skipped_lines: trace.skipped.len(),
    })
}
