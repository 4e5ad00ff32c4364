//! A replay's set-up: the recorded config and settings (F-12.4), the
//! scratch state seeded from the trace's header, the run options a
//! recorded request means, and until when a foreign change counts as seen
//! by a request.

use std::path::Path;

use serde_json::Map;

use crate::config::Config;
use crate::runner::{RunError, RunOptions};
use crate::state::{AuthStore, SessionStore, StateDir, StateError};

use super::result::ReplayOptions;
use super::trace::{Header, OutcomeEvent, RequestEvent, RunSettings};

/// The secret every replayed profile gets: replay calls no provider, and a
/// trace never holds a real one.
const PLACEHOLDER_SECRET: &str = "replay-placeholder";

/// The settings a replay runs under: the recorded ones (F-12.4), with the
/// options' overrides; a version 1 trace recorded none, and replays with
/// the built-in retry-wait cap and no run deadline.
pub(super) fn settings_of(header: &Header, options: &ReplayOptions) -> (u64, Option<u64>) {
    let recorded = header.settings.as_ref();
    let retry_wait_cap_ms = options
        .retry_wait_cap_ms
        .or(recorded.map(|s| s.retry_wait_cap_ms))
        .unwrap_or(crate::runner::DEFAULT_RETRY_WAIT_CAP_MS);
    let run_timeout_ms = options
        .run_timeout_ms
        .or(recorded.map(|s| s.run_timeout_ms));
    (retry_wait_cap_ms, run_timeout_ms)
}

/// The header's config, with the resolved settings it was recorded under.
pub(super) fn recorded_config(header: &Header, trace_path: &Path) -> Result<Config, StateError> {
    let mut config = Config::from_value(header.config.clone(), trace_path)?;
    if let Some(settings) = &header.settings {
        apply(&mut config, settings);
    }
    Ok(config)
}

fn apply(config: &mut Config, settings: &RunSettings) {
    let cooldowns = &mut config.auth.cooldowns;
    cooldowns.rate_limited_profile_rotations = settings.rate_limited_profile_rotations;
    cooldowns.overloaded_profile_rotations = settings.overloaded_profile_rotations;
    cooldowns.overloaded_backoff_ms = settings.overloaded_backoff_ms;
    cooldowns.short_wait_ms = settings.short_wait_ms;
    config.agents.defaults.model.primary_probe_interval_seconds =
        Some(settings.primary_probe_interval_ms as f64 / 1000.0);
}

/// The run options a recorded request means (as the gateway routes it).
pub(super) fn options_for(agent: &str, request: &RequestEvent) -> RunOptions {
    RunOptions {
        session: request.session.clone(),
        compaction_count: request.compaction_count,
        ..RunOptions::for_chain(agent, &request.model, &request.fallbacks)
    }
}

pub(super) fn error_kind(error: &RunError) -> String {
    match error {
        RunError::Exhausted(_) => "exhausted".into(),
        RunError::Stopped { reason, .. } => format!(
            "stopped:{}",
            serde_json::to_value(reason)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        ),
        RunError::DeadlineExceeded { .. } => "deadline".into(),
        RunError::NoModel => "no_model".into(),
        RunError::Policy(_) => "policy".into(),
        RunError::State(_) => "state".into(),
    }
}

/// An in-memory scratch state holding the header's profiles (with a
/// placeholder secret), their routing state, and the sessions.
pub(super) fn seed_state(header: &Header) -> Result<(AuthStore, SessionStore), StateError> {
    let paths = StateDir::at("<replay>").agent(&header.agent)?;
    let store = AuthStore::in_memory(paths);
    store.update_profiles(|file| {
        for profile in &header.profiles {
            match profile.kind {
                crate::auth::CredentialKind::OAuth => {
                    let mut credential = Map::new();
                    credential.insert("type".into(), "oauth".into());
                    credential.insert("provider".into(), profile.provider.clone().into());
                    credential.insert("access".into(), PLACEHOLDER_SECRET.into());
                    if profile.refreshable {
                        credential.insert("refresh".into(), PLACEHOLDER_SECRET.into());
                    }
                    if let Some(expires) = profile.expires {
                        credential.insert("expires".into(), expires.into());
                    }
                    crate::names::check_id(&profile.id).map_err(StateError::Refused)?;
                    file.put_oauth(&profile.id, credential);
                }
                kind => {
                    file.put_static(&profile.id, &profile.provider, kind, PLACEHOLDER_SECRET)?
                }
            }
        }
        Ok(())
    })?;
    store.update_usage(|usage| {
        for profile in &header.profiles {
            usage.insert(profile.id.clone(), profile.usage.clone());
        }
        Ok(())
    })?;
    let sessions = SessionStore::in_memory();
    for (id, entry) in &header.sessions {
        sessions.update(id, |e| *e = entry.clone())?;
    }
    Ok((store, sessions))
}

/// For each request (in `requests`' order), until when a change another
/// process made is one its decisions before its first call could have
/// read. Live, the gateway reads the state some time after a request
/// starts — a millisecond later, say — and notices a foreign change then;
/// the replay makes those decisions at the request's own instant, so the
/// change must be applied up to the request's first recorded call (or, for
/// a request that made none, up to the next request).
pub(super) fn read_horizons(requests: &[&RequestEvent], outcomes: &[OutcomeEvent]) -> Vec<u64> {
    let mut first_call: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
    for outcome in outcomes {
        let at = first_call.entry(outcome.request).or_insert(outcome.at);
        *at = (*at).min(outcome.at);
    }
    requests
        .iter()
        .enumerate()
        .map(|(index, request)| {
            // A change noticed at the next request's instant is its own.
            let next = requests.get(index + 1).map(|r| r.at.saturating_sub(1));
            match (first_call.get(&request.id), next) {
                (Some(call), Some(next)) => (*call).min(next),
                (Some(call), None) => *call,
                (None, Some(next)) => next,
                (None, None) => request.at,
            }
            .max(request.at)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(id: u64, at: u64) -> RequestEvent {
        RequestEvent {
            id,
            at,
            session: None,
            model: "auto".into(),
            fallbacks: Vec::new(),
            openai_only: Vec::new(),
            anthropic_only: Vec::new(),
            stream: false,
            compaction_count: 0,
            content: None,
        }
    }

    fn call(request: u64, at: u64) -> OutcomeEvent {
        OutcomeEvent {
            request,
            at,
            provider: "openai".into(),
            model: "openai/gpt-4o".into(),
            profile: "openai:a".into(),
            latency_ms: 5,
            error: None,
            hung: false,
            content: None,
        }
    }

    #[test]
    fn changes_read_before_a_first_call_apply_before_its_request() {
        let owned = [request(1, 100), request(2, 200), request(3, 300)];
        let requests: Vec<&RequestEvent> = owned.iter().collect();
        // Request 1 called at 102 and 150; 2 made no call; 3 called at 301.
        let outcomes = [call(1, 150), call(1, 102), call(3, 301)];
        assert_eq!(read_horizons(&requests, &outcomes), [102, 299, 301]);
    }
}
