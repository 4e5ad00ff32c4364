//! What one decision costs in a 1.0 module given a fresh instance per call,
//! beside the host's warm instances, printed from one run:
//!
//! - the embedded default policy through the host (`Policy::classify`
//!   with the same input each time, so the answer the host keeps by its
//!   input);
//! - the 1.0 default policy (`policy-sdk/default-policy`), the Rust
//!   status-only policy and the Python one (`examples/policies/`), each
//!   call in a fresh instance from wasmtime's pooling allocator with
//!   copy-on-write memory images;
//! - the fresh instance alone, with no call.
//!
//! `cargo bench --bench policy_one` (the Python policy needs the venv of
//! `tests/sdk/setup.sh`). The 1.0 Rust modules are built as the tests build
//! guests, without LTO; the embedded default is built with it.

#[path = "../tests/support/guests.rs"]
mod guests;

use std::path::Path;
use std::time::{Duration, Instant};

use failover::{Policy, PolicyEngine, ProviderError};
use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store};

mod v1 {
    wasmtime::component::bindgen!({ world: "policy", path: "wit" });
}

use v1::exports::failover::policy::types::{ErrorLevel, ErrorReport};

/// Calls per timed round, and rounds; the median round is reported.
const CALLS: u32 = 200;
const ROUNDS: usize = 15;
/// Room for the Python interpreter's heap in a pooled instance.
const POOLED_MEMORY_BYTES: usize = 256 << 20;

/// Memory a pooled slot keeps resident when its instance ends: reset in
/// place for the next instance rather than given back and faulted in again.
const KEPT_RESIDENT_BYTES: usize = 4 << 20;

/// How a pooled slot is made ready for the next instance.
#[derive(Clone, Copy)]
enum Reset {
    /// Memory given back with `madvise` and faulted in again.
    Decommit,
    /// The lowest [`KEPT_RESIDENT_BYTES`] reset in place with `memset`.
    KeepResident,
    /// Only the pages the instance wrote, found with `PAGEMAP_SCAN`, reset
    /// in place (Linux 6.7 or later).
    PagemapScan,
}

impl Reset {
    fn label(self) -> &'static str {
        match self {
            Reset::Decommit => "pool",
            Reset::KeepResident => "pool, kept resident",
            Reset::PagemapScan => "pool, kept resident, pagemap scan",
        }
    }
}

fn pooled_engine(reset: Reset) -> Engine {
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(16)
        .total_core_instances(64)
        .total_memories(64)
        .total_tables(64)
        .max_memory_size(POOLED_MEMORY_BYTES);
    if !matches!(reset, Reset::Decommit) {
        pool.linear_memory_keep_resident(KEPT_RESIDENT_BYTES)
            .table_keep_resident(KEPT_RESIDENT_BYTES);
    }
    if matches!(reset, Reset::PagemapScan) {
        pool.pagemap_scan(wasmtime::Enabled::Yes);
    }
    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    Engine::new(&config).expect("a pooling engine")
}

/// The median time of one call over the rounds.
fn per_call(mut call: impl FnMut()) -> Duration {
    let mut rounds: Vec<Duration> = (0..ROUNDS)
        .map(|_| {
            let started = Instant::now();
            for _ in 0..CALLS {
                call();
            }
            started.elapsed() / CALLS
        })
        .collect();
    rounds.sort();
    rounds[ROUNDS / 2]
}

fn report() -> ErrorReport {
    ErrorReport {
        provider: Some("openai".into()),
        model: Some("gpt-4o".into()),
        levels: vec![ErrorLevel {
            depth: 0,
            status: Some(429),
            code: Some("rate_limit_exceeded".into()),
            error_type: Some("requests".into()),
            param: None,
            message: "Rate limit reached for gpt-4o on requests per min (RPM)".into(),
            details: None,
            headers: vec![("retry-after".into(), "2".into())],
        }],
        now_ms: 1_700_000_000_000,
    }
}

/// Times a fresh instance per call of `bytes`, with and without the call.
fn fresh(engine: &Engine, name: &str, bytes: &[u8], baseline: Duration) {
    let component = Component::new(engine, bytes).expect("the module compiles");
    let mut linker = Linker::new(engine);
    failover::policy::wasi::link_standins(&mut linker, &component).expect("stand-ins link");
    let pre = v1::PolicyPre::new(linker.instantiate_pre(&component).unwrap()).unwrap();
    let report = report();
    let instantiate = per_call(|| {
        let mut store = Store::new(engine, ());
        pre.instantiate(&mut store).unwrap();
    });
    let classify = per_call(|| {
        let mut store = Store::new(engine, ());
        let policy = pre.instantiate(&mut store).unwrap();
        let classifier = policy.failover_policy_classifier();
        classifier.call_classify(&mut store, &report).unwrap();
    });
    row(name, "a fresh instance alone", instantiate, baseline);
    row(name, "classify, fresh instance", classify, baseline);
}

fn row(name: &str, what: &str, time: Duration, baseline: Duration) {
    let ratio = time.as_secs_f64() / baseline.as_secs_f64();
    println!(
        "| {name} | {what} | {:.2} µs | {ratio:.1}× |",
        time.as_secs_f64() * 1e6
    );
}

fn python_policy() -> Option<Vec<u8>> {
    let tool = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/sdk-venv/bin/componentize-py");
    let out = std::env::temp_dir().join("failover-bench-status-only-py.wasm");
    guests::python_policy(&tool, &out).ok()
}

fn main() {
    let host = PolicyEngine::new().expect("engine");
    let policy = Policy::default_policy(&host).expect("the default policy loads");
    let error = ProviderError::message("Rate limit reached for gpt-4o on requests per min (RPM)")
        .with_provider("openai")
        .with_status(429)
        .with_code("rate_limit_exceeded")
        .with_header("retry-after", "2");
    let warm = per_call(|| {
        policy.classify(&error, 1_700_000_000_000).unwrap();
    });
    println!("## one classification, median of {ROUNDS} rounds of {CALLS}\n");
    println!("| policy | call | per call | vs the host's kept answer |");
    println!("|---|---|---:|---:|");
    row("default (host)", "classify, kept answer", warm, warm);
    let modules: Vec<(&str, Vec<u8>)> = vec![
        (
            "default 1.0 (SDK)",
            guests::component("policy-sdk/default-policy", &[]),
        ),
        (
            "status-only (Rust)",
            guests::component("examples/policies/status-only", &[]),
        ),
    ];
    let python = python_policy();
    for reset in [Reset::Decommit, Reset::KeepResident, Reset::PagemapScan] {
        let engine = pooled_engine(reset);
        let pool = reset.label();
        for (name, bytes) in &modules {
            fresh(&engine, &format!("{name}, {pool}"), bytes, warm);
        }
        match &python {
            Some(bytes) => fresh(
                &engine,
                &format!("status-only (Python), {pool}"),
                bytes,
                warm,
            ),
            None => println!("| status-only (Python) | not built: run tests/sdk/setup.sh | | |"),
        }
    }
}
