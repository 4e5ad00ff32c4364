//! Scenario tests of the fallback runner: scripted providers, a virtual
//! clock, real state files, the real policy component.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};

use failover::auth::{CredentialKind, RecordedReason};
use failover::config::{AgentEntry, AgentModel, Config, ModelChoice};
use failover::runner::{
    CallError, CronJob, OverrideSource, Provider, RunError, RunOptions, Runner, SelectionSource,
    StopReason, Target,
};
use failover::state::{AuthStore, SessionEntry, SessionStore, StateDir};
use failover::time::VirtualClock;
use failover::{Policy, PolicyEngine, ProviderError};

mod orders;

const NOW: u64 = 1_700_000_000_000;
const PRIMARY: &str = "anthropic/claude-sonnet-4";
const FALLBACK: &str = "openai/gpt-4o";
const LAST: &str = "google/gemini-2.5-pro";

fn policy() -> Arc<Policy> {
    static POLICY: OnceLock<Arc<Policy>> = OnceLock::new();
    POLICY
        .get_or_init(|| {
            let engine = PolicyEngine::new().expect("engine");
            Arc::new(Policy::default_policy(&engine).expect("policy"))
        })
        .clone()
}

/// What a scripted call does.
#[derive(Clone)]
enum Outcome {
    Reply,
    Fail(u16, &'static str),
    /// Fails with this error as captured (headers and all).
    Error(ProviderError),
    ContextOverflow,
    LiveSwitch(&'static str),
    /// Runs a side effect (a concurrent session edit), then fails.
    EditThenFail(Arc<dyn Fn() + Send + Sync>, u16, &'static str),
    /// Runs a side effect (another writer's change), then replies.
    EditThenReply(Arc<dyn Fn() + Send + Sync>),
    /// Runs to the attempt deadline without an answer (F-12.3).
    Hang,
}

/// A provider whose answers are scripted per model; unscripted calls reply.
#[derive(Default)]
struct Scripted {
    script: Mutex<HashMap<String, VecDeque<Outcome>>>,
    calls: Mutex<Vec<(String, String)>>,
}

impl Scripted {
    fn then(self, model: &str, outcome: Outcome) -> Self {
        self.script
            .lock()
            .unwrap()
            .entry(model.into())
            .or_default()
            .push_back(outcome);
        self
    }

    fn calls(&self) -> Vec<(String, String)> {
        self.calls.lock().unwrap().clone()
    }

    fn models_called(&self) -> Vec<String> {
        self.calls().into_iter().map(|(m, _)| m).collect()
    }
}

impl Provider for Scripted {
    type Request = ();
    type Reply = String;

    async fn call(&self, target: &Target, _: &()) -> Result<String, CallError> {
        self.calls
            .lock()
            .unwrap()
            .push((target.model.clone(), target.profile.clone()));
        let outcome = self
            .script
            .lock()
            .unwrap()
            .get_mut(&target.model)
            .and_then(VecDeque::pop_front)
            .unwrap_or(Outcome::Reply);
        let fail = |status: u16, message: &str| {
            Err(CallError::Failed(Box::new(
                ProviderError::message(message).with_status(status),
            )))
        };
        match outcome {
            Outcome::Reply => Ok(format!(
                "reply from {} via {}",
                target.model, target.profile
            )),
            Outcome::Fail(status, message) => fail(status, message),
            Outcome::Error(error) => Err(CallError::Failed(Box::new(error))),
            Outcome::ContextOverflow => {
                fail(400, "prompt is too long: 250000 tokens > 200000 maximum")
            }
            Outcome::LiveSwitch(model) => Err(CallError::LiveSwitch {
                model: model.into(),
            }),
            Outcome::EditThenFail(edit, status, message) => {
                edit();
                fail(status, message)
            }
            Outcome::EditThenReply(edit) => {
                edit();
                Ok(format!(
                    "reply from {} via {}",
                    target.model, target.profile
                ))
            }
            Outcome::Hang => Err(CallError::Hung(Box::new(
                ProviderError::message("request timed out: no answer within 120.0 s")
                    .with_code("ETIMEDOUT"),
            ))),
        }
    }
}

struct World {
    _dir: tempfile::TempDir,
    store: AuthStore,
    sessions: SessionStore,
    clock: VirtualClock,
}

/// A state directory with `profiles` (id, kind) and the default config chain
/// PRIMARY → FALLBACK → LAST.
fn world(profiles: &[&str]) -> World {
    let dir = tempfile::tempdir().unwrap();
    let paths = StateDir::at(dir.path()).agent("main").unwrap();
    let store = AuthStore::open(paths.clone()).unwrap();
    store
        .update_profiles(|file| {
            for id in profiles {
                let provider = id.split(':').next().unwrap();
                file.put_static(id, provider, CredentialKind::ApiKey, "k")?;
            }
            Ok(())
        })
        .unwrap();
    World {
        sessions: SessionStore::for_agent(&paths.dir),
        store,
        _dir: dir,
        clock: VirtualClock::at(NOW),
    }
}

fn config() -> Config {
    let mut config = Config::default();
    config.agents.defaults.model = ModelChoice {
        primary: Some(PRIMARY.into()),
        fallbacks: Some(vec![FALLBACK.into(), LAST.into()]),
        ..Default::default()
    };
    config
}

fn runner(w: &World, config: Config, provider: Scripted) -> Runner<Scripted, VirtualClock> {
    Runner::new(
        policy(),
        config,
        w.store.clone(),
        w.sessions.clone(),
        provider,
        w.clock.clone(),
    )
}

fn session(id: &str) -> RunOptions {
    RunOptions {
        session: Some(id.into()),
        ..RunOptions::default()
    }
}

const ALL: &[&str] = &["anthropic:a", "anthropic:b", "openai:a", "google:a"];

#[tokio::test]
async fn the_primary_answers_and_the_profile_is_pinned() {
    let w = world(ALL);
    let r = runner(&w, config(), Scripted::default());
    let outcome = r.run(&session("s1"), &()).await.unwrap();
    assert_eq!(outcome.model, PRIMARY);
    assert_eq!(outcome.source, SelectionSource::ConfiguredDefault);
    assert!(outcome.attempts.is_empty() && outcome.steps.is_empty());
    let entry = w.sessions.get("s1").unwrap();
    assert_eq!(
        entry.profile_pin.profile.as_deref(),
        Some(outcome.profile.as_str())
    );
    assert_eq!(entry.model_override.model, None, "no fallback, no override");
    assert_eq!(
        w.store.usage().unwrap()[&outcome.profile].last_used,
        Some(NOW)
    );
}

#[tokio::test]
async fn rate_limits_rotate_once_then_fall_back_and_the_override_persists() {
    let w = world(ALL);
    let provider = Scripted::default()
        .then(PRIMARY, Outcome::Fail(429, "rate limited"))
        .then(PRIMARY, Outcome::Fail(429, "rate limited"));
    let r = runner(&w, config(), provider);
    let outcome = r.run(&session("s1"), &()).await.unwrap();
    // F-6.7: one same-provider rotation, then the next model.
    assert_eq!(r.provider().models_called(), [PRIMARY, PRIMARY, FALLBACK]);
    let profiles: Vec<String> = r.provider().calls().into_iter().map(|(_, p)| p).collect();
    assert_ne!(
        profiles[0], profiles[1],
        "the rotation used the other profile"
    );
    assert_eq!(outcome.model, FALLBACK);
    // Both primary profiles cool down, scoped to the model (F-6.4).
    let usage = w.store.usage().unwrap();
    for id in ["anthropic:a", "anthropic:b"] {
        assert_eq!(usage[id].cooldown_until, None, "{id}");
        let cooldown = usage[id].model_cooldown(PRIMARY).expect(id);
        assert_eq!(cooldown.until, NOW + 60_000, "{id}");
    }
    // F-9.3/F-3.3: the auto override with its origin and reason.
    let entry = w.sessions.get("s1").unwrap();
    assert_eq!(entry.model().as_deref(), Some(FALLBACK));
    assert_eq!(entry.model_override.source, Some(OverrideSource::Auto));
    assert_eq!(entry.origin().as_deref(), Some(PRIMARY));
    assert_eq!(entry.model_override.reason, Some(RecordedReason::RateLimit));
    // F-10.2: the step records.
    let outcomes: Vec<_> = outcome
        .steps
        .iter()
        .map(|s| (s.final_outcome, s.chain_position))
        .collect();
    assert_eq!(outcomes, [("next_fallback", 1), ("succeeded", 1)]);
    assert_eq!(outcome.steps[1].to_model.as_deref(), Some(FALLBACK));

    // F-9.4: the next turn stays on the fallback without re-probing the primary.
    let again = r.run(&session("s1"), &()).await.unwrap();
    assert_eq!(again.source, SelectionSource::AutoOverride);
    assert_eq!(again.model, FALLBACK);
    assert_eq!(r.provider().models_called().len(), 4);

    // F-9.4: a reset returns the session to the configured default.
    w.sessions.update("s1", SessionEntry::reset).unwrap();
    w.clock.advance(61_000);
    let after_reset = r.run(&session("s1"), &()).await.unwrap();
    assert_eq!(after_reset.model, PRIMARY);
}

#[tokio::test]
async fn the_pin_holds_and_moves_on_after_a_reset_or_a_compaction() {
    let w = world(ALL);
    let r = runner(&w, config(), Scripted::default());
    let first = r.run(&session("s1"), &()).await.unwrap().profile;
    // Sticky: the next turns keep the profile (F-4.4).
    assert_eq!(r.run(&session("s1"), &()).await.unwrap().profile, first);
    // A reset moves to the next profile after the pinned one.
    w.sessions.update("s1", SessionEntry::reset).unwrap();
    let after_reset = r.run(&session("s1"), &()).await.unwrap().profile;
    assert_ne!(after_reset, first);
    assert_eq!(
        r.run(&session("s1"), &()).await.unwrap().profile,
        after_reset
    );
    // So does a completed compaction.
    let compacted = RunOptions {
        session: Some("s1".into()),
        compaction_count: 1,
        ..RunOptions::default()
    };
    assert_eq!(r.run(&compacted, &()).await.unwrap().profile, first);
    assert_eq!(
        r.run(&compacted, &()).await.unwrap().profile,
        first,
        "once per compaction"
    );
}

#[tokio::test]
async fn image_runs_use_their_own_chain() {
    let w = world(ALL);
    let mut config = config();
    config.agents.defaults.image_model = Some(AgentModel::Choice(ModelChoice {
        primary: Some("openai/gpt-image-1".into()),
        fallbacks: Some(vec!["google/imagen-4".into()]),
        ..Default::default()
    }));
    let r = runner(
        &w,
        config,
        Scripted::default().then("openai/gpt-image-1", Outcome::Fail(503, "overloaded")),
    );
    let image = RunOptions {
        image: true,
        ..RunOptions::default()
    };
    let outcome = r.run(&image, &()).await.unwrap();
    assert_eq!(
        r.provider().models_called(),
        ["openai/gpt-image-1", "google/imagen-4"]
    );
    assert_eq!(outcome.model, "google/imagen-4");
}

#[tokio::test]
async fn context_overflow_stops_without_fallback() {
    let w = world(ALL);
    let r = runner(
        &w,
        config(),
        Scripted::default().then(PRIMARY, Outcome::ContextOverflow),
    );
    let error = r.run(&session("s1"), &()).await.unwrap_err();
    assert!(
        matches!(
            error,
            RunError::Stopped {
                reason: StopReason::ContextOverflow,
                ..
            }
        ),
        "{error}"
    );
    assert_eq!(r.provider().models_called(), [PRIMARY]);
    assert_eq!(w.sessions.get("s1").unwrap().model_override.model, None);
    // The profile is untouched: context overflow is about the request.
    assert!(w
        .store
        .usage()
        .unwrap()
        .values()
        .all(|u| u.cooldown_until.is_none()));
}

#[tokio::test]
async fn a_user_pinned_model_fails_loudly() {
    let w = world(ALL);
    w.sessions
        .update("s1", |e| {
            e.model_override.provider = Some("openai".into());
            e.model_override.model = Some("gpt-4o".into());
            e.model_override.source = Some(OverrideSource::User);
        })
        .unwrap();
    let r = runner(
        &w,
        config(),
        Scripted::default().then(FALLBACK, Outcome::Fail(503, "overloaded")),
    );
    let error = r.run(&session("s1"), &()).await.unwrap_err();
    let RunError::Exhausted(summary) = &error else {
        panic!("{error}")
    };
    assert_eq!(summary.attempts.len(), 1);
    assert_eq!(
        r.provider().models_called(),
        [FALLBACK],
        "no unrelated fallback answered"
    );
    assert!(
        error.to_string().contains("openai/gpt-4o is overloaded"),
        "{error}"
    );
    // The user's selection is kept.
    assert_eq!(
        w.sessions.get("s1").unwrap().model_override.source,
        Some(OverrideSource::User)
    );
}

#[tokio::test]
async fn a_legacy_override_is_strict_too() {
    let w = world(ALL);
    w.sessions
        .update("s1", |e| {
            e.model_override.provider = Some("google".into());
            e.model_override.model = Some("gemini-2.5-pro".into());
        })
        .unwrap();
    let r = runner(
        &w,
        config(),
        Scripted::default().then(LAST, Outcome::Fail(429, "rate limited")),
    );
    assert!(r.run(&session("s1"), &()).await.is_err());
    assert_eq!(r.provider().models_called(), [LAST]);
}

#[tokio::test]
async fn cron_payload_fallbacks_empty_is_strict_and_otherwise_configured() {
    let w = world(ALL);
    let provider = Scripted::default()
        .then(FALLBACK, Outcome::Fail(500, "boom"))
        .then(FALLBACK, Outcome::Fail(500, "boom"));
    let r = runner(&w, config(), provider);
    let strict = RunOptions {
        cron: Some(CronJob {
            model: FALLBACK.into(),
            fallbacks: Some(vec![]),
        }),
        ..RunOptions::default()
    };
    assert!(r.run(&strict, &()).await.is_err());
    assert_eq!(r.provider().models_called(), [FALLBACK]);
    let configured = RunOptions {
        cron: Some(CronJob {
            model: FALLBACK.into(),
            fallbacks: None,
        }),
        ..RunOptions::default()
    };
    let outcome = r.run(&configured, &()).await.unwrap();
    assert_eq!(outcome.source, SelectionSource::CronJob);
    assert_eq!(
        outcome.model, LAST,
        "cron jobs use the configured fallbacks"
    );
}

#[tokio::test]
async fn an_agent_primary_without_fallbacks_is_strict() {
    let w = world(ALL);
    let mut config = config();
    config.agents.list = vec![
        AgentEntry {
            id: "ops".into(),
            model: Some(AgentModel::Name(LAST.into())),
        },
        AgentEntry {
            id: "chat".into(),
            model: Some(AgentModel::Choice(ModelChoice {
                primary: Some(LAST.into()),
                fallbacks: Some(vec![FALLBACK.into()]),
                ..Default::default()
            })),
        },
    ];
    let provider = Scripted::default()
        .then(LAST, Outcome::Fail(503, "overloaded"))
        .then(LAST, Outcome::Fail(503, "overloaded"));
    let r = runner(&w, config, provider);
    let ops = RunOptions {
        agent: Some("ops".into()),
        ..RunOptions::default()
    };
    assert!(r.run(&ops, &()).await.is_err());
    assert_eq!(r.provider().models_called(), [LAST]);
    w.clock.advance(61_000 * 60);
    let chat = RunOptions {
        agent: Some("chat".into()),
        ..RunOptions::default()
    };
    let outcome = r.run(&chat, &()).await.unwrap();
    assert_eq!(
        (outcome.source, outcome.model.as_str()),
        (SelectionSource::AgentPrimary, FALLBACK)
    );
}

#[tokio::test]
async fn a_heartbeat_clears_a_stale_auto_override() {
    let w = world(ALL);
    w.sessions
        .update("s1", |e| {
            e.model_override.provider = Some("openai".into());
            e.model_override.model = Some("gpt-4o".into());
            e.model_override.source = Some(OverrideSource::Auto);
            e.model_override.origin_provider = Some("anthropic".into());
            e.model_override.origin_model = Some("claude-old".into());
        })
        .unwrap();
    let r = runner(&w, config(), Scripted::default());
    let heartbeat = RunOptions {
        session: Some("s1".into()),
        heartbeat: Some(None),
        ..RunOptions::default()
    };
    let outcome = r.run(&heartbeat, &()).await.unwrap();
    assert_eq!(outcome.model, PRIMARY);
    assert_eq!(w.sessions.get("s1").unwrap().model_override.model, None);
}

#[tokio::test]
async fn one_transient_probe_per_provider_per_run() {
    // Three models of one provider, whose only profile is rate-limited for
    // a while (profile-wide).
    let w = world(&["openai:only"]);
    w.store
        .update_usage(|u| {
            u.entry("openai:only".into()).or_default().cooldown_until = Some(NOW + 25 * 60_000);
            u.get_mut("openai:only").unwrap().cooldown_reason = Some(RecordedReason::RateLimit);
            Ok(())
        })
        .unwrap();
    let mut config = config();
    config.agents.defaults.model = ModelChoice {
        primary: Some("openai/a".into()),
        fallbacks: Some(vec!["openai/b".into(), "openai/c".into()]),
        ..Default::default()
    };
    let r = runner(
        &w,
        config,
        Scripted::default().then("openai/b", Outcome::Fail(429, "rate limited")),
    );
    let error = r.run(&RunOptions::default(), &()).await.unwrap_err();
    // The primary is far from expiry: skipped. The first sibling is probed
    // (F-8.4); the second is not (F-8.5).
    assert_eq!(r.provider().models_called(), ["openai/b"]);
    let RunError::Exhausted(summary) = error else {
        panic!()
    };
    assert_eq!(summary.attempts.len(), 3);
    assert_eq!(summary.summary.ready_at, Some(NOW + 25 * 60_000));
    assert!(
        summary.to_string().contains("ready in ~25 min"),
        "{summary}"
    );
}

#[tokio::test]
async fn a_billing_disabled_primary_is_probed_only_near_its_expiry() {
    let w = world(ALL);
    let until = NOW + 5 * 3_600_000;
    w.store
        .update_usage(|u| {
            for id in ["anthropic:a", "anthropic:b"] {
                let usage = u.entry(id.into()).or_default();
                usage.disabled_until = Some(until);
                usage.disabled_reason = Some(RecordedReason::Billing);
            }
            Ok(())
        })
        .unwrap();
    let provider = Scripted::default()
        .then(PRIMARY, Outcome::Fail(402, "insufficient credits"))
        .then(PRIMARY, Outcome::Fail(402, "insufficient credits"));
    let r = runner(&w, config(), provider);
    // F-8.2: a disable hours away is never probed.
    let first = r.run(&RunOptions::default(), &()).await.unwrap();
    assert_eq!(first.model, FALLBACK);
    assert_eq!(r.provider().models_called(), [FALLBACK], "not probed");
    // Near its expiry: probed once.
    w.clock.advance(until - NOW - 60_000);
    r.run(&RunOptions::default(), &()).await.unwrap();
    assert_eq!(
        r.provider().models_called(),
        [FALLBACK, PRIMARY, FALLBACK],
        "probed near expiry"
    );
    // Within the throttle: not probed again.
    w.clock.advance(10_000);
    r.run(&RunOptions::default(), &()).await.unwrap();
    assert_eq!(
        r.provider().models_called(),
        [FALLBACK, PRIMARY, FALLBACK, FALLBACK]
    );
    // After it: probed again.
    w.clock.advance(25_000);
    r.run(&RunOptions::default(), &()).await.unwrap();
    assert_eq!(
        r.provider().models_called(),
        [FALLBACK, PRIMARY, FALLBACK, FALLBACK, PRIMARY, FALLBACK]
    );
}

#[tokio::test]
async fn a_user_edit_during_the_fallback_attempt_survives_the_rollback() {
    let w = world(ALL);
    let sessions = w.sessions.clone();
    let edit: Arc<dyn Fn() + Send + Sync> = Arc::new(move || {
        // While the fallback runs, the user picks a model with /model.
        sessions
            .update("s1", |e| {
                e.model_override.provider = Some("google".into());
                e.model_override.model = Some("gemini-2.5-pro".into());
                e.model_override.source = Some(OverrideSource::User);
            })
            .unwrap();
    });
    let provider = Scripted::default()
        .then(PRIMARY, Outcome::Fail(401, "unauthorized"))
        .then(PRIMARY, Outcome::Fail(401, "unauthorized"))
        .then(FALLBACK, Outcome::EditThenFail(edit, 401, "unauthorized"));
    let mut config = config();
    config.agents.defaults.model.fallbacks = Some(vec![FALLBACK.into()]);
    let r = runner(&w, config, provider);
    assert!(r.run(&session("s1"), &()).await.is_err());
    let entry = w.sessions.get("s1").unwrap();
    assert_eq!(
        entry.model().as_deref(),
        Some(LAST),
        "the user's edit survived"
    );
    assert_eq!(entry.model_override.source, Some(OverrideSource::User));
}

#[tokio::test]
async fn a_failed_fallback_is_rolled_back() {
    let w = world(ALL);
    let provider = Scripted::default()
        .then(PRIMARY, Outcome::Fail(401, "unauthorized"))
        .then(PRIMARY, Outcome::Fail(401, "unauthorized"))
        .then(FALLBACK, Outcome::Fail(401, "unauthorized"))
        .then(LAST, Outcome::Fail(401, "unauthorized"));
    let r = runner(&w, config(), provider);
    assert!(r.run(&session("s1"), &()).await.is_err());
    assert_eq!(w.sessions.get("s1").unwrap().model_override.model, None);
}

#[tokio::test]
async fn a_live_switch_jumps_to_a_later_candidate() {
    let w = world(ALL);
    let r = runner(
        &w,
        config(),
        Scripted::default().then(PRIMARY, Outcome::LiveSwitch(LAST)),
    );
    let outcome = r.run(&session("s1"), &()).await.unwrap();
    assert_eq!(r.provider().models_called(), [PRIMARY, LAST]);
    assert_eq!(outcome.model, LAST);
}

#[tokio::test]
async fn overload_rotation_waits_the_configured_backoff() {
    let w = world(ALL);
    let mut config = config();
    config.auth.cooldowns.overloaded_backoff_ms = 750;
    let provider = Scripted::default().then(PRIMARY, Outcome::Fail(529, "overloaded"));
    let r = runner(&w, config, provider);
    let outcome = r.run(&RunOptions::default(), &()).await.unwrap();
    assert_eq!(outcome.model, PRIMARY, "the second profile answered");
    assert_eq!(
        w.clock.slept_ms(),
        750,
        "slept only where the policy said so"
    );
}

#[tokio::test]
async fn a_user_pinned_profile_moves_to_the_next_model_not_profile() {
    let w = world(ALL);
    w.sessions
        .update("s1", |e| {
            e.profile_pin.profile = Some("anthropic:b".into());
            e.profile_pin.source = Some(failover::auth::PinSource::User);
        })
        .unwrap();
    let r = runner(
        &w,
        config(),
        Scripted::default().then(PRIMARY, Outcome::Fail(429, "rate limited")),
    );
    let outcome = r.run(&session("s1"), &()).await.unwrap();
    let calls = r.provider().calls();
    assert_eq!(calls[0], (PRIMARY.to_owned(), "anthropic:b".to_owned()));
    assert_eq!(outcome.model, FALLBACK);
    // The user's pin survives the fallback to another provider.
    let entry = w.sessions.get("s1").unwrap();
    assert_eq!(entry.profile_pin.profile.as_deref(), Some("anthropic:b"));
    assert_eq!(
        entry.profile_pin.source,
        Some(failover::auth::PinSource::User)
    );
}

#[tokio::test]
async fn everything_rate_limited_summarises_with_the_soonest_expiry() {
    let w = world(ALL);
    let provider = Scripted::default()
        .then(PRIMARY, Outcome::Fail(429, "rate limited"))
        .then(PRIMARY, Outcome::Fail(429, "rate limited"))
        .then(FALLBACK, Outcome::Fail(429, "rate limited"))
        .then(LAST, Outcome::Fail(429, "rate limited"));
    let r = runner(&w, config(), provider);
    let error = r.run(&RunOptions::default(), &()).await.unwrap_err();
    let RunError::Exhausted(summary) = &error else {
        panic!("{error}")
    };
    assert_eq!(summary.attempts.len(), 4);
    assert_eq!(
        summary.summary.common_reason,
        Some(RecordedReason::RateLimit)
    );
    // Four attempts, three models: the summary counts models.
    assert_eq!(
        error.to_string(),
        "all 3 models are temporarily rate-limited — ready in ~60 s"
    );
    let last = summary.steps.last().unwrap();
    assert_eq!(
        (last.final_outcome, last.chain_position),
        ("chain_exhausted", 3)
    );
}

#[tokio::test]
async fn fallback_decisions_are_structured_events_with_flat_fields() {
    use failover::logging::{build, Captured, LogFormat};
    // A process-wide subscriber: a thread-scoped one misses events when other
    // tests on other threads touch the same callsite first. Models unique to
    // this test keep other tests' events apart.
    static CAPTURED: OnceLock<Captured> = OnceLock::new();
    let captured = CAPTURED.get_or_init(|| {
        let captured = Captured::default();
        tracing::subscriber::set_global_default(build(LogFormat::Json, captured.clone()))
            .expect("no other test sets a global subscriber");
        captured
    });

    let w = world(&["evta:k1", "evta:k2", "evtb:k"]);
    let mut config = config();
    config.agents.defaults.model = ModelChoice {
        primary: Some("evta/one".into()),
        fallbacks: Some(vec!["evtb/two".into()]),
        ..Default::default()
    };
    let provider = Scripted::default()
        .then("evta/one", Outcome::Fail(529, "overloaded"))
        .then("evta/one", Outcome::Fail(529, "overloaded"));
    let r = runner(&w, config, provider);
    r.run(&RunOptions::default(), &()).await.unwrap();

    let events: Vec<serde_json::Value> = captured
        .text()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}")))
        .filter(|e: &serde_json::Value| {
            e["event"] == "model_fallback_decision" && e["fallbackStepFromModel"] == "evta/one"
        })
        .collect();
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0]["fallbackStepToModel"], "evtb/two");
    assert_eq!(events[0]["fallbackStepFromFailureReason"], "overloaded");
    assert_eq!(events[0]["fallbackStepChainPosition"], 1);
    assert_eq!(events[0]["fallbackStepFinalOutcome"], "next_fallback");
    assert_eq!(events[1]["fallbackStepFinalOutcome"], "succeeded");
    assert_eq!(
        events[1]["fallbackStepToModel"], "evtb/two",
        "the primary's failure is kept"
    );
}

