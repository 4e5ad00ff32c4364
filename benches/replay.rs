//! Replay throughput: a large generated trace (a busy stretch of one
//! gateway: rate-limit bursts, overloads, successes across three providers)
//! replayed through the default policy component, next to the same trace
//! through the native core (the `policy-guest` crate linked in, behind the
//! same `Decider` trait, driven by the same runner). Events per second and
//! the ratio, from one run.
//!
//! `cargo bench --bench replay [-- REQUESTS]`; each path is replayed
//! `FAILOVER_BENCH_RUNS` times (default 5), alternating, and the fastest
//! and the median run are printed.
//!
//! With `FAILOVER_BENCH_ONLY=component` (or `native`) it replays through
//! that path only, [`ONLY_REPEATS`] times, and prints nothing: the form to
//! count instructions in, which machine noise does not move —
//! `valgrind --tool=callgrind --toggle-collect='replay::timed' <bench binary> --bench 2000`.

#[path = "../tests/native/mod.rs"]
mod native;

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use failover::policy::Policy;
use failover::replay::{replay, ReplayOptions, Trace};
use failover::PolicyVersion;
use failover::{Decider, PolicyEngine};
use native::Native;
use serde_json::json;

const T0: u64 = 1_767_225_600_000;

/// Names the one path to replay, untimed (see the module's doc).
const ONLY_VAR: &str = "FAILOVER_BENCH_ONLY";

/// How often that path is replayed: enough that set-up is a small part.
const ONLY_REPEATS: usize = 10;

/// Names how many timed runs each path gets (default [`DEFAULT_RUNS`]).
const RUNS_VAR: &str = "FAILOVER_BENCH_RUNS";

/// Timed runs of each path, alternating.
const DEFAULT_RUNS: usize = 5;

/// A trace of `requests` requests, each with one to three outcomes.
fn generate(requests: u64) -> (tempfile::NamedTempFile, u64) {
    let named = tempfile::NamedTempFile::new().unwrap();
    // Buffered: unbuffered, the generator's own writes took longer than
    // the replays it sets up.
    let mut file = std::io::BufWriter::new(named.as_file());
    let header = json!({"type":"header","version":1,"clockStart":T0,"agent":"main",
        "config":{"auth":{"order":{"openai":["openai:k1","openai:k2","openai:k3"]}},
                  "agents":{"defaults":{"model":{"primary":"openai/gpt-4o","fallbacks":["anthropic/claude-sonnet-4","google/gemini-2.5-pro"]}}}},
        "profiles":[
            {"id":"openai:k1","provider":"openai","type":"api_key"},
            {"id":"openai:k2","provider":"openai","type":"api_key"},
            {"id":"openai:k3","provider":"openai","type":"api_key"},
            {"id":"anthropic:a","provider":"anthropic","type":"api_key"},
            {"id":"google:a","provider":"google","type":"api_key"}]});
    writeln!(file, "{header}").unwrap();
    let limited = json!({"provider":"openai","status":429,"message":"{\"error\":{\"message\":\"Rate limit reached\",\"code\":\"rate_limit_exceeded\"}}","headers":{"retry-after":"2"}});
    let overloaded = json!({"provider":"anthropic","status":529,"message":"{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"});
    let mut events = 1;
    for id in 1..=requests {
        // A request every 3 s; every fifth one starts a rate-limit burst.
        let at = T0 + id * 3_000;
        writeln!(file, "{}", json!({"type":"request","id":id,"at":at,"model":"auto","session":format!("s{}", id % 50)})).unwrap();
        events += 1;
        let profile = ["openai:k1", "openai:k2", "openai:k3"][(id % 3) as usize];
        let mut line = |model: &str, profile: &str, error: Option<&serde_json::Value>| {
            let mut outcome = json!({"type":"outcome","request":id,"at":at,"provider":model.split('/').next().unwrap(),
                                     "model":model,"profile":profile,"latencyMs":50});
            if let Some(error) = error {
                outcome["error"] = error.clone();
            }
            writeln!(file, "{outcome}").unwrap();
            events += 1;
        };
        if id % 5 == 0 {
            line("openai/gpt-4o", profile, Some(&limited));
            line(
                "anthropic/claude-sonnet-4",
                "anthropic:a",
                if id % 10 == 0 {
                    Some(&overloaded)
                } else {
                    None
                },
            );
            line("google/gemini-2.5-pro", "google:a", None);
        } else {
            for k in ["openai:k1", "openai:k2", "openai:k3"] {
                line("openai/gpt-4o", k, None);
            }
            line("anthropic/claude-sonnet-4", "anthropic:a", None);
        }
    }
    file.flush().unwrap();
    drop(file);
    (named, events)
}

