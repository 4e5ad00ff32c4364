//! A complete failover policy written against `wit/policy.wit` with
//! nothing but wit-bindgen: what a policy author who reads only the
//! contract writes. It classifies by HTTP status alone, orders credentials
//! OAuth first and least recently used first, cools a failing credential
//! down for a fixed ladder of windows, and walks the chain in order.

#![cfg(target_arch = "wasm32")]

wit_bindgen::generate!({
    world: "policy",
    path: "../../../wit",
});

use exports::failover::policy::profiles::{
    AttemptEvent, CooldownConfig, OrderRequest, Outcome, PinDecision, PinRequest,
};
use exports::failover::policy::runner::{
    AttemptRecord, CandidateDecision, CandidateRequest, RotationConfig, RunPlan, RunRequest,
    RunStep, RunSummary, StopReason,
};
use exports::failover::policy::types::{
    AttemptEnd, Block, Classification, CredentialKind, ErrorReport, FailedAttempt, FailureCount,
    FailureDetail, FailureReason, ModelCooldown, ModelHealth, PinSource, RankedProfile,
    SelectionSource, StoredProfile, Usage,
};
use exports::failover::policy::{classifier, meta, profiles, runner};

/// A minute, the first rung of the cooldown ladder.
const MINUTE_MS: u64 = 60_000;
/// The ladder's top: an hour, well inside the contract's one-week bound.
const HOUR_MS: u64 = 60 * MINUTE_MS;
/// Strikes in a row after which a model counts as slow.
const SLOW_AFTER_STRIKES: u32 = 3;

struct Policy;

impl classifier::Guest for Policy {
    fn classify(report: ErrorReport) -> Classification {
        let status = report.levels.iter().find_map(|level| level.status);
        let reason = status.map_or(FailureReason::Unknown, reason_of_status);
        let retry_after_ms = report.levels.iter().find_map(|level| {
            let (_, value) = level
                .headers
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case("retry-after"))?;
            value
                .trim()
                .parse::<u64>()
                .ok()
                .map(|seconds| seconds.min(3600) * 1000)
        });
        let empty = report
            .levels
            .iter()
            .all(|level| level.message.trim().is_empty());
        let detail = match reason {
            FailureReason::Unknown if empty && status.is_none() => {
                Some(FailureDetail::EmptyResponse)
            }
            FailureReason::Unknown => Some(FailureDetail::Unclassified),
            _ => None,
        };
        Classification {
            reason,
            detail,
            retry_after_ms,
            reset_at_ms: None,
        }
    }
}

/// The reason an HTTP status alone stands for.
fn reason_of_status(status: u16) -> FailureReason {
    match status {
        400 | 422 => FailureReason::Format,
        401 => FailureReason::Auth,
        402 => FailureReason::Billing,
        403 => FailureReason::AuthPermanent,
        404 => FailureReason::ModelNotFound,
        408 | 504 | 524 => FailureReason::Timeout,
        413 => FailureReason::ContextOverflow,
        429 => FailureReason::RateLimit,
        503 | 529 => FailureReason::Overloaded,
        500..=599 => FailureReason::ServerError,
        _ => FailureReason::Unknown,
    }
}

/// Why and until when `profile` cannot serve `model` at `now`, if it cannot.
fn block_of(usage: &Usage, model: Option<&str>, now: u64) -> Option<Block> {
    let windows = [
        usage.disabled_until.zip(usage.disabled_reason),
        usage.cooldown_until.zip(usage.cooldown_reason),
    ];
    let model_window = usage
        .model_cooldowns
        .iter()
        .find(|cooldown| Some(cooldown.model.as_str()) == model)
        .map(|cooldown| (cooldown.until, cooldown.reason));
    windows
        .into_iter()
        .flatten()
        .chain(model_window)
        .filter(|(until, _)| *until > now)
        .max_by_key(|(until, _)| *until)
        .map(|(until, reason)| Block { reason, until })
}

fn kind_rank(kind: CredentialKind) -> u8 {
    match kind {
        CredentialKind::Oauth => 0,
        CredentialKind::Token => 1,
        CredentialKind::ApiKey => 2,
    }
}

impl profiles::Guest for Policy {
    fn order_profiles(request: OrderRequest) -> Vec<RankedProfile> {
        let mut chosen: Vec<&StoredProfile> = match &request.explicit_order {
            Some(order) => order
                .iter()
                .filter_map(|id| request.stored.iter().find(|p| &p.id == id))
                .collect(),
            None => {
                let mut own: Vec<_> = request
                    .stored
                    .iter()
                    .filter(|p| p.provider == request.provider)
                    .collect();
                own.sort_by_key(|p| (kind_rank(p.kind), p.usage.last_used.unwrap_or(0)));
                own
            }
        };
        chosen.dedup_by(|a, b| a.id == b.id);
        let mut ranked: Vec<RankedProfile> = chosen
            .into_iter()
            .map(|p| RankedProfile {
                id: p.id.clone(),
                blocked: block_of(&p.usage, request.model.as_deref(), request.now_ms),
            })
            .collect();
        // Usable profiles keep their order; blocked ones follow, soonest free first.
        ranked.sort_by_key(|p| p.blocked.as_ref().map_or(0, |block| block.until));
        ranked
    }