/// A 429 carrying `retry-after: <seconds>`.
fn rate_limited_for(seconds: u64) -> Outcome {
    Outcome::Error(
        ProviderError::message("rate limited")
            .with_status(429)
            .with_header("retry-after", seconds.to_string()),
    )
}

/// A one-model chain with no fallbacks.
fn strict_config() -> Config {
    let mut config = Config::default();
    config.agents.defaults.model = ModelChoice {
        primary: Some(PRIMARY.into()),
        fallbacks: Some(Vec::new()),
        ..Default::default()
    };
    config
}

#[tokio::test]
async fn a_short_retry_after_is_waited_on_only_when_nothing_else_remains() {
    let w = world(&["anthropic:a"]);
    let provider = Scripted::default().then(PRIMARY, rate_limited_for(5));
    let r = runner(&w, strict_config(), provider);
    let outcome = r.run(&session("s1"), &()).await.unwrap();
    assert_eq!(r.provider().models_called(), [PRIMARY, PRIMARY]);
    assert_eq!(w.clock.slept_ms(), 5_000, "waited exactly the Retry-After");
    assert_eq!(outcome.attempts.len(), 1);
    // The success after the wait cleared the cooldown the 429 set.
    let usage = &w.store.usage().unwrap()["anthropic:a"];
    assert_eq!(usage.cooldown_until, None);
}

