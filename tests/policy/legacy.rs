//! A module built for contract 0.4.0, before `classify-batch`
//! (tests/fixtures/legacy-policy): the host admits it, says which contract
//! it speaks, and does its batches with single `classify` calls, giving
//! the verdicts the current default policy gives.

use std::sync::OnceLock;

use failover::policy::{gate, ContractVersion, DEFAULT_POLICY};
use failover::{Limits, Policy, ProviderError};

use super::support::{default_policy, engine};
use crate::support::guests;

const REFERENCE: &str = include_str!("../cases/classify-reference.jsonl");

fn legacy_bytes() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| guests::component("tests/fixtures/legacy-policy", &[]))
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
    assert_eq!(policy.contract(), ContractVersion::Legacy);
    assert_eq!(policy.version().contract, "failover:policy@0.4.0");
    // Every conformance case, but no batch case: it has no classify-batch.
    assert_eq!(report.cases.len(), 115);
    assert!(report
        .cases
        .iter()
        .all(|(name, _)| name != gate::BATCH_CASE));
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
