//! Policies written on the policy SDK (`policy-sdk/`), built as 1.0
//! components and run under wasmtime, each call in a fresh instance: the
//! default policy as the SDK exports it, a status-only classifier and a
//! policy that never falls back to another provider
//! (`examples/policies/`). Each must export exactly the 1.0 world, keep
//! the defaults it does not override, and change what it says it changes.

use std::sync::OnceLock;

use failover::report::{flatten, FlatReport};
use failover::Limits;
use wasmtime::component::{Component, Linker};
use wasmtime::{Engine, Store};

use super::contract_one::assert_exports_the_contract;
use crate::support::guests;

pub(super) mod v1 {
    wasmtime::component::bindgen!({
        world: "policy",
        path: "wit",
        additional_derives: [PartialEq],
    });
}

use v1::exports::failover::policy::runner::{RunPlan, RunRequest};
use v1::exports::failover::policy::types::{
    Classification, ErrorLevel, ErrorReport, FailureReason,
};

/// A built 1.0 module; every call instantiates it afresh, its WASI
/// imports (if any) linked to the host's stand-ins.
pub(super) struct Module {
    engine: Engine,
    component: Component,
    linker: Linker<()>,
}

impl Module {
    fn built(dir: &str, features: &[&str]) -> Module {
        let bytes = guests::component(dir, features);
        assert_exports_the_contract(&bytes);
        Module::of(&bytes)
    }

    /// The component `bytes`, which may import only what has stand-ins.
    pub(super) fn of(bytes: &[u8]) -> Module {
        let engine = Engine::default();
        let component = Component::new(&engine, bytes).expect("the module compiles");
        let foreign = failover::policy::wasi::foreign_imports(&engine, &component);
        assert!(
            foreign.is_empty(),
            "imports without a stand-in: {foreign:?}"
        );
        let mut linker = Linker::new(&engine);
        failover::policy::wasi::link_standins(&mut linker, &component).expect("stand-ins link");
        Module {
            engine,
            component,
            linker,
        }
    }

    pub(super) fn call<T>(
        &self,
        f: impl FnOnce(&mut Store<()>, &v1::Policy) -> wasmtime::Result<T>,
    ) -> T {
        let mut store = Store::new(&self.engine, ());
        let policy = v1::Policy::instantiate(&mut store, &self.component, &self.linker)
            .expect("the module instantiates");
        f(&mut store, &policy).expect("the call returns")
    }

    pub(super) fn classify(&self, report: &ErrorReport) -> Classification {
        self.call(|store, p| p.failover_policy_classifier().call_classify(store, report))
    }

    pub(super) fn plan_run(&self, request: &RunRequest) -> RunPlan {
        self.call(|store, p| p.failover_policy_runner().call_plan_run(store, request))
    }

    pub(super) fn name(&self) -> String {
        self.call(|store, p| p.failover_policy_meta().call_describe(store))
            .name
    }
}

fn default_module() -> &'static Module {
    static MODULE: OnceLock<Module> = OnceLock::new();
    MODULE.get_or_init(|| Module::built("policy-sdk/default-policy", &[]))
}

pub(super) fn status_only() -> &'static Module {
    static MODULE: OnceLock<Module> = OnceLock::new();
    MODULE.get_or_init(|| Module::built("examples/policies/status-only", &[]))
}

fn same_provider() -> &'static Module {
    static MODULE: OnceLock<Module> = OnceLock::new();
    MODULE.get_or_init(|| Module::built("examples/policies/same-provider", &[]))
}

/// A flattened report in the 1.0 shape: its header block back as pairs.
pub(super) fn contract_report(flat: &FlatReport) -> ErrorReport {
    let levels = flat.report.levels.iter().map(|level| ErrorLevel {
        depth: level.depth,
        status: level.status,
        code: level.code.clone(),
        error_type: level.error_type.clone(),
        param: level.param.clone(),
        message: level.message.clone(),
        details: level.details.clone(),
        headers: (level.headers.lines())
            .filter_map(|line| line.split_once(": "))
            .map(|(name, value)| (name.to_owned(), value.to_owned()))
            .collect(),
    });
    ErrorReport {
        provider: flat.report.provider.clone(),
        model: None,
        levels: levels.collect(),
        now_ms: flat.report.now_ms,
    }
}

/// A 1.0 reason by the spec's name of the core's reason.
fn reason_name(reason: FailureReason) -> &'static str {
    match reason {
        FailureReason::RateLimit => "rate_limit",
        FailureReason::Overloaded => "overloaded",
        FailureReason::Billing => "billing",
        FailureReason::Auth => "auth",
        FailureReason::AuthPermanent => "auth_permanent",
        FailureReason::Timeout => "timeout",
        FailureReason::ServerError => "server_error",
        FailureReason::TlsCertificate => "tls_certificate",
        FailureReason::Format => "format",
        FailureReason::ModelNotFound => "model_not_found",
        FailureReason::SessionExpired => "session_expired",
        FailureReason::ContextOverflow => "context_overflow",
        FailureReason::Unknown => "unknown",
    }
}

pub(super) fn report_of(status: u16, message: &str) -> ErrorReport {
    let error = failover::ProviderError::message(message)
        .with_provider("openai")
        .with_status(status);
    contract_report(&flatten(&error, 1_700_000_000_000, &Limits::default()))
}