#[tokio::test]
async fn a_success_right_after_a_short_wait_clears_the_cooldown_its_own_run_set() {
    let w = world(&["anthropic:a"]);
    let provider = Scripted::default().then(PRIMARY, Outcome::Reply).then(
        PRIMARY,
        Outcome::Error(
            ProviderError::message("rate limited")
                .with_status(429)
                .with_header("retry-after-ms", "200"),
        ),
    );
    let r = runner(&w, strict_config(), provider);
    r.run(&session("s1"), &()).await.unwrap();
    // Within the second after a served answer: a success that changed
    // only `lastUsed` would not be written; this one clears a cooldown.
    r.run(&session("s1"), &()).await.unwrap();
    assert_eq!(w.clock.slept_ms(), 200);
    let usage = &w.store.usage().unwrap()["anthropic:a"];
    assert_eq!(usage.cooldown_until, None, "{usage:?}");
    assert_eq!(usage.error_count, 0, "{usage:?}");
}

#[tokio::test]
async fn no_wait_while_another_candidate_can_be_tried() {
    let w = world(ALL);
    let provider = Scripted::default()
        .then(PRIMARY, rate_limited_for(5))
        .then(PRIMARY, rate_limited_for(5));
    let r = runner(&w, config(), provider);
    let outcome = r.run(&RunOptions::default(), &()).await.unwrap();
    assert_eq!(outcome.model, FALLBACK);
    assert_eq!(w.clock.slept_ms(), 0);
}

