//! Modules built for earlier contracts (tests/fixtures/legacy-policy): the
//! host admits them and says which contract each speaks. A 0.4.0 module,
//! from before `classify-batch`, gets its batches as single `classify`
//! calls, with the verdicts the current default policy gives. A 0.5.0
//! module is asked every `model-gate`, `record-attempt-end` and
//! `resolve-selection` that 0.6.0 answers without a call. A 0.6.0 module,
//! whose plans do not say where they hold, is asked every plan. A 0.7.0
//! module gets its reports as records (`classify`, `classify-batch`), with
//! the verdicts the packed calls of 0.8.0 give.

use std::sync::OnceLock;

use failover::auth::{CredentialKind, OrderRequest, RecordedReason, StoredProfile, Usage};
use failover::policy::{gate, ContractVersion, DEFAULT_POLICY};
use failover::runner::{
    CandidateFacts, Gate, ModelHealth, OverrideSource, PlanHold, SelectionRequest, SessionOverride,
};
use failover::{Limits, Policy, ProviderError};

/// 2026-01-01 00:00 UTC.
const NOW: u64 = 1_767_225_600_000;

use super::support::{default_policy, engine};
use crate::support::guests;

const REFERENCE: &str = include_str!("../cases/classify-reference.jsonl");

fn legacy_bytes() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| guests::component("tests/fixtures/legacy-policy", &[]))
}

fn v0_5_bytes() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| guests::component("tests/fixtures/legacy-policy", &["contract-0-5"]))
}

fn v0_6_bytes() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| guests::component("tests/fixtures/legacy-policy", &["contract-0-6"]))
}

fn v0_7_bytes() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| guests::component("tests/fixtures/legacy-policy", &["contract-0-7"]))
}

fn reference_errors() -> Vec<ProviderError> {
    REFERENCE
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| ProviderError::from_json_str(line).expect("a reference error"))
        .collect()
}

#[test]
fn a_module_built_for_0_4_0_passes_the_gate_and_says_so() {
    let (policy, report) = gate::check(engine(), legacy_bytes(), Limits::default());
    let policy = policy.unwrap_or_else(|| panic!("{}", report.render()));
    assert_eq!(policy.contract(), ContractVersion::V0_4);
    assert_eq!(policy.version().contract, "failover:policy@0.4.0");
    // Every conformance case, but no batch case: it has no classify-batch.
    assert_eq!(report.cases.len(), 115);
    assert!(report.cases.iter().all(|(name, _)| ![
        gate::BATCH_CASE,
        gate::FIXED_CASE,
        gate::PLAN_CASE
    ]
    .contains(&name.as_str())));
    let current = Policy::load(engine(), DEFAULT_POLICY, Limits::default()).unwrap();
    assert_eq!(current.contract(), ContractVersion::Current);
}

#[test]
fn its_batches_are_single_calls_with_the_current_verdicts() {
    let legacy = Policy::load(engine(), legacy_bytes(), Limits::default()).unwrap();
    let errors = reference_errors();
    let before = legacy.stats().calls;
    let verdicts: Vec<_> = legacy
        .classify_many(&errors, 0)
        .into_iter()
        .map(|v| v.expect("classifies"))
        .collect();
    // One classify call per report.
    assert_eq!(legacy.stats().calls - before, errors.len() as u64);
    let current: Vec<_> = errors
        .iter()
        .map(|e| default_policy().classify(e, 0).expect("classifies"))
        .collect();
    assert_eq!(verdicts, current);
}

#[test]
fn a_module_built_for_0_5_0_passes_the_gate_with_its_batch_and_says_so() {
    let (policy, report) = gate::check(engine(), v0_5_bytes(), Limits::default());
    let policy = policy.unwrap_or_else(|| panic!("{}", report.render()));
    assert_eq!(policy.contract(), ContractVersion::V0_5);
    assert_eq!(policy.version().contract, "failover:policy@0.5.0");
    let names: Vec<&str> = report.cases.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names.len(), 116, "{names:?}");
    assert!(names.contains(&gate::BATCH_CASE));
    assert!(!names.contains(&gate::FIXED_CASE) && !names.contains(&gate::PLAN_CASE));
    let (_, current) = gate::check(engine(), DEFAULT_POLICY, Limits::default());
    assert!(current.passed(), "{}", current.render());
    assert!(current
        .cases
        .iter()
        .any(|(name, _)| name == gate::FIXED_CASE));
}

