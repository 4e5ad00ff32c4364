//! The driver: one request through the chain. Every decision — where to
//! start, which candidates, which profiles, attempt/probe/skip, what to do
//! after a failure, the summary — is the policy's; the runner only carries
//! them out, keeps state on disk, and calls providers.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};

use crate::auth::{
    FailureEvent, OrderRequest, PinRequest, PinSource, RecordedReason, StoredProfile, Usage,
};
use crate::config::{AgentModel, Config};
use crate::state::{
    canonical_provider, split_model, stored_profiles, AuthStore, SessionEntry, SessionStore,
};
use failover_sandbox::policy::Decider;
use failover_sandbox::provider_error::ProviderError;

use super::clock::Clock;
use super::counters::Counters;
use super::events;
use super::health::HealthBook;
use super::model::{
    AttemptRecord, CandidateDecision, CandidateRequest, ChainRequest, FailedAttempt, Gate,
    OverrideSource, ProfileBlock, RotationConfig, RunStep, Selection, SelectionRequest,
    SelectionSource, SessionOverride, StopReason, SummaryRequest,
};
use super::outcome::{Attempt, FallbackStep, FallbackSummaryError, RunError, RunOutcome};
use super::provider::{CallError, Provider, Target};

/// A cron job's model and fallbacks (`payload.model`, `payload.fallbacks`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronJob {
    pub model: String,
    /// `None`: the configured fallbacks; `Some([])`: strict.
    pub fallbacks: Option<Vec<String>>,
}

/// What an agent runtime supplies for one run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// The agent (`agents.list[].id`); its own model, if any, applies.
    pub agent: Option<String>,
    /// The session whose overrides apply and are persisted.
    pub session: Option<String>,
    /// The session's compaction count now.
    pub compaction_count: u32,
    /// The run is a cron job's.
    pub cron: Option<CronJob>,
    /// The run is a heartbeat, with its own `heartbeat.model` if any.
    pub heartbeat: Option<Option<String>>,
    /// A caller's `fallbacksOverride`.
    pub fallbacks_override: Option<Vec<String>>,
    /// An image run: its chain is `agents.defaults.imageModel`, not the
    /// text model's (F-1.2).
    pub image: bool,
    /// A one-off explicit `provider/model` (a request's model, `failover run
    /// --model`): strict like a user's choice (F-7.6); the session's
    /// override is neither read nor changed by it.
    pub model: Option<String>,
    /// The run's deadline on the runner's clock (ms since the epoch): no
    /// attempt or wait starts after it.
    pub deadline_ms: Option<u64>,
}

impl RunOptions {
    /// The options a requested model means, as the gateway routes it and
    /// replay replays it: `auto` is `default_agent`'s chain, `agent:<id>`
    /// that agent's, anything else a strict `provider/model` (F-7.6).
    pub fn for_requested(default_agent: &str, model: &str) -> RunOptions {
        let (agent, model) = match model.strip_prefix("agent:") {
            Some(agent) => (agent, None),
            None if model == "auto" => (default_agent, None),
            None => (default_agent, Some(model.to_owned())),
        };
        RunOptions {
            agent: Some(agent.to_owned()),
            model,
            ..RunOptions::default()
        }
    }
}

/// A success that changes nothing but a profile's `lastUsed` is written at
/// most this often per profile. One fsync'd write per request capped a
/// gateway near 1,800 requests/s on the project's machine (BENCHMARKS.md);
/// this process keeps the exact time in memory for its own ordering, other
/// processes see it to the second.
pub const LAST_USED_WRITE_INTERVAL_MS: u64 = 1_000;

/// The longest wait on a `Retry-After` when nothing else remains (F-6.8):
/// the seeds' SDK cap. Longer hints are surfaced at once.
pub const DEFAULT_RETRY_WAIT_CAP_MS: u64 = 60_000;