#[tokio::test]
async fn a_retry_after_over_the_cap_is_surfaced_at_once_and_floors_the_cooldown() {
    let w = world(&["anthropic:a"]);
    let provider = Scripted::default().then(PRIMARY, rate_limited_for(600));
    let r = runner(&w, strict_config(), provider);
    let error = r.run(&RunOptions::default(), &()).await.unwrap_err();
    assert!(matches!(error, RunError::Exhausted(_)), "{error}");
    assert_eq!(w.clock.slept_ms(), 0);
    assert_eq!(r.provider().models_called(), [PRIMARY]);
    // F-6.8a: the window is at least the Retry-After, past the 1 min step.
    let usage = &w.store.usage().unwrap()["anthropic:a"];
    assert_eq!(usage.model_cooldown(PRIMARY).unwrap().until, NOW + 600_000);
    assert!(error.to_string().contains("ready in ~10 min"), "{error}");
}

#[tokio::test]
async fn a_zero_cap_disables_waiting() {
    let w = world(&["anthropic:a"]);
    let provider = Scripted::default().then(PRIMARY, rate_limited_for(5));
    let r = runner(&w, strict_config(), provider).with_retry_wait_cap(0);
    assert!(r.run(&RunOptions::default(), &()).await.is_err());
    assert_eq!(w.clock.slept_ms(), 0);
}

