//! Faults after a request started, against the fault-injecting upstream: a
//! provider that goes silent is the provider's fault, not its key's; a few
//! unreadable events do not break a stream; one model's rate limits do not
//! lengthen another's backoff.

use std::time::Duration;

use crate::harness;
use crate::upstream;

use harness::*;
use serde_json::json;
use upstream::Behaviour;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_provider_moves_to_the_next_model_not_its_next_key() {
    let h = start_with_slow_provider(1, None, &["a", "b"]).await;
    // Either key would be answered as late: past the attempt's deadline.
    for _ in 0..2 {
        h.up.then("m", Behaviour::Slow(Duration::from_secs(5)));
    }
    let body = json!({"model": "slow/m", "models": [FALLBACK],
                      "messages": [{"role": "user", "content": "hi"}]});
    let a = h
        .post("/v1/chat/completions", &body.to_string(), None)
        .await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.header("x-failover-model"), FALLBACK);
    let silent: Vec<_> = (h.up.chat_calls().into_iter())
        .filter(|(model, _)| model == "m")
        .collect();
    assert_eq!(silent.len(), 1, "one deadline, not one per key: {silent:?}");
    // The key is not blamed (F-6.1).
    let usage = h.usage(&format!("slow:{}", &silent[0].1[5..]));
    assert_eq!(usage.blocked_until(None, u64::MAX / 2), None, "{usage:?}");
    h.stop().await;
}