    fn pin_profile(request: PinRequest) -> PinDecision {
        let in_ranked = |id: &String| request.ranked.iter().find(|p| &p.id == id);
        let keep = request.current.as_ref().and_then(in_ranked).filter(|p| {
            request.source == Some(PinSource::User)
                || (p.blocked.is_none() && !request.session_reset)
        });
        let profile = keep
            .or_else(|| request.ranked.iter().find(|p| p.blocked.is_none()))
            .or(request.ranked.first());
        let source = match keep {
            Some(_) => request.source.unwrap_or(PinSource::Auto),
            None => PinSource::Auto,
        };
        PinDecision {
            profile: profile.map(|p| p.id.clone()),
            source,
            compaction_count: request.compaction_count,
        }
    }

    fn record_attempt(usage: Usage, event: AttemptEvent, config: CooldownConfig) -> Usage {
        let now = event.now_ms;
        match event.outcome {
            Outcome::Success => Usage {
                last_used: Some(now),
                cooldown_until: None,
                cooldown_reason: None,
                model_cooldowns: usage
                    .model_cooldowns
                    .into_iter()
                    .filter(|c| Some(&c.model) != event.model.as_ref() && c.until > now)
                    .collect(),
                error_count: 0,
                failure_counts: Vec::new(),
                ..usage
            },
            Outcome::Failure(failure) => record_failure(usage, failure, event.model, now, &config),
        }
    }
}

/// The ladder: a minute, five, twenty-five, then an hour; never below the
/// provider's own wait.
fn cooldown_ms(errors: u32, floor: Option<u64>) -> u64 {
    let ladder = MINUTE_MS
        .saturating_mul(5u64.saturating_pow(errors.saturating_sub(1)))
        .min(HOUR_MS);
    ladder.max(floor.unwrap_or(0).min(HOUR_MS))
}

fn record_failure(
    mut usage: Usage,
    failure: Classification,
    model: Option<String>,
    now: u64,
    config: &CooldownConfig,
) -> Usage {
    let reason = failure.reason;
    // The endpoint's failures and the request's own leave the credential alone.
    let concerns_credential = !matches!(
        reason,
        FailureReason::ServerError
            | FailureReason::TlsCertificate
            | FailureReason::Format
            | FailureReason::ContextOverflow
            | FailureReason::SessionExpired
    );
    if !concerns_credential {
        return usage;
    }
    let in_window = usage
        .last_failure_at
        .is_some_and(|at| now.saturating_sub(at) < config.failure_window_ms);
    if !in_window {
        usage.error_count = 0;
        usage.failure_counts.clear();
    }
    usage.error_count = usage.error_count.saturating_add(1);
    usage.last_failure_at = Some(now);
    let scope = model.filter(|_| reason == FailureReason::RateLimit);
    match usage
        .failure_counts
        .iter_mut()
        .find(|c| c.reason == reason && c.model == scope)
    {
        Some(count) => count.count = count.count.saturating_add(1),
        None => usage.failure_counts.push(FailureCount {
            reason,
            model: scope.clone(),
            count: 1,
        }),
    }
    let wait = cooldown_ms(usage.error_count, failure.retry_after_ms);
    match (reason, scope) {
        (FailureReason::Billing | FailureReason::AuthPermanent, _) => {
            usage.disabled_until = Some(
                now + config
                    .billing_backoff_ms
                    .clamp(MINUTE_MS, config.billing_max_ms.max(MINUTE_MS))
                    .min(HOUR_MS * 24),
            );
            usage.disabled_reason = Some(reason);
        }
        (_, Some(model)) => {
            usage.model_cooldowns.retain(|c| c.model != model);
            usage.model_cooldowns.push(ModelCooldown {
                model,
                until: now + wait,
                reason,
            });
        }
        (_, None) => {
            usage.cooldown_until = Some(now + wait);
            usage.cooldown_reason = Some(reason);
        }
    }
    usage
}