#[tokio::test]
async fn no_attempt_starts_after_the_deadline() {
    let w = world(ALL);
    let r = runner(&w, config(), Scripted::default());
    let options = RunOptions {
        deadline_ms: Some(NOW),
        ..RunOptions::default()
    };
    let error = r.run(&options, &()).await.unwrap_err();
    assert!(matches!(error, RunError::DeadlineExceeded { ref attempts } if attempts.is_empty()));
    assert!(r.provider().calls().is_empty());
}

#[tokio::test]
async fn round_robin_holds_while_last_used_writes_are_coalesced() {
    let w = world(&["anthropic:a", "anthropic:b"]);
    let mut config = strict_config();
    config.agents.defaults.model.fallbacks = None;
    let r = runner(&w, config, Scripted::default());
    let mut served = Vec::new();
    for _ in 0..4 {
        served.push(r.run(&RunOptions::default(), &()).await.unwrap().profile);
        w.clock.advance(10);
    }
    // Oldest lastUsed first (F-4.2), exact within this process...
    assert_eq!(
        served,
        ["anthropic:a", "anthropic:b", "anthropic:a", "anthropic:b"]
    );
    // ...while the file got each profile's first success only: the later
    // ones changed nothing but lastUsed, within the write interval.
    let usage = w.store.usage().unwrap();
    assert_eq!(usage["anthropic:a"].last_used, Some(NOW));
    assert_eq!(usage["anthropic:b"].last_used, Some(NOW + 10));
    // Past the interval the next success is written again.
    w.clock
        .advance(failover::runner::LAST_USED_WRITE_INTERVAL_MS);
    let next = r.run(&RunOptions::default(), &()).await.unwrap().profile;
    let now = failover::time::Clock::now_ms(&w.clock);
    assert_eq!(w.store.usage().unwrap()[&next].last_used, Some(now));
}

