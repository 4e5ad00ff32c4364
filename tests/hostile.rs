//! The validation gate and the sandbox against hostile modules: a fixture
//! guest (tests/fixtures/hostile-policy) that loops, exhausts memory,
//! recurses without end, panics, answers far too much, names profiles it
//! was not given, or opens windows in the past — each refused at the gate
//! or contained at run time, the host staying up.

use crate::harness;
use crate::support::guests;

use std::sync::OnceLock;
use std::time::Duration;

use failover::auth::{
    CooldownConfig, CredentialKind, FailureEvent, OrderRequest, RecordedReason, StoredProfile,
    Usage,
};
use failover::policy::{gate, DEFAULT_POLICY};
use failover::TrapKind;
use failover::{Limits, Policy, PolicyEngine, PolicyError, ProviderError};

fn engine() -> &'static PolicyEngine {
    static ENGINE: OnceLock<PolicyEngine> = OnceLock::new();
    ENGINE.get_or_init(|| PolicyEngine::new().unwrap())
}

fn hostile() -> Policy {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    let bytes = BYTES.get_or_init(|| guests::component("tests/fixtures/hostile-policy", &[]));
    let (policy, report) = gate::admit(engine(), bytes, Limits::default())
        .unwrap_or_else(|refused| panic!("{refused}"));
    assert!(report.passed());
    policy
}

fn error_from(provider: &str) -> ProviderError {
    ProviderError::message("boom")
        .with_status(500)
        .with_provider(provider)
}

fn assert_healthy(policy: &Policy) {
    let verdict = policy
        .classify(
            &ProviderError::message("Too many requests").with_status(429),
            0,
        )
        .expect("the next call works on a fresh instance");
    assert_eq!(verdict.reason, Some(failover::Reason::RateLimit));
}

#[test]
fn the_default_policy_passes_the_gate() {
    let (policy, report) = gate::check(engine(), DEFAULT_POLICY, Limits::default());
    assert!(policy.is_some(), "{}", report.render());
    // The count docs/performance.md quotes.
    assert_eq!(report.cases.len(), 122);
    assert!(report.render().ends_with("verdict: accepted\n"));
}

#[test]
fn traps_at_run_time_are_contained() {
    let policy = hostile();
    for (provider, expected) in [
        ("hostile-loop", Some(TrapKind::OutOfFuel)),
        ("hostile-recursion", Some(TrapKind::StackOverflow)),
        ("hostile-memory", Some(TrapKind::Memory)),
        ("hostile-panic", None),
    ] {
        let error = policy.classify(&error_from(provider), 0).unwrap_err();
        match (&error, &expected) {
            (PolicyError::Trap { kind, .. }, Some(expected)) => {
                assert_eq!(kind, expected, "{provider}")
            }
            (PolicyError::Trap { .. }, None) => {}
            _ => panic!("{provider}: {error:?}"),
        }
        assert!(error.to_string().contains("classify"), "{error}");
        // A sentence, not a backtrace.
        assert!(!error.to_string().contains('\n'), "{error}");
        assert_healthy(&policy);
    }
    assert!(policy.stats().traps >= 4);
}

#[test]
fn a_report_that_traps_a_batch_fails_alone() {
    let policy = hostile();
    let errors = [
        ProviderError::message("Too many requests").with_status(429),
        error_from("hostile-loop"),
        ProviderError::message("overloaded_error").with_status(529),
    ];
    let verdicts = policy.classify_many(&errors, 0);
    assert_eq!(verdicts.len(), 3);
    let reason = |i: usize| verdicts[i].as_ref().map(|v| v.reason).ok().flatten();
    assert_eq!(reason(0), Some(failover::Reason::RateLimit));
    assert_eq!(reason(2), Some(failover::Reason::Overloaded));
    match &verdicts[1] {
        Err(PolicyError::Trap { kind, .. }) => assert_eq!(*kind, TrapKind::OutOfFuel),
        other => panic!("{other:?}"),
    }
    assert_healthy(&policy);
}

