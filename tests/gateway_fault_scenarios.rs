//! Every fault the fault-injecting upstream offers (`faults.rs`), asked
//! for in the prompt as a client outside the tests would, through a
//! gateway with short deadlines and streams that continue: each ends in a
//! whole answer from the right model, or — a content filter's refusal —
//! in the provider's own error, never in a truncated answer taken for
//! whole.

use std::time::{Duration, Instant};

use crate::harness;

use harness::*;
use serde_json::json;

/// What a scenario must end in.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// A whole stream from this model, its text starting so.
    Whole(&'static str, &'static str),
    /// The stream restarted on the fallback after a break.
    Restarted,
    /// The provider's error, passed back with this status.
    Refused(u16),
}

const SCENARIOS: &[(&str, Expect)] = &[
    ("down", Expect::Whole(FALLBACK, "hello from gpt-x")),
    ("error", Expect::Whole(FALLBACK, "hello from gpt-x")),
    ("limit", Expect::Whole(FALLBACK, "hello from gpt-x")),
    (
        "overflow",
        Expect::Whole("openai/gpt-x-large", "hello from gpt-x-large"),
    ),
    ("filter", Expect::Refused(400)),
    ("hang", Expect::Whole(FALLBACK, "hello from gpt-x")),
    ("slow", Expect::Whole(FALLBACK, "hello from gpt-x")),
    ("cut", Expect::Restarted),
    ("stall", Expect::Restarted),
    (
        "garbage",
        Expect::Whole("flaky/claude-x", "The answer is 42."),
    ),
    ("junk", Expect::Restarted),
];

/// A gateway whose `flaky/claude-x` (Anthropic-shaped, one key) falls back
/// to `openai/gpt-x`, with a second's deadlines and continued streams.
async fn start_flaky() -> Harness {
    let providers = r#"flaky: { baseUrl: "BASE/flaky", api: "anthropic-messages",
        timeouts: { firstTokenSeconds: 1, idleSeconds: 1 },
        models: [{ id: "claude-x", overflowTo: "openai/gpt-x-large" }] },"#;
    let h = start_setup(Setup {
        providers,
        top: r#"gateway: { streamRecovery: "continue" },"#,
        ..Setup::default()
    })
    .await;
    h.add_keys("flaky", &["a"]);
    h
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_the_upstream_offers_ends_whole_or_refused() {
    for (fault, expect) in SCENARIOS {
        // Fresh: a hang makes the model slow for the scenarios after it.
        let h = start_flaky().await;
        let body = json!({"model": "flaky/claude-x", "models": [FALLBACK], "stream": true,
                          "messages": [{"role": "user", "content": format!("hi {fault}:claude-x")}]});
        let began = Instant::now();
        let a = h
            .post("/v1/chat/completions", &body.to_string(), None)
            .await;
        let took = began.elapsed();
        let streamed = (a.status == 200).then(|| read_stream(&a.text));
        match (*expect, streamed) {
            (Expect::Whole(model, text), Some(streamed)) => {
                assert_eq!(a.header("x-failover-model"), model, "{fault}: {}", a.text);
                assert!(
                    streamed.done && streamed.error.is_none(),
                    "{fault}: {}",
                    a.text
                );
                assert!(
                    streamed.text.starts_with(text),
                    "{fault}: {}",
                    streamed.text
                );
            }
            (Expect::Restarted, Some(streamed)) => {
                assert!(
                    streamed.done && streamed.error.is_none(),
                    "{fault}: {}",
                    a.text
                );
                let restarted =
                    (streamed.chunks.iter()).any(|c| c["failover"]["model"] == FALLBACK);
                assert!(restarted, "{fault}: {}", a.text);
                assert!(
                    streamed.text.ends_with("hello from gpt-x with oai-a"),
                    "{fault}"
                );
            }
            (Expect::Refused(status), None) => assert_eq!(a.status, status, "{fault}: {}", a.text),
            (expect, _) => panic!("{fault}: expected {expect:?}, got {}: {}", a.status, a.text),
        }
        // Never a full attempt deadline (120 s by default) waited out.
        assert!(took < Duration::from_secs(10), "{fault} took {took:?}");
        h.stop().await;
    }
}