/// Holds its first calls until all of them are in flight (runs that have
/// all read the routing state before any records its success), then lets
/// a millisecond pass for each, so that each success has its own time;
/// later calls answer at once.
struct Gathered {
    barrier: tokio::sync::Barrier,
    first: usize,
    calls: std::sync::atomic::AtomicUsize,
    clock: VirtualClock,
}

impl Provider for Gathered {
    type Request = ();
    type Reply = String;

    async fn call(&self, target: &Target, _: &()) -> Result<String, CallError> {
        let n = self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if n < self.first {
            self.barrier.wait().await;
            self.clock.advance(1);
        }
        Ok(format!("reply via {}", target.profile))
    }
}

/// Counts the routing-state writes of a store.
#[derive(Debug, Default)]
struct CountedWrites(Mutex<usize>);

impl failover::state::StateWatch for CountedWrites {
    fn usage_seen(&self, _: &str, _: &failover::auth::Usage) {}
    fn usage_written(&self, _: &str, _: &failover::auth::Usage) {
        *self.0.lock().unwrap() += 1;
    }
    fn session_seen(&self, _: &str, _: &SessionEntry) {}
    fn session_written(&self, _: &str, _: &SessionEntry) {}
}

#[tokio::test]
async fn concurrent_successes_on_one_old_last_used_write_it_once() {
    const RUNS: usize = 4;
    let w = world(&["anthropic:a"]);
    let mut config = strict_config();
    config.agents.defaults.model.fallbacks = None;
    let writes = Arc::new(CountedWrites::default());
    let store = w.store.clone().with_watch(writes.clone());
    let provider = Gathered {
        barrier: tokio::sync::Barrier::new(RUNS),
        first: RUNS,
        calls: Default::default(),
        clock: w.clock.clone(),
    };
    let r = Runner::new(
        policy(),
        config,
        store,
        w.sessions.clone(),
        provider,
        w.clock.clone(),
    );
    let options = RunOptions::default();
    let runs = (0..RUNS).map(|_| r.run(&options, &()));
    for outcome in futures_util::future::join_all(runs).await {
        assert_eq!(outcome.unwrap().profile, "anthropic:a");
    }
    // Each run read no lastUsed before its call; one of them writes it,
    // the others' uses stay in memory within the write interval.
    assert_eq!(*writes.0.lock().unwrap(), 1, "every success wrote lastUsed");
    let written = w.store.usage().unwrap()["anthropic:a"].last_used.unwrap();
    assert!(written > NOW && written <= NOW + RUNS as u64);
    // Past the interval, a success writes again.
    w.clock
        .advance(failover::runner::LAST_USED_WRITE_INTERVAL_MS);
    r.run(&options, &()).await.unwrap();
    assert_eq!(*writes.0.lock().unwrap(), 2);
}