#[test]
fn the_wall_clock_deadline_stops_what_fuel_would_not() {
    let policy = hostile();
    policy.set_limits(Limits {
        fuel_per_call: u64::MAX / 2,
        call_deadline: Duration::from_millis(100),
        ..Limits::default()
    });
    let started = std::time::Instant::now();
    let error = policy.classify(&error_from("hostile-loop"), 0).unwrap_err();
    assert!(
        matches!(
            error,
            PolicyError::Trap {
                kind: TrapKind::Deadline,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    policy.set_limits(Limits::default());
    assert_healthy(&policy);
}

fn stored(id: &str) -> StoredProfile {
    StoredProfile {
        id: id.into(),
        provider: "hostile-unknown".into(),
        kind: CredentialKind::ApiKey,
        expires: None,
        refreshable: false,
        usage: Usage::default(),
    }
}

fn order(provider: &str) -> OrderRequest {
    OrderRequest {
        provider: provider.into(),
        explicit_order: None,
        configured: Vec::new(),
        stored: vec![stored("hostile-unknown:a")],
        model: None,
        now_ms: 1_000_000,
    }
}

#[test]
fn invalid_decisions_at_run_time_are_refused() {
    let policy = hostile();
    let unknown = policy
        .order_profiles(&order("hostile-unknown"))
        .unwrap_err();
    assert!(
        unknown.to_string().contains("ghost:never-given"),
        "{unknown}"
    );
    // 200,000 entries: refused (unknown profile, or past the memory cap).
    let oversized = policy
        .order_profiles(&order("hostile-oversized"))
        .unwrap_err();
    assert!(
        matches!(
            oversized,
            PolicyError::InvalidOutput { .. } | PolicyError::Trap { .. }
        ),
        "{oversized:?}"
    );
    let past = policy
        .record_failure(
            &Usage::default(),
            &FailureEvent {
                provider: "hostile-past".into(),
                reason: RecordedReason::RateLimit,
                model: None,
                retry_after_ms: None,
                reset_at_ms: None,
                now_ms: 1_000_000,
            },
            &CooldownConfig {
                billing_backoff_ms: 1,
                billing_backoff_ms_by_provider: Vec::new(),
                billing_max_ms: 1,
                failure_window_ms: 1,
            },
        )
        .unwrap_err();
    assert!(past.to_string().contains("cooldownUntil"), "{past}");
    assert!(policy.order_profiles(&order("other")).is_ok());
    assert_healthy(&policy);
}

#[test]
fn a_module_that_keeps_state_between_calls_is_refused() {
    let bytes = guests::component("tests/fixtures/hostile-policy", &["stateful"]);
    let (policy, report) = gate::check(engine(), &bytes, Limits::default());
    assert!(policy.is_none(), "{}", report.render());
    let text = report.render();
    assert!(text.contains("asked the same twice"), "{text}");
    // Each failure shows the input it failed on.
    assert!(text.contains("input: {\"args\""), "{text}");
    let failures: Vec<_> = report.failures().collect();
    assert!(
        failures
            .iter()
            .all(|(name, _)| name.starts_with("classify:")),
        "{text}"
    );
}

#[test]
fn a_module_whose_strict_plans_go_on_to_other_models_is_refused() {
    let bytes = guests::component("tests/fixtures/hostile-policy", &["strict-leaks"]);
    let (policy, report) = gate::check(engine(), &bytes, Limits::default());
    assert!(policy.is_none(), "{}", report.render());
    let text = report.render();
    assert!(
        text.contains("FAIL plan-run")
            && text.contains("a strict plan has more than one candidate"),
        "{text}"
    );
    assert!(
        report
            .failures()
            .all(|(name, _)| name.starts_with("plan-run:")),
        "{text}"
    );
}

#[test]
fn a_module_that_misbehaves_on_the_corpus_is_refused_with_a_report() {
    let bytes = guests::component("tests/fixtures/hostile-policy", &["refuse"]);
    let (policy, report) = gate::check(engine(), &bytes, Limits::default());
    assert!(policy.is_none());
    let text = report.render();
    assert!(
        text.contains("FAIL order-profiles") && text.contains("ghost:never-given"),
        "{text}"
    );
    assert!(
        text.contains("FAIL record-failure") && text.contains("cooldownUntil"),
        "{text}"
    );
    assert!(text.ends_with("verdict: refused\n"), "{text}");
}

#[test]
fn a_module_importing_what_no_standin_covers_is_refused_before_the_corpus() {
    let bytes = wat::parse_str(
        r#"(component
            (import "wasi:http/outgoing-handler@0.2.0" (instance))
        )"#,
    )
    .unwrap();
    let (policy, report) = gate::check(engine(), &bytes, Limits::default());
    assert!(policy.is_none());
    assert!(report.cases.is_empty());
    let text = report.render();
    assert!(
        text.contains("wasi:http/outgoing-handler") && text.contains("refused"),
        "{text}"
    );
}

/// A gateway whose policy is the hostile module, serving one provider
/// (`name`, under `BASE/{prefix}/v1`) with one static key `{prefix}-key-0123456789`.
async fn gateway_with_hostile_policy(name: &str, prefix: &str) -> harness::Harness {
    let providers = format!(r#""{name}": {{ baseUrl: "BASE/{prefix}/v1", models: ["m1"] }},"#);
    let h = harness::start_setup(harness::Setup {
        providers: &providers,
        policy: Some(std::sync::Arc::new(hostile())),
        ..harness::Setup::default()
    })
    .await;
    let key = format!("{prefix}-key-0123456789");
    h.store
        .update_profiles(|file| {
            file.put_static(&format!("{name}:a"), name, CredentialKind::ApiKey, &key)
        })
        .unwrap();
    h
}

/// A policy that traps while recording a success: the upstream answered,
/// so the client gets the answer; the trap is logged and counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_trap_after_a_good_answer_still_serves_it() {
    let h = gateway_with_hostile_policy("hostile-success", "hs").await;
    // A failure counted, so the success has something to clear.
    h.store
        .update_usage(|usage| {
            usage
                .entry("hostile-success:a".into())
                .or_default()
                .error_count = 1;
            Ok(())
        })
        .unwrap();
    let answer = h.chat("hostile-success/m1", false, None).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.content(), "hello from m1 with hs-key-0123456789");
    let status = h.get("/status").await.json();
    assert_eq!(
        status["counters"]["policyErrorsAfterSuccess"], 1,
        "{status}"
    );
    h.stop().await;
}

/// A policy whose `record-failure` answer the host refuses (a window in the
/// past): a policy error, reported as one — not a state error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_record_failure_is_a_policy_error() {
    let h = gateway_with_hostile_policy("hostile-past", "hp").await;
    h.up.then(
        "m1",
        crate::upstream::Behaviour::Status(429, Vec::new(), "slow down".into()),
    );
    let answer = h.chat("hostile-past/m1", false, None).await;
    assert_eq!(answer.status, 500, "{}", answer.text);
    assert_eq!(
        answer.json()["error"]["code"],
        "policy_error",
        "{}",
        answer.text
    );
    assert!(answer.text.contains("record-attempt"), "{}", answer.text);
    h.stop().await;
}
