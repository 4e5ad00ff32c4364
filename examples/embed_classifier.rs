//! Embedding the classifier in a Rust program.
//!
//! A gateway or agent runtime captures a failed provider call as a
//! [`ProviderError`] — status, code, message (often the provider's raw JSON
//! body), headers, nested causes — and asks the policy what it means. The
//! answer says whether to fail over, why, and how long the provider asked to
//! wait.
//!
//! Run with `cargo run --example embed_classifier`.

use std::time::{SystemTime, UNIX_EPOCH};

use failover::{Policy, PolicyEngine, ProviderError};

fn main() -> anyhow::Result<()> {
    // One engine per process; the policy keeps warm instances for reuse.
    let engine = PolicyEngine::new()?;
    let policy = Policy::default_policy(&engine)?;
    println!("policy: {}", policy.version());

    let now_ms = u64::try_from(SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis())?;
    let failures = [
        ProviderError::message(
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        )
        .with_provider("anthropic")
        .with_status(529),
        ProviderError::message("Too many requests")
            .with_provider("openai")
            .with_status(429)
            .with_header("Retry-After", "20"),
        ProviderError::message("Connection error.")
            .with_provider("openai")
            .with_cause(ProviderError::message("read ECONNRESET").with_code("ECONNRESET")),
        ProviderError::message("prompt is too long: 215392 tokens > 200000 maximum")
            .with_provider("anthropic")
            .with_status(400),
    ];
    for failure in &failures {
        let verdict = policy.classify(failure, now_ms)?;
        let reason = verdict.reason.map_or("unknown", |r| r.as_str());
        let action = if verdict.failover {
            "fail over"
        } else {
            "surface the error"
        };
        let wait = verdict
            .retry_after_ms
            .map(|ms| format!(", provider asks to wait {ms} ms"))
            .unwrap_or_default();
        println!("{reason:<16} -> {action}{wait}");
    }
    Ok(())
}
