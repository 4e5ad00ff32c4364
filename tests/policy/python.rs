//! The status-only policy written in Python
//! (`examples/policies/status-only-py/app.py`) and built with componentize-py
//! from the venv of `tests/sdk/setup.sh`. Its output imports WASI 0.2; the
//! host's stand-ins (`failover::policy::wasi`) cover exactly those imports,
//! and the module must decide as the Rust status-only policy classifies.

use std::path::PathBuf;
use std::sync::OnceLock;

use failover::report::flatten;
use failover::Limits;
use wasmtime::component::Component;

use super::sdk::v1::exports::failover::policy::runner::CandidateDecision;
use super::sdk::v1::exports::failover::policy::runner::CandidateRequest;
use super::sdk::v1::exports::failover::policy::types::{FailureReason, ModelHealth, RankedProfile};
use super::sdk::{contract_report, report_of, run_request, status_only, Module};

/// The componentized Python policy's bytes, built once per test binary.
pub(crate) fn python_policy() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("status_only_py.wasm");
        let tool = crate::sdk::python().with_file_name("componentize-py");
        crate::support::guests::python_policy(&tool, &out)
            .unwrap_or_else(|e| panic!("componentize-py failed:\n{e}"))
    })
}

fn python_module() -> &'static Module {
    static MODULE: OnceLock<Module> = OnceLock::new();
    MODULE.get_or_init(|| Module::of(python_policy()))
}

#[test]
fn the_python_policy_imports_only_wasi_with_stand_ins_and_names_itself() {
    let engine = wasmtime::Engine::default();
    let component = Component::new(&engine, python_policy()).unwrap();
    let imports: Vec<String> = component
        .component_type()
        .imports(&engine)
        .map(|(name, _)| name.to_owned())
        .collect();
    assert!(!imports.is_empty(), "componentize-py's output imports WASI");
    assert!(
        imports.iter().all(|name| name.starts_with("wasi:")),
        "{imports:?}"
    );
    assert!(failover::policy::wasi::foreign_imports(&engine, &component).is_empty());
    assert_eq!(python_module().name(), "status-only-py");
}

#[test]
fn the_python_policy_classifies_every_corpus_case_as_the_rust_one() {
    let python = python_module();
    let rust = status_only();
    let mut disagreements = Vec::new();
    for (error, now_ms) in super::cases::every_input() {
        let report = contract_report(&flatten(&error, now_ms, &Limits::default()));
        let (py, rs) = (python.classify(&report), rust.classify(&report));
        if (py.reason, py.detail) != (rs.reason, rs.detail) {
            disagreements.push(format!("{:?}: python {py:?}, rust {rs:?}", error.status));
        }
    }
    assert!(disagreements.is_empty(), "{disagreements:#?}");
    assert_eq!(
        python.classify(&report_of(429, "")).reason,
        FailureReason::RateLimit
    );
}

#[test]
fn the_python_policy_plans_and_decides() {
    let python = python_module();
    let plan = python.plan_run(&run_request(
        "openai/gpt-4o",
        &["anthropic/claude-sonnet-4"],
    ));
    assert_eq!(
        plan.candidates,
        ["openai/gpt-4o", "anthropic/claude-sonnet-4"]
    );
    assert!(!plan.strict);
    let request = CandidateRequest {
        model: "openai/gpt-4o".into(),
        primary: true,
        sibling: false,
        later_candidates: true,
        ranked: vec![RankedProfile {
            id: "openai:work".into(),
            blocked: None,
        }],
        last_probe_at: None,
        transient_probe_used: false,
        health: ModelHealth {
            strikes: 0,
            last_strike_at: None,
            slow_until: None,
            trial_started_at: None,
        },
        now_ms: 1_700_000_000_000,
    };
    let decision = python.call(|store, p| {
        p.failover_policy_runner()
            .call_decide_candidate(store, &request)
    });
    assert_eq!(
        decision,
        CandidateDecision::Attempt(vec!["openai:work".into()])
    );
}

#[test]
fn imports_beyond_wasi_0_2_get_no_stand_in() {
    let engine = wasmtime::Engine::default();
    let component = Component::new(
        &engine,
        wat::parse_str(
            r#"(component
                 (import "wasi:random/random@0.2.9" (instance))
                 (import "wasi:http/types@0.2.9" (instance))
                 (import "evil:net/socket" (instance))
               )"#,
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        failover::policy::wasi::foreign_imports(&engine, &component),
        ["wasi:http/types@0.2.9", "evil:net/socket"]
    );
}