#[tokio::test]
async fn a_success_that_writes_asks_the_policy_once_when_the_state_held_still() {
    // The policy is pure: a success decided on the state it then finds
    // under the lock is not asked again. A run that writes its success
    // makes as many policy calls as one that keeps it in memory.
    use failover::time::Clock as _;
    let engine = PolicyEngine::new().unwrap();
    let policy = Arc::new(Policy::default_policy(&engine).unwrap());
    let w = world(&["anthropic:a"]);
    let mut config = strict_config();
    config.agents.defaults.model.fallbacks = None;
    let r = Runner::new(
        policy.clone(),
        config,
        w.store.clone(),
        w.sessions.clone(),
        Scripted::default(),
        w.clock.clone(),
    );
    let options = RunOptions::default();
    // The first run fills the chain's memo and writes lastUsed.
    r.run(&options, &()).await.unwrap();
    let calls_of_a_run = || async {
        let before = policy.stats().calls;
        r.run(&options, &()).await.unwrap();
        policy.stats().calls - before
    };
    w.clock
        .advance(failover::runner::LAST_USED_WRITE_INTERVAL_MS);
    let writing = calls_of_a_run().await;
    let written = w.store.usage().unwrap()["anthropic:a"].last_used;
    assert_eq!(written, Some(w.clock.now_ms()), "the success wrote");
    w.clock.advance(1);
    let kept = calls_of_a_run().await;
    assert_eq!(w.store.usage().unwrap()["anthropic:a"].last_used, written);
    assert_eq!(
        writing, kept,
        "a written success asked record-success twice"
    );
}

#[tokio::test]
async fn a_success_is_decided_again_on_state_another_writer_changed_during_the_call() {
    // Another process records a failure of the profile while the call is
    // in flight: the success is decided on that state, not on the one
    // read before the call (record-success keeps `lastFailureAt`).
    let w = world(&["anthropic:a"]);
    let store = w.store.clone();
    let edit = Arc::new(move || {
        store
            .update_usage(|u| {
                u.entry("anthropic:a".into()).or_default().last_failure_at = Some(NOW - 5);
                Ok(())
            })
            .unwrap();
    });
    let provider = Scripted::default().then(PRIMARY, Outcome::EditThenReply(edit));
    let r = runner(&w, strict_config(), provider);
    assert_eq!(
        r.run(&RunOptions::default(), &()).await.unwrap().profile,
        "anthropic:a"
    );
    let usage = w.store.usage().unwrap()["anthropic:a"].clone();
    assert_eq!(usage.last_used, Some(NOW));
    assert_eq!(usage.last_failure_at, Some(NOW - 5), "{usage:?}");
}

// Project rules beyond the seeds (spec §12).

#[tokio::test]
async fn a_timeout_tries_the_providers_next_profile_before_the_next_model() {
    // F-12.1: one key's timeout may be its own stuck connection.
    let w = world(ALL);
    let provider = Scripted::default().then(PRIMARY, Outcome::Fail(504, "gateway timeout"));
    let r = runner(&w, config(), provider);
    let outcome = r.run(&RunOptions::default(), &()).await.unwrap();
    assert_eq!(outcome.model, PRIMARY);
    assert_eq!(outcome.profile, "anthropic:b");
    let usage = w.store.usage().unwrap();
    let a = usage.get("anthropic:a").cloned().unwrap_or_default();
    assert_eq!(
        a.cooldown_until, None,
        "a timeout does not cool the key (F-6.1)"
    );
    // Both keys time out: one rotation, then the next model.
    let provider = Scripted::default()
        .then(PRIMARY, Outcome::Fail(504, "gateway timeout"))
        .then(PRIMARY, Outcome::Fail(504, "gateway timeout"))
        .then(PRIMARY, Outcome::Fail(504, "gateway timeout"));
    let w = world(&["anthropic:a", "anthropic:b", "anthropic:c", "openai:a"]);
    let r = runner(&w, config(), provider);
    let outcome = r.run(&RunOptions::default(), &()).await.unwrap();
    assert_eq!(outcome.model, FALLBACK);
    assert_eq!(
        r.provider().models_called(),
        [PRIMARY, PRIMARY, FALLBACK],
        "one rotation, not three"
    );
}

#[tokio::test]
async fn a_model_that_hangs_twice_is_skipped_for_a_minute_then_one_trial_decides() {
    // F-12.3.
    let w = world(ALL);
    let provider = Scripted::default()
        .then(PRIMARY, Outcome::Hang)
        .then(PRIMARY, Outcome::Hang);
    let r = runner(&w, config(), provider);
    // A silent provider: the next model, not the primary's next key.
    let first = r.run(&RunOptions::default(), &()).await.unwrap();
    assert_eq!(first.model, FALLBACK);
    assert_eq!(r.provider().models_called(), [PRIMARY, FALLBACK]);
    assert_eq!(r.model_health().of(PRIMARY).hangs, 1);
    w.clock.advance(1_000);
    r.run(&RunOptions::default(), &()).await.unwrap();
    assert_eq!(r.model_health().of(PRIMARY).hangs, 2);
    // Slow: skipped without a call while others remain.
    w.clock.advance(1_000);
    let second = r.run(&RunOptions::default(), &()).await.unwrap();
    assert_eq!(second.model, FALLBACK);
    assert_eq!(
        r.provider().models_called().len(),
        5,
        "no call to the slow model"
    );
    let skipped = &second.attempts[0];
    assert_eq!(
        (
            skipped.model.as_str(),
            skipped.profile.as_deref(),
            skipped.reason
        ),
        (PRIMARY, None, RecordedReason::Timeout)
    );
    assert!(skipped.summary.contains("slow"), "{}", skipped.summary);
    // Nothing else to try: a slow model is still tried.
    let strict = RunOptions {
        model: Some(PRIMARY.into()),
        ..RunOptions::default()
    };
    assert_eq!(r.run(&strict, &()).await.unwrap().model, PRIMARY);
    // That answer cleared it; make it slow again and wait out the minute.
    let provider = Scripted::default()
        .then(PRIMARY, Outcome::Hang)
        .then(PRIMARY, Outcome::Hang);
    let r = runner(&w, config(), provider);
    r.run(&RunOptions::default(), &()).await.unwrap();
    r.run(&RunOptions::default(), &()).await.unwrap();
    w.clock.advance(61_000);
    // The half-open trial answers: healthy again.
    let trial = r.run(&RunOptions::default(), &()).await.unwrap();
    assert_eq!(trial.model, PRIMARY);
    assert_eq!(r.model_health().of(PRIMARY), Default::default());
}