fn timed(
    trace: &Trace,
    path: &std::path::Path,
    policy: Arc<dyn Decider>,
) -> (Duration, Vec<String>) {
    let started = Instant::now();
    let result =
        tracing::subscriber::with_default(tracing::subscriber::NoSubscriber::default(), || {
            replay(trace, path, policy, &ReplayOptions::default(), |_, _| {}).unwrap()
        });
    (started.elapsed(), result.json_lines())
}

fn main() {
    let requests: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(20_000);
    let (file, events) = generate(requests);
    let trace = Trace::read(file.path(), false).unwrap();
    let engine = PolicyEngine::new().unwrap();
    let component = Arc::new(Policy::default_policy(&engine).unwrap());
    let native = Arc::new(Native {
        version: PolicyVersion {
            name: "failover-default (native)".into(),
            version: component.version().version.clone(),
            contract: component.version().contract.clone(),
            sha256: "native".into(),
        },
    });
    if let Some(only) = std::env::var_os(ONLY_VAR) {
        // For instruction counts (callgrind): one path, repeated, untimed.
        let policy: Arc<dyn Decider> = match only.to_str() {
            Some("native") => native.clone(),
            Some("component") => component.clone(),
            _ => panic!("{ONLY_VAR} is `component` or `native`"),
        };
        for _ in 0..ONLY_REPEATS {
            timed(&trace, file.path(), policy.clone());
        }
        return;
    }
    // Warm both (instance pool, caches), then measure them in turn, RUNS
    // times each: the fastest run is the figure a noisy machine disturbs
    // least, the median shows the spread.
    timed(&trace, file.path(), component.clone());
    timed(&trace, file.path(), native.clone());
    let runs: usize = std::env::var(RUNS_VAR)
        .ok()
        .and_then(|runs| runs.parse().ok())
        .filter(|runs| *runs > 0)
        .unwrap_or(DEFAULT_RUNS);
    let (mut through_component, mut through_native) = (Vec::new(), Vec::new());
    let mut policy_calls = 0;
    let mut lines = 0;
    for _ in 0..runs {
        let calls_before = component.stats().calls;
        let (elapsed, component_lines) = timed(&trace, file.path(), component.clone());
        policy_calls = component.stats().calls - calls_before;
        through_component.push(elapsed);
        let (elapsed, native_lines) = timed(&trace, file.path(), native.clone());
        through_native.push(elapsed);
        assert_eq!(
            component_lines, native_lines,
            "the component and the native core decide alike"
        );
        lines = component_lines.len();
    }
    through_component.sort();
    through_native.sort();
    println!("{requests} requests, {events} trace events, {lines} output lines, {policy_calls} policy calls per replay, {runs} runs each");
    print_table(requests, events, &through_component, &through_native);
}

/// Prints the fastest and the median of each path's runs
/// (`through_component` and `through_native`, sorted) replaying `events`
/// trace events of `requests` requests, and the ratio of the fastest.
fn print_table(
    requests: u64,
    events: u64,
    through_component: &[Duration],
    through_native: &[Duration],
) {
    let rate = |d: Duration| events as f64 / d.as_secs_f64();
    println!(
        "| path | fastest | events/s (fastest) | events/s (median) | µs per request (fastest) |"
    );
    println!("|---|---:|---:|---:|---:|");
    for (name, runs) in [
        ("component", through_component),
        ("native core", through_native),
    ] {
        let fastest = runs[0];
        println!(
            "| {name} | {:.3} s | {:.0} | {:.0} | {:.1} |",
            fastest.as_secs_f64(),
            rate(fastest),
            rate(runs[runs.len() / 2]),
            fastest.as_secs_f64() * 1e6 / requests as f64
        );
    }
    let (through_component, through_native) = (through_component[0], through_native[0]);
    println!(
        "component / native time: {:.2}×",
        through_component.as_secs_f64() / through_native.as_secs_f64()
    );
}
