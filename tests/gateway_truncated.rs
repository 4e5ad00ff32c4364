//! Truncated streams (F-12.12): a stream is complete only at its
//! provider's terminal event. One that ends early is the attempt's failure
//! everywhere — the client's terminal error event in its own protocol, the
//! profile's state (no `lastUsed`), `/metrics`, the recorded trace and its
//! replay — and one cut before any output reached the client moves the run
//! on like any timeout.

use crate::harness;
use crate::upstream;

use failover::gateway::ClientKeys;
use failover::replay::{Decision, Trace};
use harness::*;
use serde_json::{json, Value};
use upstream::{Behaviour, End};

fn data(value: Value) -> String {
    format!("data: {value}")
}

/// An OpenAI stream's chunks: text pieces, then a finish reason.
pub(crate) fn openai_finished(pieces: &[&str]) -> Vec<String> {
    let mut chunks: Vec<String> = (pieces.iter())
        .map(|p| {
            data(
                json!({"id": "chatcmpl-c", "choices": [{"index": 0, "delta": {"content": p},
                        "finish_reason": null}]}),
            )
        })
        .collect();
    chunks.push(data(
        json!({"id": "chatcmpl-c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    ));
    chunks
}

/// A whole OpenAI stream: text pieces, a finish reason, `[DONE]`.
fn openai_whole(pieces: &[&str]) -> Vec<String> {
    let mut chunks = openai_finished(pieces);
    chunks.push("data: [DONE]".into());
    chunks
}

/// An Anthropic stream up to its text, without `message_delta` and
/// `message_stop`.
pub(crate) fn anthropic_unfinished(text: &str) -> Vec<String> {
    [
        json!({"type": "message_start", "message": {"id": "msg_t", "usage": {"input_tokens": 3}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        json!({"type": "content_block_stop", "index": 0}),
    ]
    .into_iter()
    .map(data)
    .collect()
}

/// `text`'s server-sent events as (event name, data).
pub(crate) fn events(text: &str) -> Vec<(String, Value)> {
    let mut events = Vec::new();
    let mut name = String::new();
    for line in text.lines() {
        if let Some(event) = line.strip_prefix("event: ") {
            name = event.to_owned();
        } else if let Some(data) = line.strip_prefix("data: ") {
            let value = serde_json::from_str(data).unwrap_or(Value::String(data.to_owned()));
            events.push((std::mem::take(&mut name), value));
        }
    }
    events
}

/// `failover_*` counters of `/metrics` whose line holds every one of
/// `labels`.
async fn counted(h: &Harness, metric: &str, labels: &[&str]) -> u64 {
    let scrape = h.get("/metrics").await.text;
    (scrape.lines())
        .filter(|l| l.starts_with(metric) && labels.iter().all(|label| l.contains(label)))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_openai_stream_with_a_finish_reason_but_no_done_is_a_failure() {
    let h = start("", ClientKeys::default()).await;
    h.up.then(
        "gpt-x",
        Behaviour::Sse {
            pieces: openai_finished(&["all ", "but the end"]),
            end: End::Close,
        },
    );
    let a = h.chat(FALLBACK, true, None).await;
    assert_eq!(a.status, 200);
    let streamed = read_stream(&a.text);
    assert_eq!(streamed.text, "all but the end");
    assert!(!streamed.done, "never told complete: {}", a.text);
    let error = streamed.error.expect("a terminal error chunk");
    assert_eq!(error["code"], "stream_interrupted");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("terminal event"),
        "{error}"
    );
    // Never a success: no `lastUsed`; a timeout, which leaves the key
    // uncooled (F-6.1).
    let usage = h.usage("openai:a");
    assert_eq!(usage.last_used, None, "{usage:?}");
    assert_eq!(usage.blocked_until(None, u64::MAX / 2), None, "{usage:?}");
    let outcome = r#"outcome="stream_interrupted""#;
    assert_eq!(counted(&h, "failover_requests_total", &[outcome]).await, 1);
    let served = r#"outcome="served""#;
    assert_eq!(counted(&h, "failover_requests_total", &[served]).await, 0);
    let timeout = [r#"provider="openai""#, r#"result="timeout""#];
    assert_eq!(
        counted(&h, "failover_upstream_calls_total", &timeout).await,
        1
    );
    let ok = [r#"provider="openai""#, r#"result="ok""#];
    assert_eq!(counted(&h, "failover_upstream_calls_total", &ok).await, 0);

    // The same stream with its `[DONE]`: complete, and only then a success.
    h.up.then(
        "gpt-x",
        Behaviour::Sse {
            pieces: openai_whole(&["whole"]),
            end: End::Close,
        },
    );
    let b = h.chat(FALLBACK, true, None).await;
    assert!(read_stream(&b.text).done, "{}", b.text);
    assert!(h.usage("openai:a").last_used.is_some());
    assert_eq!(counted(&h, "failover_requests_total", &[served]).await, 1);
    assert_eq!(counted(&h, "failover_upstream_calls_total", &ok).await, 1);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anthropic_client_gets_an_error_event_when_the_stream_stops_before_message_stop() {
    let h = start("", ClientKeys::default()).await;
    h.up.then(
        "claude-x",
        Behaviour::Sse {
            pieces: anthropic_unfinished("Once upon a time"),
            end: End::Close,
        },
    );
    let body = json!({"model": PRIMARY, "max_tokens": 50, "stream": true,
                      "messages": [{"role": "user", "content": "a story"}]});
    let a = h.post("/v1/messages", &body.to_string(), None).await;
    assert_eq!(a.status, 200);
    let events = events(&a.text);
    let names: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
    assert!(!names.contains(&"message_stop"), "{}", a.text);
    let (name, error) = events.last().expect("events");
    assert_eq!(name, "error", "{}", a.text);
    assert_eq!(error["type"], "error");
    assert!(error["error"]["type"].is_string(), "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("terminal event"),
        "{error}"
    );
    let text: String = (events.iter())
        .filter_map(|(_, e)| e.pointer("/delta/text").and_then(Value::as_str))
        .collect();
    assert_eq!(text, "Once upon a time");
    assert_eq!(h.usage("anthropic:a").last_used, None);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_before_any_output_moves_on_to_the_fallback() {
    let h = start("", ClientKeys::default()).await;
    // The primary's stream opens and closes without a word.
    let opened = vec![data(
        json!({"type": "message_start", "message": {"id": "msg_x", "usage": {"input_tokens": 3}}}),
    )];
    for _ in 0..2 {
        h.up.then(
            "claude-x",
            Behaviour::Sse {
                pieces: opened.clone(),
                end: End::Close,
            },
        );
    }
    h.up.then(
        "gpt-x",
        Behaviour::Sse {
            pieces: openai_whole(&["from the fallback"]),
            end: End::Close,
        },
    );
    let a = h.chat("auto", true, None).await;
    assert_eq!(a.header("x-failover-model"), FALLBACK, "{}", a.text);
    let streamed = read_stream(&a.text);
    assert_eq!(
        (streamed.text.as_str(), streamed.done),
        ("from the fallback", true)
    );
    assert!(streamed.error.is_none(), "{}", a.text);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_trace_carries_the_break_and_its_replay_sees_it() {
    let h = start_with("", ClientKeys::default(), Some(false)).await;
    h.up.then(
        "gpt-x",
        Behaviour::Sse {
            pieces: openai_finished(&["half"]),
            end: End::Reset,
        },
    );
    let a = h.chat(FALLBACK, true, None).await;
    assert!(read_stream(&a.text).error.is_some(), "{}", a.text);
    let path = h.trace.clone().unwrap();
    let trace = Trace::read(&path, false).unwrap();
    assert_eq!(trace.broken.len(), 1, "{trace:?}");
    assert_eq!(trace.broken[0].profile, "openai:a");
    let replayed = crate::replay::replay_off_the_runtime(trace, path).await;
    let last = replayed.decisions.last().unwrap();
    assert!(
        matches!(last, Decision::Broken { reason, model, .. } if reason == "timeout" && model == FALLBACK),
        "{last:?}"
    );
    // Served at its first content, never an `ok` attempt.
    assert!((replayed.decisions.iter()).any(|d| matches!(d, Decision::Served { .. })));
    let lines = replayed.json_lines();
    assert!(
        !lines.iter().any(|l| l.contains(r#""outcome":"ok""#)),
        "{lines:?}"
    );
    let key = (replayed.profiles.iter())
        .find(|p| p["id"] == "openai:a")
        .unwrap();
    assert!(key["lastUsed"].is_null(), "{key}");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_stalls_past_the_idle_deadline_is_interrupted_and_never_served() {
    let h = start_with_slow_provider(1, None, &["a"]).await;
    h.up.then(
        "m",
        Behaviour::Sse {
            pieces: openai_finished(&["started"])[..1].to_vec(),
            end: End::Stall,
        },
    );
    let a = h.chat("slow/m", true, None).await;
    let streamed = read_stream(&a.text);
    assert_eq!(streamed.text, "started");
    assert!(!streamed.done, "{}", a.text);
    assert_eq!(streamed.error.unwrap()["code"], "stream_interrupted");
    let usage = h.usage("slow:a");
    assert_eq!(usage.last_used, None, "{usage:?}");
    let timeout = [r#"provider="slow""#, r#"result="timeout""#];
    assert_eq!(
        counted(&h, "failover_upstream_calls_total", &timeout).await,
        1
    );
    h.stop().await;
}