/// Runs requests through the chain. Share it (`Arc`); concurrent runs are
/// safe (state changes are locked and atomic).
pub struct Runner<P, C> {
    /// The active policy. A run takes it once at its start and keeps it to
    /// the end, so swapping it never changes a run in flight.
    policy: RwLock<Arc<dyn Decider>>,
    config: Config,
    store: AuthStore,
    sessions: SessionStore,
    provider: P,
    clock: C,
    /// Last probe per provider (the F-8.3 throttle), kept across runs.
    probes: Mutex<HashMap<String, u64>>,
    /// F-6.8: the longest wait on a `Retry-After`; 0 never waits.
    retry_wait_cap_ms: u64,
    /// Successes not yet written (see [`LAST_USED_WRITE_INTERVAL_MS`]):
    /// profile id → when it last served.
    recent_use: Mutex<HashMap<String, u64>>,
    /// Each model's responsiveness (F-12.3), kept across runs.
    health: HealthBook,
    /// Failures around served replies.
    counters: Counters,
}

/// A failed call, classified and recorded.
struct Failure {
    attempt: Attempt,
    aborted: bool,
    live_switch_to: Option<String>,
    retry_after_ms: Option<u64>,
}

/// The best `Retry-After` to wait on if nothing else remains: the target
/// that is ready soonest.
struct RetryWait {
    target: Target,
    ready_at: u64,
    position: usize,
}

/// What the runner wrote on a session before a fallback attempt, to roll
/// back narrowly if the attempt fails (F-9.7).
struct Written {
    session: String,
    before: SessionEntry,
    after: SessionEntry,
    /// The profile the fallback attempt pinned on the session, if it
    /// pinned one: a failed fallback drops it too (F-12.5).
    pinned: Option<String>,
}

impl<P: Provider, C: Clock> Runner<P, C> {
    /// A runner deciding with `policy`.
    pub fn new(
        policy: Arc<dyn Decider>,
        config: Config,
        store: AuthStore,
        sessions: SessionStore,
        provider: P,
        clock: C,
    ) -> Self {
        Runner {
            policy: RwLock::new(policy),
            config,
            store,
            sessions,
            provider,
            clock,
            probes: Mutex::new(HashMap::new()),
            retry_wait_cap_ms: DEFAULT_RETRY_WAIT_CAP_MS,
            recent_use: Mutex::new(HashMap::new()),
            health: HealthBook::default(),
            counters: Counters::default(),
        }
    }

    /// Sets the longest wait on a `Retry-After` (F-6.8); 0 disables waiting.
    pub fn with_retry_wait_cap(mut self, ms: u64) -> Self {
        self.retry_wait_cap_ms = ms;
        self
    }