/// Module calls `ask` makes on `policy`.
fn calls_of(policy: &Policy, ask: impl Fn(&Policy)) -> u64 {
    let before = policy.stats().calls;
    ask(policy);
    policy.stats().calls - before
}

#[test]
fn only_a_0_5_0_module_is_asked_what_0_6_0_fixes() {
    let old = Policy::load(engine(), v0_5_bytes(), Limits::default()).unwrap();
    let current = Policy::load(engine(), DEFAULT_POLICY, Limits::default()).unwrap();
    let idle = ModelHealth::default();
    let hung_once = ModelHealth {
        hangs: 1,
        last_hang_at: Some(NOW - 1_000),
        ..idle
    };
    let selection = SelectionRequest {
        configured_primary: Some("openai/gpt-4o".into()),
        now_ms: NOW,
        ..SelectionRequest::default()
    };
    let with_override = SelectionRequest {
        session_override: Some(SessionOverride {
            model: "anthropic/claude-sonnet-4".into(),
            source: Some(OverrideSource::Auto),
            origin: Some("openai/gpt-4o".into()),
        }),
        ..selection.clone()
    };
    let clean = Usage {
        last_used: Some(NOW - 60_000),
        last_failure_at: Some(NOW - 3_600_000),
        ..Usage::default()
    };
    let cooled = Usage {
        cooldown_until: Some(NOW + 60_000),
        cooldown_reason: Some(RecordedReason::RateLimit),
        error_count: 1,
        ..clean.clone()
    };
    let ask_all = |policy: &Policy| {
        for now in [NOW, NOW + 60_000] {
            let gate = policy.model_gate(&idle, true, now).unwrap();
            assert_eq!((gate.gate, gate.health), (Gate::Open, idle));
            assert_eq!(policy.record_attempt_end(&idle, false, now).unwrap(), idle);
            let used = policy
                .record_success(&clean, Some("openai/gpt-4o"), now)
                .unwrap();
            assert_eq!(
                used,
                Usage {
                    last_used: Some(now),
                    ..clean.clone()
                }
            );
            let timed = SelectionRequest {
                now_ms: now,
                ..selection.clone()
            };
            let chosen = policy.resolve_selection(&timed).unwrap();
            assert_eq!(chosen.model.as_deref(), Some("openai/gpt-4o"));
        }
    };
    // 0.5.0: two gates, two attempt ends, two successes, two selections.
    assert_eq!(calls_of(&old, ask_all), 8);
    // 0.6.0: the answers are fixed, and the untimed selection is kept
    // (asked at most once, here already by the gate).
    assert_eq!(calls_of(&current, ask_all), 1);
    assert_eq!(calls_of(&current, ask_all), 0);
    // What is not fixed is asked of both, and both answer alike.
    let not_fixed = |policy: &Policy| {
        let gate = policy.model_gate(&hung_once, true, NOW).unwrap();
        assert_eq!(gate.gate, Gate::Open);
        let slow = policy.record_attempt_end(&hung_once, true, NOW).unwrap();
        assert_eq!(slow.hangs, 2);
        assert_eq!(
            policy.record_attempt_end(&idle, true, NOW).unwrap().hangs,
            1
        );
        let kept = policy.resolve_selection(&with_override).unwrap();
        assert_eq!(kept.model.as_deref(), Some("anthropic/claude-sonnet-4"));
        let cleared = policy.record_success(&cooled, None, NOW).unwrap();
        assert_eq!((cleared.cooldown_until, cleared.error_count), (None, 0));
    };
    assert_eq!(calls_of(&old, not_fixed), 5);
    assert_eq!(calls_of(&current, not_fixed), 5);
}