#[tokio::test]
async fn an_auto_override_reprobes_the_primary_once_per_interval() {
    // F-12.2.
    let w = world(ALL);
    let provider = Scripted::default()
        .then(PRIMARY, Outcome::Fail(429, "rate limited"))
        .then(PRIMARY, Outcome::Fail(429, "rate limited"))
        .then(PRIMARY, Outcome::Fail(503, "overloaded"));
    let r = runner(&w, config(), provider);
    let fell_back = r.run(&session("s1"), &()).await.unwrap();
    assert_eq!(fell_back.model, FALLBACK);
    let entry = w.sessions.get("s1").unwrap();
    assert_eq!(entry.model().as_deref(), Some(FALLBACK));
    assert_eq!(entry.model_override.primary_probe_at, Some(NOW));
    // Inside the interval: the override, no probe.
    w.clock.advance(60_000);
    r.run(&session("s1"), &()).await.unwrap();
    assert_eq!(
        r.provider().models_called(),
        [PRIMARY, PRIMARY, FALLBACK, FALLBACK]
    );
    // Five minutes after the fallback: one attempt on the primary, which
    // fails; the run goes on with the override, which stays.
    w.clock.advance(240_000);
    let probed = r.run(&session("s1"), &()).await.unwrap();
    assert_eq!(probed.model, FALLBACK);
    assert_eq!(probed.source, SelectionSource::AutoOverride);
    assert_eq!(
        r.provider().models_called()[4..],
        [PRIMARY.to_owned(), FALLBACK.to_owned()],
        "one probe with one profile"
    );
    let entry = w.sessions.get("s1").unwrap();
    assert_eq!(
        entry.model().as_deref(),
        Some(FALLBACK),
        "a failed probe keeps the override"
    );
    assert_eq!(entry.model_override.primary_probe_at, Some(NOW + 300_000));
    // Five minutes later the primary answers: the override goes.
    w.clock.advance(300_000);
    let back = r.run(&session("s1"), &()).await.unwrap();
    assert_eq!(back.model, PRIMARY);
    assert_eq!(back.source, SelectionSource::ConfiguredDefault);
    let entry = w.sessions.get("s1").unwrap();
    assert_eq!(
        entry.model(),
        None,
        "a successful probe clears the override"
    );
    // An interval of 0 never probes.
    let mut never = config();
    never.agents.defaults.model.primary_probe_interval_seconds = Some(0.0);
    let w = world(ALL);
    w.sessions
        .update("s2", |e| {
            e.model_override.provider = Some("openai".into());
            e.model_override.model = Some("gpt-4o".into());
            e.model_override.source = Some(OverrideSource::Auto);
        })
        .unwrap();
    let r = runner(&w, never, Scripted::default());
    assert_eq!(r.run(&session("s2"), &()).await.unwrap().model, FALLBACK);
    assert_eq!(r.provider().models_called(), [FALLBACK]);
}

#[tokio::test]
async fn a_failed_cross_provider_fallback_drops_its_profile_pin() {
    // F-12.5: the pin written for the fallback's provider goes with the
    // model override when that fallback fails.
    let w = world(ALL);
    let provider = Scripted::default()
        .then(PRIMARY, Outcome::Fail(429, "rate limited"))
        .then(PRIMARY, Outcome::Fail(429, "rate limited"))
        .then(FALLBACK, Outcome::Fail(401, "unauthorized"))
        .then(LAST, Outcome::Fail(401, "unauthorized"));
    let r = runner(&w, config(), provider);
    assert!(r.run(&session("s1"), &()).await.is_err());
    let entry = w.sessions.get("s1").unwrap();
    assert_eq!(entry.model(), None, "the model override is rolled back");
    let pin = entry.profile_pin.profile.unwrap_or_default();
    assert!(
        pin.starts_with("anthropic:"),
        "the failed fallbacks' pins are gone, the primary's stays: {pin:?}"
    );
}

#[tokio::test]
async fn a_retry_after_past_an_open_cooldown_extends_it() {
    // F-12.6: the primary is probed near the end of its cooldown and the
    // provider asks for an hour: the model is blocked for an hour.
    let w = world(&["anthropic:a", "openai:a", "google:a"]);
    w.store
        .update_usage(|u| {
            let usage = u.entry("anthropic:a".into()).or_default();
            usage.cooldown_until = Some(NOW + 60_000);
            usage.cooldown_reason = Some(RecordedReason::RateLimit);
            usage.error_count = 1;
            usage.last_failure_at = Some(NOW - 1_000);
            Ok(())
        })
        .unwrap();
    let provider = Scripted::default().then(
        PRIMARY,
        Outcome::Error(
            ProviderError::message("rate limited")
                .with_status(429)
                .with_header("retry-after", "3600"),
        ),
    );
    let r = runner(&w, config(), provider);
    assert_eq!(
        r.run(&RunOptions::default(), &()).await.unwrap().model,
        FALLBACK
    );
    assert_eq!(r.provider().models_called(), [PRIMARY, FALLBACK], "probed");
    let usage = w.store.usage().unwrap()["anthropic:a"].clone();
    assert_eq!(
        usage.blocked_until(Some(PRIMARY), NOW),
        Some(NOW + 3_600_000)
    );
    assert_eq!(usage.error_count, 2);
}