    /// The policy new runs use.
    pub fn policy(&self) -> Arc<dyn Decider> {
        self.policy
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Makes `policy` the one new runs use; runs in flight finish on the
    /// one they started with. Returns the previous one.
    pub fn swap_policy(&self, policy: Arc<dyn Decider>) -> Arc<dyn Decider> {
        std::mem::replace(
            &mut *self.policy.write().unwrap_or_else(|e| e.into_inner()),
            policy,
        )
    }

    /// The config it runs with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The auth store it records profile state in.
    pub fn store(&self) -> &AuthStore {
        &self.store
    }

    /// The session store the runner writes overrides to.
    pub fn sessions(&self) -> &SessionStore {
        &self.sessions
    }

    /// The provider (for tests that script it).
    pub fn provider(&self) -> &P {
        &self.provider
    }

    /// What the runner knows of each model's responsiveness (F-12.3).
    pub fn model_health(&self) -> &HealthBook {
        &self.health
    }

    /// Failures around served replies.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// A served stream broke after its first content: the profile answered,
    /// then failed, and that failure is recorded against it like any other
    /// — classified by `policy` and passed to its `record-failure` (a cut or
    /// stalled stream is a timeout, which by F-6.1 leaves a profile's state
    /// as it is; an overloaded or rate-limit error event cools it down).
    /// Returns the reason and the profile's state after.
    pub fn record_stream_failure(
        &self,
        policy: &dyn Decider,
        target: &Target,
        error: &ProviderError,
    ) -> Result<(RecordedReason, Usage), RunError> {
        self.counters.stream_broken();
        let now = self.clock.now_ms();
        let verdict =
            policy.classify(&error.clone().with_provider(target.provider.clone()), now)?;
        let reason = RecordedReason::from(verdict.reason);
        let cooldowns = self.config.cooldown_config();
        let after = self.record_failure(
            policy,
            target,
            reason,
            verdict.retry_after_ms,
            now,
            &cooldowns,
        )?;
        Ok((reason, after))
    }

    /// Runs `request` through the chain with the active policy.
    pub async fn run(
        &self,
        options: &RunOptions,
        request: &P::Request,
    ) -> Result<RunOutcome<P::Reply>, RunError> {
        self.run_with(self.policy().as_ref(), options, request)
            .await
    }

    /// Runs `request` through the chain with `policy` deciding every step
    /// (a caller that must say which module decided takes it first with
    /// [`Runner::policy`]).
    pub async fn run_with(
        &self,
        policy: &dyn Decider,
        options: &RunOptions,
        request: &P::Request,
    ) -> Result<RunOutcome<P::Reply>, RunError> {
        let session = match &options.session {
            Some(id) => Some(self.sessions.get(id)?),
            None => None,
        };
        let agent_model = options
            .agent
            .as_deref()
            .and_then(|id| self.config.agents.list.iter().find(|a| a.id == id))
            .and_then(|a| a.model.clone());
        let (agent_primary, agent_fallbacks) = match &agent_model {
            Some(AgentModel::Name(model)) => (Some(model.clone()), None),
            Some(AgentModel::Choice(choice)) => (choice.primary.clone(), choice.fallbacks.clone()),
            None => (None, None),
        };
        let image_defaults;
        let defaults = if options.image {
            image_defaults = match &self.config.agents.defaults.image_model {
                Some(AgentModel::Name(model)) => crate::config::ModelChoice {
                    primary: Some(model.clone()),
                    ..Default::default()
                },
                Some(AgentModel::Choice(choice)) => choice.clone(),
                None => crate::config::ModelChoice::default(),
            };
            &image_defaults
        } else {
            &self.config.agents.defaults.model
        };
        let selection = match &options.model {
            // F-7.6: a one-off explicit selection is the user's, and strict.
            Some(model) => Selection {
                model: Some(model.clone()),
                source: SelectionSource::UserOverride,
                clear_override: false,
                probe_primary: false,
            },
            None => policy.resolve_selection(&SelectionRequest {
                configured_primary: defaults.primary.clone(),
                agent_primary,
                cron_model: options.cron.as_ref().map(|c| c.model.clone()),
                heartbeat: options.heartbeat.is_some(),
                heartbeat_model: options.heartbeat.clone().flatten(),
                session_override: session.as_ref().and_then(|s| {
                    s.model().map(|model| SessionOverride {
                        model,
                        source: s.model_override_source,
                        origin: s.origin(),
                    })
                }),
                primary_probe_interval_ms: self.config.primary_probe_interval_ms(),
                last_primary_probe_at: session
                    .as_ref()
                    .and_then(|s| s.model_override_primary_probe_at),
                now_ms: self.clock.now_ms(),
            })?,
        };
        if selection.clear_override {
            if let Some(id) = &options.session {
                self.sessions
                    .update(id, SessionEntry::clear_model_override)?;
            }
        }
        let requested = selection.model.clone().ok_or(RunError::NoModel)?;
        let source_fallbacks = match selection.source {
            SelectionSource::AgentPrimary => agent_fallbacks,
            SelectionSource::CronJob => options.cron.as_ref().and_then(|c| c.fallbacks.clone()),
            _ => None,
        };
        let mut chain = policy
            .candidate_chain(&ChainRequest {
                requested: requested.clone(),
                source: selection.source,
                configured_primary: defaults.primary.clone(),
                configured_fallbacks: defaults.fallbacks.clone().unwrap_or_default(),
                source_fallbacks,
                fallbacks_override: options.fallbacks_override.clone(),
            })?
            .candidates;
        // F-12.2: the configured primary first, once, then the override's chain.
        let probing_primary = match (&defaults.primary, &options.session) {
            (Some(primary), Some(id)) if selection.probe_primary => {
                chain.retain(|model| model != primary);
                chain.insert(0, primary.clone());
                let now = self.clock.now_ms();
                self.sessions.update(id, |e| {
                    e.model_override_primary_probe_at = Some(now);
                })?;
                true
            }
            _ => false,
        };

        let cooldowns = self.config.cooldown_config();
        let rotation = RotationConfig {
            rate_limited_profile_rotations: self
                .config
                .auth
                .cooldowns
                .rate_limited_profile_rotations,
            overloaded_profile_rotations: self.config.auth.cooldowns.overloaded_profile_rotations,
            overloaded_backoff_ms: self.config.auth.cooldowns.overloaded_backoff_ms,
        };
        let mut attempts: Vec<Attempt> = Vec::new();
        let mut steps: Vec<FallbackStep> = Vec::new();
        let mut transient_probed: HashSet<String> = HashSet::new();
        let mut written: Option<Written> = None;
        let mut retry_wait: Option<RetryWait> = None;
        let mut position = 0usize;

        'candidates: while position < chain.len() {
            let model = chain[position].clone();
            let provider = canonical_provider(split_model(&model).0).to_owned();
            let now = self.clock.now_ms();
            let others_remain = position + 1 < chain.len();
            if self.health.gate(policy, &model, others_remain, now)? == Gate::Skip {
                // F-12.3: a slow model is skipped while others remain.
                let summary =
                    format!("skipped: {model} is slow (its attempts hang to the deadline)");
                self.skip(
                    &chain,
                    position,
                    RecordedReason::Timeout,
                    summary,
                    &mut attempts,
                    &mut steps,
                );
                position += 1;
                continue;
            }
            let stored = self.stored()?;
            let ranked = policy.order_profiles(&OrderRequest {
                provider: provider.clone(),
                explicit_order: self.config.explicit_order(&provider),
                configured: self.config.configured_profiles(),
                stored: stored.clone(),
                model: Some(model.clone()),
                now_ms: now,
            })?;
            let blocks = blocks_of(&stored, &ranked);
            let sibling = chain[..position]
                .iter()
                .any(|m| canonical_provider(split_model(m).0) == provider);
            let last_probe_at = self
                .probes
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&provider)
                .copied();
            let decision = policy.decide_candidate(&CandidateRequest {
                primary: position == 0,
                sibling,
                ranked: ranked.clone(),
                blocks,
                last_probe_at,
                transient_probe_used: transient_probed.contains(&provider),
                has_fallbacks: chain.len() > 1,
                now_ms: now,
            })?;
            let mut profiles = match decision {
                CandidateDecision::Attempt(profiles) => profiles,
                CandidateDecision::Probe { profile, transient } => {
                    self.probes
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(provider.clone(), now);
                    if transient {
                        transient_probed.insert(provider.clone());
                    }
                    vec![profile]
                }
                CandidateDecision::Skip(reason) => {
                    let summary = format!(
                        "skipped: every profile of {provider} is blocked ({})",
                        reason.as_str()
                    );
                    self.skip(&chain, position, reason, summary, &mut attempts, &mut steps);
                    position += 1;
                    continue;
                }
            };
            // F-12.2: the primary probe is one attempt with one profile.
            let probe_only = probing_primary && position == 0;
            if probe_only {
                profiles.truncate(1);
            }
            // F-9.3: the fallback override is on the session before the attempt starts.
            if position > 0 {
                if let Some(id) = &options.session {
                    let reason = attempts.last().map(|a| a.reason);
                    written = self.persist_fallback(id, &model, &chain[0], reason)?;
                }
            }
            let (user_pinned, pinned) =
                self.apply_pin(policy, options, session.as_ref(), &ranked, &mut profiles)?;
            if let Some(w) = written.as_mut() {
                w.pinned = pinned;
            }

            let mut rotations = 0u32;
            let mut index = 0usize;
            while index < profiles.len() {
                let target = Target {
                    provider: provider.clone(),
                    model: model.clone(),
                    profile: profiles[index].clone(),
                };
                if let Some(deadline) = options.deadline_ms {
                    if self.clock.now_ms() >= deadline {
                        self.roll_back(&mut written)?;
                        return Err(RunError::DeadlineExceeded { attempts });
                    }
                }
                let failure = match self.call_once(policy, &target, request, &cooldowns).await? {
                    Ok(reply) => {
                        let source = if probe_only {
                            self.primary_answered(options, &requested)?;
                            SelectionSource::ConfiguredDefault
                        } else {
                            selection.source
                        };
                        return self.succeeded(
                            policy, options, target, reply, source, attempts, steps, position,
                            written,
                        );
                    }
                    Err(failure) => failure,
                };
                let reason = failure.attempt.reason;
                let detail = failure.attempt.detail;
                if let Some(after) = failure.retry_after_ms {
                    let ready_at = self.clock.now_ms().saturating_add(after);
                    if retry_wait.as_ref().is_none_or(|w| ready_at < w.ready_at) {
                        retry_wait = Some(RetryWait {
                            target: target.clone(),
                            ready_at,
                            position,
                        });
                    }
                }
                attempts.push(failure.attempt);
                let next = if probe_only && !failure.aborted {
                    // F-12.2: a failed probe costs nothing else; the run goes
                    // on with the auto override.
                    RunStep::Candidate(1)
                } else {
                    policy.next_step(
                        &FailedAttempt {
                            reason,
                            aborted: failure.aborted,
                            live_switch_to: failure.live_switch_to,
                            user_pinned_profile: user_pinned,
                            rotations,
                            profiles_left: u32::try_from(profiles.len() - index - 1)
                                .unwrap_or(u32::MAX),
                            chain: chain.clone(),
                            position: u32::try_from(position).unwrap_or(u32::MAX),
                        },
                        &rotation,
                    )?
                };
                match next {
                    RunStep::RotateProfile(wait_ms) => {
                        let wait_ms = self.within_deadline(options, wait_ms);
                        if wait_ms > 0 {
                            self.clock.sleep(wait_ms).await;
                        }
                        rotations += 1;
                        index += 1;
                    }
                    RunStep::Candidate(to) => {
                        self.roll_back(&mut written)?;
                        let to = to as usize;
                        steps.push(step(
                            &model,
                            Some(chain[to].clone()),
                            reason,
                            detail,
                            position,
                            "next_fallback",
                        ));
                        events::emit(steps.last().expect("just pushed"));
                        position = to;
                        continue 'candidates;
                    }
                    RunStep::Stop(StopReason::Exhausted) => break 'candidates,
                    RunStep::Stop(stop) => {
                        self.roll_back(&mut written)?;
                        let attempt = Box::new(attempts.last().cloned().expect("just pushed"));
                        return Err(RunError::Stopped {
                            reason: stop,
                            attempt,
                            attempts,
                        });
                    }
                }
            }
            // Every profile was tried without the policy moving on: next model.
            self.roll_back(&mut written)?;
            position += 1;
        }