/// An OpenAI stream's chunk of text.
fn chunk(text: &str, finish: Option<&str>) -> String {
    let delta = if finish.is_some() {
        json!({})
    } else {
        json!({"content": text})
    };
    format!(
        "data: {}",
        json!({"id": "chatcmpl-f", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_few_unreadable_events_are_skipped_and_counted_and_more_break_the_stream() {
    let h = start("", failover::gateway::ClientKeys::default()).await;
    let garbage = || "data: {\"choices\": [{\"delta\": {\"content\": \"trunc".to_owned();
    let pieces = vec![
        chunk("one ", None),
        garbage(),
        chunk("two", None),
        chunk("", Some("stop")),
        "data: [DONE]".to_owned(),
    ];
    h.up.then(
        "gpt-x",
        Behaviour::Sse {
            pieces,
            end: upstream::End::Close,
        },
    );
    let a = h.chat(FALLBACK, true, None).await;
    let streamed = read_stream(&a.text);
    assert_eq!(
        (streamed.text.as_str(), streamed.done),
        ("one two", true),
        "{}",
        a.text
    );
    assert!(
        h.usage("openai:a").last_used.is_some(),
        "a complete stream served"
    );
    let metrics = h.get("/metrics").await.text;
    assert!(
        metrics
            .lines()
            .any(|l| l == "failover_stream_events_skipped 1"),
        "{metrics}"
    );

    // Past the bound: the stream is broken, never served.
    let mut pieces = vec![chunk("one ", None)];
    pieces.extend((0..4).map(|_| garbage()));
    pieces.extend([chunk("", Some("stop")), "data: [DONE]".to_owned()]);
    h.up.then(
        "gpt-x",
        Behaviour::Sse {
            pieces,
            end: upstream::End::Close,
        },
    );
    let b = h.chat(FALLBACK, true, None).await;
    let streamed = read_stream(&b.text);
    assert!(!streamed.done, "{}", b.text);
    assert_eq!(streamed.error.unwrap()["code"], "stream_interrupted");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_models_rate_limits_never_lengthen_another_models_or_the_keys_backoff() {
    let h = start("", failover::gateway::ClientKeys::default()).await;
    let limited = || {
        Behaviour::Status(
            429,
            vec![],
            r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#
                .into(),
        )
    };
    h.up.then("gpt-a", limited());
    h.up.then("gpt-b", limited());
    h.up.then(
        "gpt-c",
        Behaviour::Status(
            503,
            vec![],
            r#"{"error":{"message":"The engine is currently overloaded","type":"server_error"}}"#
                .into(),
        ),
    );
    for model in ["openai/gpt-a", "openai/gpt-b", "openai/gpt-c"] {
        let answer = h.chat(model, false, None).await;
        assert!(answer.status >= 400, "{model}: {}", answer.text);
    }
    let usage = h.usage("openai:a");
    let failed_at = usage.last_failure_at.unwrap();
    // Each window is the first step of the ladder, a minute: gpt-b's is
    // not lengthened by gpt-a's, nor the key's overload by either.
    let step = |until: u64| until.saturating_sub(failed_at);
    for model in ["openai/gpt-a", "openai/gpt-b"] {
        let window = usage.model_cooldown(model).expect(model).until;
        assert!(step(window) <= 60_000, "{model}: {usage:?}");
    }
    assert_eq!(step(usage.cooldown_until.unwrap()), 60_000, "{usage:?}");
    assert_eq!(usage.error_count, 3);
    assert_eq!(usage.profile_failures(), 1);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_retry_after_on_the_last_key_is_waited_out_a_long_one_falls_back() {
    let h = start("", failover::gateway::ClientKeys::default()).await;
    let limited = |seconds: &str| {
        Behaviour::Status(
            429,
            vec![("retry-after", seconds.to_owned())],
            r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#
                .into(),
        )
    };
    let ask = |model: &str| {
        json!({"model": model, "models": [PRIMARY],
               "messages": [{"role": "user", "content": "hi"}]})
        .to_string()
    };
    let calls_of = |model: &str| {
        (h.up.chat_calls().into_iter())
            .filter(|(m, _)| m == model)
            .count()
    };
    // openai has one key: a second's wait is cheaper than another model.
    h.up.then("gpt-w", limited("1"));
    let began = std::time::Instant::now();
    let a = h
        .post("/v1/chat/completions", &ask("openai/gpt-w"), None)
        .await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.header("x-failover-model"), "openai/gpt-w");
    assert_eq!(calls_of("gpt-w"), 2, "waited out and retried once");
    assert!(began.elapsed() >= Duration::from_secs(1));
    assert_eq!(calls_of(PRIMARY.split_once('/').unwrap().1), 0);

    // Past the short wait (2 s by default): the fallback answers at once.
    h.up.then("gpt-v", limited("5"));
    let began = std::time::Instant::now();
    let b = h
        .post("/v1/chat/completions", &ask("openai/gpt-v"), None)
        .await;
    assert_eq!(b.status, 200, "{}", b.text);
    assert_eq!(b.header("x-failover-model"), PRIMARY);
    assert_eq!(calls_of("gpt-v"), 1);
    assert!(began.elapsed() < Duration::from_secs(5), "never held 5 s");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_wait_is_waited_once_and_never_stretches_the_rotation_cap() {
    let h = start_with_slow_provider(10, None, &["a", "b", "c"]).await;
    for _ in 0..5 {
        h.up.then(
            "m",
            Behaviour::Status(
                429,
                vec![("retry-after", "1".to_owned())],
                r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#
                    .into(),
            ),
        );
    }
    let body = json!({"model": "slow/m", "models": [FALLBACK],
                      "messages": [{"role": "user", "content": "hi"}]});
    let a = h
        .post("/v1/chat/completions", &body.to_string(), None)
        .await;
    assert_eq!(a.header("x-failover-model"), FALLBACK, "{}", a.text);
    let keys: Vec<String> = (h.up.chat_calls().into_iter())
        .filter(|(model, _)| model == "m")
        .map(|(_, key)| key)
        .collect();
    // One rotation (the default cap), then the second key once more after
    // its wait: three calls, never the third key.
    assert_eq!(keys.len(), 3, "{keys:?}");
    assert_eq!(keys[1], keys[2], "{keys:?}");
    let distinct: std::collections::HashSet<_> = keys.iter().collect();
    assert_eq!(distinct.len(), 2, "{keys:?}");
    h.stop().await;
}