pub(super) fn run_request(primary: &str, fallbacks: &[&str]) -> RunRequest {
    RunRequest {
        requested: None,
        configured_primary: Some(primary.into()),
        configured_fallbacks: fallbacks.iter().map(|m| (*m).into()).collect(),
        agent_primary: None,
        agent_fallbacks: None,
        cron_model: None,
        cron_fallbacks: None,
        heartbeat: false,
        heartbeat_model: None,
        session_override: None,
        fallbacks_override: None,
        overflow_to: Vec::new(),
        primary_probe_interval_ms: 0,
    }
}

#[test]
fn the_default_component_classifies_every_corpus_case_as_the_core_does() {
    let module = default_module();
    assert_eq!(module.name(), policy_guest::POLICY_NAME);
    let inputs = super::cases::every_input();
    assert!(inputs.len() > 900, "only {} cases", inputs.len());
    let mut disagreements = Vec::new();
    for (error, now_ms) in &inputs {
        let flat = flatten(error, *now_ms, &Limits::default());
        let core = policy_guest::classify(&crate::native::to_core(&flat));
        let verdict = module.classify(&contract_report(&flat));
        let core_reason = core.reason.map_or("unknown", |r| r.as_str());
        let agrees = reason_name(verdict.reason) == core_reason
            && verdict.retry_after_ms == core.retry_after_ms
            && verdict.detail.is_some() == core.detail.is_some();
        if !agrees {
            disagreements.push(format!("{:?}: {verdict:?} vs {core:?}", error.message));
        }
    }
    assert!(disagreements.is_empty(), "{disagreements:#?}");
}

#[test]
fn the_status_only_policy_names_failures_by_status_alone() {
    let overflow = r#"{"error":{"code":"context_length_exceeded","message":"This model's maximum context length is 8192 tokens"}}"#;
    let module = status_only();
    assert_eq!(module.name(), "status-only");
    assert_eq!(
        module.classify(&report_of(400, overflow)).reason,
        FailureReason::Format
    );
    assert_eq!(
        default_module().classify(&report_of(400, overflow)).reason,
        FailureReason::ContextOverflow
    );
    assert_eq!(
        module.classify(&report_of(429, "")).reason,
        FailureReason::RateLimit
    );
    assert_eq!(
        module.classify(&report_of(502, "")).reason,
        FailureReason::ServerError
    );
    let request = run_request("openai/gpt-4o", &["anthropic/claude-sonnet-4"]);
    assert_eq!(
        module.plan_run(&request),
        default_module().plan_run(&request)
    );
}

#[test]
fn the_same_provider_policy_never_plans_another_provider() {
    let request = run_request(
        "openai/gpt-4o",
        &["anthropic/claude-sonnet-4", "openai/gpt-4o-mini"],
    );
    let default = default_module().plan_run(&request);
    assert_eq!(
        default.candidates,
        [
            "openai/gpt-4o",
            "anthropic/claude-sonnet-4",
            "openai/gpt-4o-mini"
        ]
    );
    let module = same_provider();
    assert_eq!(module.name(), "same-provider");
    let plan = module.plan_run(&request);
    assert_eq!(plan.candidates, ["openai/gpt-4o", "openai/gpt-4o-mini"]);
    assert_eq!((plan.source, plan.strict), (default.source, default.strict));
}

#[test]
fn this_host_runs_the_examples_through_its_gate() {
    for example in [
        "examples/policies/status-only",
        "examples/policies/same-provider",
        "examples/policies/from-the-wit",
    ] {
        let bytes = guests::component(example, &[]);
        let (policy, report) =
            failover::policy::gate::check(super::support::engine(), &bytes, Limits::default());
        assert!(policy.is_some(), "{example}: {}", report.render());
        assert_eq!(
            report.version.expect("loaded").contract,
            "failover:policy@1.0.0"
        );
    }
}

#[test]
fn policy_new_scaffolds_a_crate_that_policy_build_makes_a_component() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("demo");
    let new = || {
        crate::support::binary::failover()
            .args(["policy", "new", "demo", "--dir"])
            .arg(&dir)
            .output()
            .unwrap()
    };
    let created = new();
    assert!(created.status.success(), "{created:?}");
    for file in ["Cargo.toml", "src/lib.rs", "README.md", ".gitignore"] {
        assert!(dir.join(file).is_file(), "{file} was not written");
    }
    let again = new();
    assert!(!again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("already exists"),
        "{again:?}"
    );

    let mut build = crate::support::binary::failover();
    build.args(["policy", "build"]).arg(&dir);
    let built = guests::nested_build(build).output().unwrap();
    let component = std::fs::read(dir.join("demo.wasm")).unwrap_or_else(|e| {
        panic!(
            "no component ({e}): {}",
            String::from_utf8_lossy(&built.stderr)
        )
    });
    assert_exports_the_contract(&component);
    // The gate runs on it and admits it.
    let report = String::from_utf8_lossy(&built.stdout);
    assert!(report.contains("failover:policy@1.0.0"), "{report}");
    assert!(report.contains("verdict: accepted"), "{report}");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
}