impl runner::Guest for Policy {
    fn plan_run(request: RunRequest) -> RunPlan {
        let session = request.session_override.as_ref();
        let (first, source) = if let Some(model) = &request.requested {
            (Some(model.clone()), SelectionSource::UserOverride)
        } else if let Some(session) = session {
            let source = match session.source {
                Some(PinSource::User) => SelectionSource::UserOverride,
                Some(PinSource::Auto) => SelectionSource::AutoOverride,
                None => SelectionSource::LegacyOverride,
            };
            (Some(session.model.clone()), source)
        } else if let Some(model) = &request.agent_primary {
            (Some(model.clone()), SelectionSource::AgentPrimary)
        } else {
            (
                request.configured_primary.clone(),
                SelectionSource::ConfiguredDefault,
            )
        };
        let strict =
            source == SelectionSource::UserOverride && request.fallbacks_override.is_none();
        let mut candidates: Vec<String> = first.into_iter().collect();
        if !strict && !candidates.is_empty() {
            let fallbacks = request
                .fallbacks_override
                .clone()
                .unwrap_or_else(|| request.configured_fallbacks.clone());
            for model in fallbacks
                .into_iter()
                .chain(request.configured_primary.clone())
            {
                if !candidates.contains(&model) && candidates.len() < 64 {
                    candidates.push(model);
                }
            }
        }
        RunPlan {
            candidates,
            source,
            strict,
            clear_override: false,
            probe_primary: false,
        }
    }

    fn decide_candidate(request: CandidateRequest) -> CandidateDecision {
        let usable: Vec<String> = request
            .ranked
            .iter()
            .filter(|p| p.blocked.is_none())
            .map(|p| p.id.clone())
            .collect();
        let slow = request
            .health
            .slow_until
            .is_some_and(|until| until > request.now_ms);
        if slow && request.later_candidates {
            return CandidateDecision::Skip(FailureReason::Timeout);
        }
        if !usable.is_empty() {
            return CandidateDecision::Attempt(usable);
        }
        let soonest = request
            .ranked
            .iter()
            .filter_map(|p| p.blocked.as_ref())
            .min_by_key(|b| b.until);
        CandidateDecision::Skip(soonest.map_or(FailureReason::Unknown, |block| block.reason))
    }

    fn record_model_attempt(health: ModelHealth, end: AttemptEnd, now_ms: u64) -> ModelHealth {
        match end {
            AttemptEnd::Answered => ModelHealth::default_health(),
            AttemptEnd::Hung | AttemptEnd::ServerError => {
                let strikes = health.strikes.saturating_add(1);
                let slow_until = (strikes >= SLOW_AFTER_STRIKES).then_some(now_ms + MINUTE_MS);
                ModelHealth {
                    strikes,
                    last_strike_at: Some(now_ms),
                    slow_until,
                    trial_started_at: None,
                }
            }
        }
    }

    fn next_step(attempt: FailedAttempt, config: RotationConfig) -> RunStep {
        let next = attempt.position + 1;
        let has_next = (next as usize) < attempt.chain.len();
        match attempt.reason {
            _ if attempt.aborted => RunStep::Stop(StopReason::Aborted),
            FailureReason::Format => RunStep::Stop(StopReason::Format),
            FailureReason::SessionExpired => RunStep::Stop(StopReason::SessionExpired),
            FailureReason::ContextOverflow => {
                let larger = attempt.overflow_to.as_ref().and_then(|model| {
                    attempt
                        .chain
                        .iter()
                        .skip(next as usize)
                        .position(|c| c == model)
                });
                larger.map_or(RunStep::Stop(StopReason::ContextOverflow), |offset| {
                    RunStep::Candidate(next + offset as u32)
                })
            }
            FailureReason::RateLimit if rotate(&attempt, config.rate_limited_profile_rotations) => {
                RunStep::RotateProfile(0)
            }
            FailureReason::Overloaded if rotate(&attempt, config.overloaded_profile_rotations) => {
                RunStep::RotateProfile(config.overloaded_backoff_ms.min(config.wait_cap_ms))
            }
            FailureReason::Auth
            | FailureReason::AuthPermanent
            | FailureReason::Billing
            | FailureReason::Timeout
                if attempt.profiles_left > 0 && !attempt.hung =>
            {
                RunStep::RotateProfile(0)
            }
            _ if has_next => RunStep::Candidate(next),
            _ => RunStep::Stop(StopReason::Exhausted),
        }
    }

    fn summarise(
        attempts: Vec<AttemptRecord>,
        _profiles: Vec<StoredProfile>,
        _now_ms: u64,
    ) -> RunSummary {
        let first = attempts.first().map(|a| a.reason);
        let common_reason = first.filter(|reason| attempts.iter().all(|a| a.reason == *reason));
        RunSummary {
            common_reason,
            ready_at: None,
        }
    }
}

/// Whether a failed attempt may move to the candidate's next profile under
/// a rotation cap (the user's pinned profile never rotates).
fn rotate(attempt: &FailedAttempt, cap: u32) -> bool {
    attempt.profiles_left > 0 && attempt.rotations < cap && !attempt.user_pinned_profile
}

impl ModelHealth {
    /// A model with no strikes.
    fn default_health() -> Self {
        ModelHealth {
            strikes: 0,
            last_strike_at: None,
            slow_until: None,
            trial_started_at: None,
        }
    }
}

impl meta::Guest for Policy {
    fn describe() -> meta::PolicyInfo {
        meta::PolicyInfo {
            name: "from-the-wit".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

export!(Policy);