#[test]
fn a_0_6_0_module_passes_the_gate_and_is_asked_every_plan_the_current_one_keeps() {
    let (old, report) = gate::check(engine(), v0_6_bytes(), Limits::default());
    let old = old.unwrap_or_else(|| panic!("{}", report.render()));
    assert_eq!(old.contract(), ContractVersion::V0_6);
    assert_eq!(old.version().contract, "failover:policy@0.6.0");
    let names: Vec<&str> = report.cases.iter().map(|(name, _)| name.as_str()).collect();
    assert!(names.contains(&gate::PLAN_CASE) && !names.contains(&gate::HOLD_CASE));
    let current = Policy::load(engine(), DEFAULT_POLICY, Limits::default()).unwrap();
    let order = |now_ms, last_used| OrderRequest {
        provider: "openai".into(),
        stored: vec![StoredProfile {
            id: "openai:a".into(),
            provider: "openai".into(),
            kind: CredentialKind::ApiKey,
            expires: None,
            refreshable: false,
            usage: Usage {
                last_used: Some(last_used),
                ..Usage::default()
            },
        }],
        model: Some("openai/gpt-4o".into()),
        now_ms,
        ..OrderRequest::default()
    };
    let facts = CandidateFacts::default();
    // A request a second for a minute, each after the last one's success.
    let ask_all = |policy: &Policy| {
        (0..60u64)
            .map(|s| {
                let at = NOW + 1_000 * s;
                policy
                    .plan_candidate(order(at, at - 1_000), &facts)
                    .unwrap()
            })
            .collect::<Vec<_>>()
    };
    let counted = |policy: &Policy| {
        let before = policy.stats().calls;
        let plans = ask_all(policy);
        (policy.stats().calls - before, plans)
    };
    let (old_calls, old_plans) = counted(&old);
    let (current_calls, current_plans) = counted(&current);
    assert_eq!((old_calls, current_calls), (60, 1));
    for (a, b) in old_plans.iter().zip(&current_plans) {
        assert_eq!((&a.ranked, &a.decision), (&b.ranked, &b.decision));
        assert_eq!(a.holds, PlanHold::ONLY_NOW);
        assert!(!b.holds.reads_last_used && b.holds.until > NOW + 59_000);
    }
}

#[test]
fn a_0_7_0_module_gets_records_and_gives_the_packed_verdicts() {
    let (old, report) = gate::check(engine(), v0_7_bytes(), Limits::default());
    let old = old.unwrap_or_else(|| panic!("{}", report.render()));
    assert_eq!(old.contract(), ContractVersion::V0_7);
    assert!(!old.contract().packs_reports() && old.contract().plans_hold());
    assert_eq!(old.version().contract, "failover:policy@0.7.0");
    let names: Vec<&str> = report.cases.iter().map(|(name, _)| name.as_str()).collect();
    assert!(names.contains(&gate::BATCH_CASE) && names.contains(&gate::HOLD_CASE));
    assert!(!names.contains(&gate::PACKED_CASE));

    let current = Policy::load(engine(), DEFAULT_POLICY, Limits::default()).unwrap();
    assert!(current.contract().packs_reports());
    let errors = reference_errors();
    let batched = |policy: &Policy| {
        let before = policy.stats().calls;
        let verdicts: Vec<_> = policy
            .classify_many(&errors, NOW)
            .into_iter()
            .map(|v| v.expect("classifies"))
            .collect();
        (policy.stats().calls - before, verdicts)
    };
    let (old_calls, old_verdicts) = batched(&old);
    let (current_calls, current_verdicts) = batched(&current);
    // One batch call each (the reference corpus fits one batch).
    assert_eq!((old_calls, current_calls), (1, 1));
    assert_eq!(old_verdicts, current_verdicts);
    let singles: Vec<_> = errors
        .iter()
        .map(|e| old.classify(e, NOW).expect("classifies"))
        .collect();
    assert_eq!(singles, current_verdicts);
}