        self.roll_back(&mut written)?;
        // F-6.8a / F-6.8: nothing else remains; wait on the soonest
        // Retry-After if it is within the cap, and try that target once more.
        if let Some(wait) = retry_wait {
            let delay = wait.ready_at.saturating_sub(self.clock.now_ms());
            let fits = options
                .deadline_ms
                .is_none_or(|deadline| wait.ready_at < deadline);
            if self.retry_wait_cap_ms > 0 && delay <= self.retry_wait_cap_ms && fits {
                tracing::info!(
                    model = %wait.target.model,
                    profile = %wait.target.profile,
                    wait_ms = delay,
                    "nothing else to try: waiting on the provider's Retry-After"
                );
                self.clock.sleep(delay).await;
                if wait.position > 0 {
                    if let Some(id) = &options.session {
                        let reason = attempts.last().map(|a| a.reason);
                        written =
                            self.persist_fallback(id, &wait.target.model, &chain[0], reason)?;
                    }
                }
                match self
                    .call_once(policy, &wait.target, request, &cooldowns)
                    .await?
                {
                    Ok(reply) => {
                        return self.succeeded(
                            policy,
                            options,
                            wait.target,
                            reply,
                            selection.source,
                            attempts,
                            steps,
                            wait.position,
                            written,
                        )
                    }
                    Err(failure) => {
                        attempts.push(failure.attempt);
                        self.roll_back(&mut written)?;
                    }
                }
            }
        }
        let now = self.clock.now_ms();
        let summary = policy.summarise(&SummaryRequest {
            attempts: attempts
                .iter()
                .map(|a| AttemptRecord {
                    model: a.model.clone(),
                    provider: a.provider.clone(),
                    reason: a.reason,
                })
                .collect(),
            profiles: self.stored()?,
            now_ms: now,
        })?;
        if let Some(last) = attempts.last() {
            let position = chain.iter().position(|m| *m == last.model).unwrap_or(0);
            steps.push(step(
                &last.model,
                None,
                last.reason,
                last.detail,
                position,
                "chain_exhausted",
            ));
            events::emit(steps.last().expect("just pushed"));
        }
        Err(FallbackSummaryError {
            attempts,
            summary,
            steps,
            now_ms: now,
        }
        .into())
    }

    /// Calls one target; a failure is classified, recorded on the profile
    /// (unless it was a plain abort) and returned.
    async fn call_once(
        &self,
        policy: &dyn Decider,
        target: &Target,
        request: &P::Request,
        cooldowns: &crate::auth::CooldownConfig,
    ) -> Result<Result<P::Reply, Failure>, RunError> {
        let failure = match self.provider.call(target, request).await {
            Ok(reply) => {
                let now = self.clock.now_ms();
                self.health
                    .attempt_ended(policy, &target.model, false, now)?;
                return Ok(Ok(reply));
            }
            Err(failure) => failure,
        };
        let now = self.clock.now_ms();
        if let CallError::Failed(_) | CallError::Hung(_) = &failure {
            // F-12.3: an answer, even a fast error, is not a hang.
            let hung = matches!(failure, CallError::Hung(_));
            self.health
                .attempt_ended(policy, &target.model, hung, now)?;
        }
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
            attempt: Attempt {
                model: target.model.clone(),
                provider: target.provider.clone(),
                profile: Some(target.profile.clone()),
                reason,
                detail: verdict.detail,
                status: error.status,
                code: error.code.clone(),
                summary: summarize_error(&error),
            },
            aborted,
            live_switch_to,
            retry_after_ms: verdict.retry_after_ms.filter(|_| waitable && !aborted),
        }))
    }

    /// `wait_ms`, cut so that it ends by the run's deadline.
    fn within_deadline(&self, options: &RunOptions, wait_ms: u64) -> u64 {
        match options.deadline_ms {
            Some(deadline) => wait_ms.min(deadline.saturating_sub(self.clock.now_ms())),
            None => wait_ms,
        }
    }

    fn stored(&self) -> Result<Vec<StoredProfile>, RunError> {
        let mut stored = stored_profiles(&self.store.summaries()?, &self.store.usage()?);
        let recent = self.recent_use.lock().unwrap_or_else(|e| e.into_inner());
        for profile in &mut stored {
            if let Some(at) = recent.get(&profile.id) {
                profile.usage.last_used = profile.usage.last_used.max(Some(*at));
            }
        }
        Ok(stored)
    }

    /// Records a success (F-6.9): written at once when it changes routing
    /// state, coalesced when it only moves `lastUsed`.
    fn record_success(
        &self,
        policy: &dyn Decider,
        target: &Target,
        now: u64,
    ) -> Result<(), RunError> {
        let current = self
            .store
            .usage()?
            .get(&target.profile)
            .cloned()
            .unwrap_or_default();
        let after = policy.record_success(&current, Some(&target.model), now)?;
        let only_last_used = crate::auth::Usage {
            last_used: current.last_used,
            ..after
        } == current;
        let written_lately = current
            .last_used
            .is_some_and(|at| now.saturating_sub(at) < LAST_USED_WRITE_INTERVAL_MS);
        if only_last_used && written_lately {
            self.recent_use
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(target.profile.clone(), now);
            return Ok(());
        }
        self.store.update_profile_usage(&target.profile, |before| {
            policy.record_success(before, Some(&target.model), now)
        })?;
        Ok(())
    }

    /// Orders `profiles` by the session's pin (F-4.4 … F-4.6); returns
    /// whether the user pinned one (then only that profile is tried) and
    /// the profile it pinned on the session, if it wrote one.
    fn apply_pin(
        &self,
        policy: &dyn Decider,
        options: &RunOptions,
        session: Option<&SessionEntry>,
        ranked: &[crate::auth::RankedProfile],
        profiles: &mut Vec<String>,
    ) -> Result<(bool, Option<String>), RunError> {
        let (Some(id), Some(entry)) = (&options.session, session) else {
            return Ok((false, None));
        };
        // A user's pin on another provider's profile stays as it is (F-4.5:
        // never rotated away until the session starts over); this candidate
        // just uses its own order.
        let pinned_elsewhere = entry
            .auth_profile_override
            .as_deref()
            .is_some_and(|pinned| !ranked.iter().any(|r| r.id == pinned));
        if entry.auth_profile_override_source == Some(PinSource::User) && pinned_elsewhere {
            return Ok((false, None));
        }
        let decision = policy.pin_profile(&PinRequest {
            ranked: ranked.to_vec(),
            current: entry.auth_profile_override.clone(),
            source: entry.auth_profile_override_source,
            pinned_at_compaction: entry.auth_profile_override_compaction_count,
            compaction_count: options.compaction_count,
            session_reset: entry.auth_profile_override_session_reset,
        })?;
        let Some(pinned) = decision.profile else {
            return Ok((false, None));
        };
        if decision.source == PinSource::User {
            profiles.retain(|p| *p == pinned);
            if profiles.is_empty() {
                profiles.push(pinned);
            }
            return Ok((true, None));
        }
        if let Some(at) = profiles.iter().position(|p| *p == pinned) {
            let pinned = profiles.remove(at);
            profiles.insert(0, pinned);
        }
        let changed = entry.auth_profile_override.as_deref() != Some(profiles[0].as_str())
            || entry.auth_profile_override_compaction_count != Some(decision.compaction_count)
            || entry.auth_profile_override_session_reset;
        if !changed {
            return Ok((false, None));
        }
        let first = profiles[0].clone();
        self.sessions.update(id, |e| {
            e.auth_profile_override = Some(first.clone());
            e.auth_profile_override_source = Some(PinSource::Auto);
            e.auth_profile_override_compaction_count = Some(decision.compaction_count);
            e.auth_profile_override_session_reset = false;
        })?;
        Ok((false, Some(first)))
    }

    fn record_failure(
        &self,
        policy: &dyn Decider,
        target: &Target,
        reason: RecordedReason,
        retry_after_ms: Option<u64>,
        now: u64,
        cooldowns: &crate::auth::CooldownConfig,
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

    #[allow(clippy::too_many_arguments)]
    fn succeeded(
        &self,
        policy: &dyn Decider,
        options: &RunOptions,
        target: Target,
        reply: P::Reply,
        source: SelectionSource,
        attempts: Vec<Attempt>,
        mut steps: Vec<FallbackStep>,
        position: usize,
        written: Option<Written>,
    ) -> Result<RunOutcome<P::Reply>, RunError> {
        let now = self.clock.now_ms();
        // The upstream answered: what follows is bookkeeping, and its
        // failure must not lose the answer. It is logged and counted.
        if let Err(error) = self.record_success(policy, &target, now) {
            self.bookkeeping_failed(&target, &error);
        }
        // The fallback override stays (F-9.4): nothing to roll back.
        drop(written);
        if position > 0 {
            if let Some(first) = attempts.first() {
                steps.push(step(
                    &first.model,
                    Some(target.model.clone()),
                    first.reason,
                    first.detail,
                    0,
                    "succeeded",
                ));
                events::emit(steps.last().expect("just pushed"));
            }
        }
        if let Some(id) = &options.session {
            let profile = target.profile.clone();
            let pinned = self.sessions.update(id, |e| {
                if e.auth_profile_override_source != Some(PinSource::User) {
                    e.auth_profile_override.get_or_insert(profile);
                    e.auth_profile_override_source
                        .get_or_insert(PinSource::Auto);
                }
            });
            if let Err(error) = pinned {
                self.bookkeeping_failed(&target, &error.into());
            }
        }
        Ok(RunOutcome {
            reply,
            model: target.model,
            provider: target.provider,
            profile: target.profile,
            source,
            attempts,
            steps,
        })
    }

    /// Logs and counts a failure of the bookkeeping after a served answer.
    fn bookkeeping_failed(&self, target: &Target, error: &RunError) {
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

    /// Writes the auto fallback override for `model` (F-3.3, F-9.3); the
    /// fallback counts as the session's last try of its primary (F-12.2).
    /// Writes nothing when the session already holds that auto override
    /// (a run that probed its primary and goes on with the override).
    fn persist_fallback(
        &self,
        session: &str,
        model: &str,
        origin: &str,
        reason: Option<RecordedReason>,
    ) -> Result<Option<Written>, RunError> {
        let (provider, name) = split_model(model);
        let (origin_provider, origin_model) = split_model(origin);
        let now = self.clock.now_ms();
        let (before, after) = self.sessions.update(session, |entry| {
            let before = entry.clone();
            let held = entry.model_override_source == Some(OverrideSource::Auto)
                && entry.model().as_deref() == Some(model);
            if !held {
                entry.provider_override = Some(provider.to_owned());
                entry.model_override = Some(name.to_owned());
                entry.model_override_source = Some(OverrideSource::Auto);
                entry.model_override_fallback_origin_provider = Some(origin_provider.to_owned());
                entry.model_override_fallback_origin_model = Some(origin_model.to_owned());
                entry.model_override_fallback_reason = reason;
                entry.model_override_primary_probe_at = Some(now);
            }
            (before, entry.clone())
        })?;
        if before == after {
            return Ok(None);
        }
        Ok(Some(Written {
            session: session.to_owned(),
            before,
            after,
            pinned: None,
        }))
    }

    /// The configured primary answered a probe (F-12.2): the session's auto
    /// override on `model` goes, unless someone changed it meanwhile.
    fn primary_answered(&self, options: &RunOptions, model: &str) -> Result<(), RunError> {
        if let Some(id) = &options.session {
            self.sessions.update(id, |e| {
                let ours = e.model_override_source == Some(OverrideSource::Auto)
                    && e.model().as_deref() == Some(model);
                if ours {
                    e.clear_model_override();
                }
            })?;
        }
        Ok(())
    }

    /// F-9.7: restores the model-override fields the runner wrote, only if
    /// they still hold what it wrote; newer edits survive.
    fn roll_back(&self, written: &mut Option<Written>) -> Result<(), RunError> {
        let Some(w) = written.take() else {
            return Ok(());
        };
        self.sessions.update(&w.session, |entry| {
            let ours = entry.provider_override == w.after.provider_override
                && entry.model_override == w.after.model_override
                && entry.model_override_source == w.after.model_override_source
                && entry.model_override_fallback_origin_provider
                    == w.after.model_override_fallback_origin_provider
                && entry.model_override_fallback_origin_model
                    == w.after.model_override_fallback_origin_model;
            if ours {
                entry.provider_override = w.before.provider_override.clone();
                entry.model_override = w.before.model_override.clone();
                entry.model_override_source = w.before.model_override_source;
                entry.model_override_fallback_origin_provider =
                    w.before.model_override_fallback_origin_provider.clone();
                entry.model_override_fallback_origin_model =
                    w.before.model_override_fallback_origin_model.clone();
                entry.model_override_fallback_reason = w.before.model_override_fallback_reason;
                entry.model_override_primary_probe_at = w.before.model_override_primary_probe_at;
            }
            // F-12.5: the profile pinned for the failed fallback goes too,
            // if it is still the one this run pinned.
            let pin_ours = w.pinned.is_some()
                && entry.auth_profile_override == w.pinned
                && entry.auth_profile_override_source == Some(PinSource::Auto);
            if pin_ours {
                entry.auth_profile_override = w.before.auth_profile_override.clone();
                entry.auth_profile_override_source = w.before.auth_profile_override_source;
                entry.auth_profile_override_compaction_count =
                    w.before.auth_profile_override_compaction_count;
                entry.auth_profile_override_session_reset =
                    w.before.auth_profile_override_session_reset;
            }
        })?;
        Ok(())
    }
}

impl<P: Provider, C: Clock> Runner<P, C> {
    /// Records a skipped candidate and the step to the next one.
    fn skip(
        &self,
        chain: &[String],
        position: usize,
        reason: RecordedReason,
        summary: String,
        attempts: &mut Vec<Attempt>,
        steps: &mut Vec<FallbackStep>,
    ) {
        let model = &chain[position];
        attempts.push(Attempt {
            model: model.clone(),
            provider: canonical_provider(split_model(model).0).to_owned(),
            profile: None,
            reason,
            detail: None,
            status: None,
            code: None,
            summary,
        });
        if let Some(next) = chain.get(position + 1) {
            steps.push(step(
                model,
                Some(next.clone()),
                reason,
                None,
                position,
                "next_fallback",
            ));
            events::emit(steps.last().expect("just pushed"));
        }
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

fn step(
    from: &str,
    to: Option<String>,
    reason: RecordedReason,
    detail: Option<failover_sandbox::Detail>,
    position: usize,
    outcome: &'static str,
) -> FallbackStep {
    FallbackStep {
        from_model: from.to_owned(),
        to_model: to,
        from_failure_reason: reason,
        from_failure_detail: detail,
        chain_position: u32::try_from(position + 1).unwrap_or(u32::MAX),
        final_outcome: outcome,
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
