//! An attempt's separate deadlines (connecting, a stream's first token,
//! the silence between events, the whole attempt) set per provider and per
//! model, and a context overflow moved to the larger model a config names.

use std::time::{Duration, Instant};

use crate::harness;
use crate::upstream;

use harness::*;
use serde_json::json;
use upstream::Behaviour;

/// A provider `slow` on the upstream whose stream must start within 1 s
/// on model `m` and 10 s on `n`, with one key.
async fn start_with_first_token_deadlines() -> Harness {
    let providers = r#"slow: { baseUrl: "BASE/slow/v1",
        timeouts: { firstTokenSeconds: 10, attemptSeconds: 15, idleSeconds: 1 },
        models: [{ id: "m", timeouts: { firstTokenSeconds: 1 } }, "n"] },"#;
    let h = start_setup(Setup {
        providers,
        ..Setup::default()
    })
    .await;
    h.add_keys("slow", &["a"]);
    h
}

fn stream_request(model: &str) -> String {
    json!({"model": model, "models": [FALLBACK], "stream": true,
           "messages": [{"role": "user", "content": "hi"}]})
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_token_deadline_moves_to_the_fallback_and_a_models_own_deadline_wins() {
    let h = start_with_first_token_deadlines().await;
    // m's own deadline: 1 s, while the provider's is 10 s.
    h.up.then("m", Behaviour::Slow(Duration::from_secs(4)));
    let began = Instant::now();
    let a = h
        .post("/v1/chat/completions", &stream_request("slow/m"), None)
        .await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.header("x-failover-model"), FALLBACK);
    assert!(read_stream(&a.text).done, "{}", a.text);
    assert!(
        began.elapsed() < Duration::from_secs(4),
        "the fallback answered before the slow start would have"
    );
    // The provider is slow, not the key: it is not blamed (F-6.1).
    let usage = h.usage("slow:a");
    assert_eq!(usage.blocked_until(None, u64::MAX / 2), None, "{usage:?}");

    // n keeps the provider's 10 s: a 2 s start is waited for.
    h.up.then("n", Behaviour::Slow(Duration::from_secs(2)));
    let b = h
        .post("/v1/chat/completions", &stream_request("slow/n"), None)
        .await;
    assert_eq!(b.status, 200, "{}", b.text);
    assert_eq!(b.header("x-failover-model"), "slow/n");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_idle_deadline_is_its_own_not_the_attempts() {
    let h = start_with_first_token_deadlines().await;
    let chunk = |text: &str| {
        format!(
            "data: {}",
            json!({"id": "c", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
        )
    };
    h.up.then(
        "n",
        Behaviour::Sse {
            pieces: vec![chunk("partial")],
            end: upstream::End::Stall,
        },
    );
    let began = Instant::now();
    let a = h
        .post("/v1/chat/completions", &stream_request("slow/n"), None)
        .await;
    let streamed = read_stream(&a.text);
    assert!(!streamed.done, "{}", a.text);
    assert_eq!(streamed.error.unwrap()["code"], "stream_interrupted");
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "broken at the 1 s idle deadline, not the 15 s attempt's"
    );
    h.stop().await;
}

#[tokio::test]
async fn bad_deadlines_and_overflow_targets_are_refused_by_name() {
    let cases = [
        (
            r#"models: { timeouts: { firstTokenSeconds: -1 } }"#,
            "models.timeouts.firstTokenSeconds",
        ),
        (
            r#"models: { providers: { openai: { models: [{ id: "a", timeouts: { idleSeconds: 0 } }] } } }"#,
            "models.providers.openai.models.0.timeouts.idleSeconds",
        ),
        (
            r#"models: { providers: { openai: { models: [{ id: "a", overflowTo: "openai/a" }] } } }"#,
            "models.providers.openai.models.0.overflowTo names the model itself",
        ),
        (
            r#"models: { providers: { openai: { models: [{ id: "a", overflowTo: "acme/big" }] } } }"#,
            "models.providers.openai.models.0.overflowTo: unknown model",
        ),
        (
            r#"models: { providers: { openai: { models: [{ id: "a", overflowTO: "openai/b" }, "b"] } } }"#,
            "did you mean `overflowTo`",
        ),
        (
            r#"models: { providers: { openai: { models: [{ id: "a", timeouts: { firstTokenSecond: 3 } }] } } }"#,
            "did you mean `firstTokenSeconds`",
        ),
        (
            r#"auth: { cooldowns: { shortWaitMs: 60000 } }"#,
            "auth.cooldowns.shortWaitMs",
        ),
        (
            r#"gateway: { streamRecovery: "bufered" }"#,
            "\"off\", \"buffered\" or \"continue\"",
        ),
        (
            r#"gateway: { streamRecovery: { "/v1/chat": "buffered" } }"#,
            "\"/v1/chat\" is not a streaming route",
        ),
        (
            r#"models: { providers: { openai: { models: [{ overflowTo: "openai/b" }] } } }"#,
            "an object with a string `id`",
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (text, expected) in cases {
        let path = dir.path().join("c.json5");
        std::fs::write(&path, format!("{{ {text} }}")).unwrap();
        let error = failover::config::Config::load(&path)
            .unwrap_err()
            .to_string();
        assert!(error.contains(expected), "{text}: {error}");
        assert!(error.contains("c.json5"), "{error}");
    }
}

/// A provider `ovf` whose model `small` overflows to `big`, one key.
async fn start_with_overflow() -> Harness {
    let providers = r#"ovf: { baseUrl: "BASE/ovf/v1",
        models: [{ id: "small", overflowTo: "ovf/big" }, "big"] },"#;
    let h = start_setup(Setup {
        providers,
        ..Setup::default()
    })
    .await;
    h.add_keys("ovf", &["a"]);
    h
}

fn overflowed() -> Behaviour {
    Behaviour::Status(
        400,
        vec![],
        r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#
            .into(),
    )
}

fn ask(model: &str, fallbacks: &[&str]) -> String {
    json!({"model": model, "models": fallbacks,
           "messages": [{"role": "user", "content": "hi"}]})
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_context_overflow_moves_to_the_configured_larger_model_and_nothing_else_does() {
    let h = start_with_overflow().await;
    let calls_of = |model: &str| {
        (h.up.chat_calls().into_iter())
            .filter(|(m, _)| m == model)
            .count()
    };
    // Overflow: straight to the larger model, past the fallback.
    h.up.then("small", overflowed());
    let a = h
        .post("/v1/chat/completions", &ask("ovf/small", &[FALLBACK]), None)
        .await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.header("x-failover-model"), "ovf/big");
    assert_eq!(calls_of("gpt-x"), 0, "the fallback is no larger model");

    // Any other failure: the fallback, never the overflow-only model.
    h.up.then("small", Behaviour::Status(500, vec![], "{}".into()));
    let b = h
        .post("/v1/chat/completions", &ask("ovf/small", &[FALLBACK]), None)
        .await;
    assert_eq!(b.header("x-failover-model"), FALLBACK, "{}", b.text);
    assert_eq!(calls_of("big"), 1);

    // The fallback failing too: the run ends without the larger model.
    h.up.then("small", Behaviour::Status(500, vec![], "{}".into()));
    h.up.then("gpt-x", Behaviour::Status(500, vec![], "{}".into()));
    let c = h
        .post("/v1/chat/completions", &ask("ovf/small", &[FALLBACK]), None)
        .await;
    assert!(c.status >= 500, "{}", c.text);
    assert_eq!(calls_of("big"), 1, "never a fallback");

    // A model the user pinned: its overflow is the answer (F-5.9).
    h.up.then("small", overflowed());
    let d = h
        .post("/v1/chat/completions", &ask("ovf/small", &[]), None)
        .await;
    assert_eq!(d.status, 400, "{}", d.text);
    assert_eq!(calls_of("big"), 1);
    h.stop().await;
}
