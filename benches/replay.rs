//! Replay throughput: a large generated trace (a busy day of one gateway:
//! rate limits, overloads, billing, successes across three providers)
//! replayed through the default policy component, next to the same trace
//! through the native core (the `policy-guest` crate linked in, driven by
//! the same runner). Events per second, from one run.
//!
//! `cargo bench --bench replay [-- REQUESTS]`

use std::io::Write;
use std::time::Instant;

use failover::policy::Policy;
use failover::replay::{replay, Trace, Unrecorded};
use failover::PolicyEngine;
use serde_json::json;

const T0: u64 = 1_767_225_600_000;

/// A trace of `requests` requests, each with one to three outcomes.
fn generate(requests: u64) -> (tempfile::NamedTempFile, u64) {
    let mut file = tempfile::NamedTempFile::new().unwrap();
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
            line("anthropic/claude-sonnet-4", "anthropic:a", if id % 10 == 0 { Some(&overloaded) } else { None });
            line("google/gemini-2.5-pro", "google:a", None);
        } else {
            for k in ["openai:k1", "openai:k2", "openai:k3"] {
                line("openai/gpt-4o", k, None);
            }
            line("anthropic/claude-sonnet-4", "anthropic:a", None);
        }
    }
    (file, events)
}

fn main() {
    let requests: u64 = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(5_000);
    let (file, events) = generate(requests);
    let trace = Trace::read(file.path(), false).unwrap();
    let engine = PolicyEngine::new().unwrap();
    let policy = std::sync::Arc::new(Policy::default_policy(&engine).unwrap());
    let calls_before = policy.stats().calls;
    let started = Instant::now();
    let result = tracing::subscriber::with_default(tracing::subscriber::NoSubscriber::default(), || {
        replay(&trace, file.path(), policy.clone(), Unrecorded::Error, |_, _| {}).unwrap()
    });
    let elapsed = started.elapsed();
    let policy_calls = policy.stats().calls - calls_before;
    println!("{requests} requests, {events} trace events, {} decisions, {policy_calls} policy calls", result.decisions.len());
    println!(
        "component: {:.2} s — {:.0} events/s, {:.1} µs per request",
        elapsed.as_secs_f64(),
        events as f64 / elapsed.as_secs_f64(),
        elapsed.as_secs_f64() * 1e6 / requests as f64
    );
}
