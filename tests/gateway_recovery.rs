//! Mid-stream recovery (`gateway.streamRecovery`), per route: buffered,
//! a reply held to its terminal event fails over unseen; continued, a
//! broken one starts over on the next candidate; off, the client gets the
//! terminal error event.

use crate::gateway_truncated::{anthropic_unfinished, events, openai_finished};
use crate::harness;
use crate::upstream;

use harness::*;
use serde_json::json;
use upstream::{Behaviour, End};

async fn start_recovering(modes: &str) -> Harness {
    let top = format!("gateway: {{ streamRecovery: {modes} }},");
    start_setup(Setup {
        top: &top,
        ..Setup::default()
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_buffered_stream_cut_after_output_fails_over_unseen() {
    let h = start_recovering(r#"{ "/v1/chat/completions": "buffered" }"#).await;
    h.up.then(
        "gpt-x",
        Behaviour::Sse {
            pieces: vec![openai_finished(&["partial ", "answ"])[0].clone()],
            end: End::Reset,
        },
    );
    let body = json!({"model": FALLBACK, "models": [PRIMARY], "stream": true,
                      "messages": [{"role": "user", "content": "hi"}]});
    let a = h
        .post("/v1/chat/completions", &body.to_string(), None)
        .await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.header("x-failover-model"), PRIMARY);
    let streamed = read_stream(&a.text);
    assert!(streamed.done, "{}", a.text);
    assert!(!streamed.text.contains("partial"), "{}", a.text);
    assert!(!streamed.text.is_empty());
    // The cut is the broken attempt's failure; the fallback's success.
    assert_eq!(h.usage("openai:a").last_used, None);
    assert!(h.usage("anthropic:a").last_used.is_some());
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_route_left_out_keeps_the_clean_error() {
    let h = start_recovering(r#"{ "/v1/chat/completions": "buffered" }"#).await;
    h.up.then(
        "claude-x",
        Behaviour::Sse {
            pieces: anthropic_unfinished("Once upon a time"),
            end: End::Close,
        },
    );
    let body = json!({"model": PRIMARY, "models": [FALLBACK], "max_tokens": 50, "stream": true,
                      "messages": [{"role": "user", "content": "a story"}]});
    let a = h.post("/v1/messages", &body.to_string(), None).await;
    let events = events(&a.text);
    assert_eq!(events.last().expect("events").0, "error", "{}", a.text);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_continued_openai_stream_starts_over_on_the_fallback_and_says_so() {
    let h = start_recovering(r#""continue""#).await;
    h.up.then(
        "gpt-x",
        Behaviour::Sse {
            pieces: vec![openai_finished(&["partial "])[0].clone()],
            end: End::Reset,
        },
    );
    let body = json!({"model": FALLBACK, "models": [PRIMARY], "stream": true,
                      "messages": [{"role": "user", "content": "hi"}]});
    let a = h
        .post("/v1/chat/completions", &body.to_string(), None)
        .await;
    assert_eq!(a.status, 200, "{}", a.text);
    let streamed = read_stream(&a.text);
    assert!(streamed.done, "{}", a.text);
    assert!(streamed.error.is_none(), "{}", a.text);
    assert!(
        streamed.text.starts_with("partial hello from claude-x"),
        "{}",
        streamed.text
    );
    let marker = (streamed.chunks.iter())
        .position(|c| c["failover"]["restarted"] == true)
        .expect("a restart chunk");
    let restart = &streamed.chunks[marker];
    assert_eq!(restart["failover"]["from"], FALLBACK);
    assert_eq!(restart["failover"]["model"], PRIMARY);
    assert_eq!(restart["choices"][0]["delta"]["role"], "assistant");
    assert!(streamed.chunks[marker..]
        .iter()
        .all(|c| c["model"] == PRIMARY));
    assert!(streamed.chunks[..marker]
        .iter()
        .all(|c| c["model"] == FALLBACK));
    // The break is the first attempt's failure, the restart's end a success.
    assert_eq!(h.usage("openai:a").last_used, None);
    assert!(h.usage("anthropic:a").last_used.is_some());
    // One request, served; one restart.
    let metrics = h.get("/metrics").await.text;
    let requests: Vec<&str> = (metrics.lines())
        .filter(|l| l.starts_with("failover_requests_total"))
        .collect();
    assert_eq!(requests.len(), 1, "{metrics}");
    assert!(requests[0].contains("outcome=\"served\"") && requests[0].ends_with(" 1"));
    let restarts = (metrics.lines())
        .any(|l| l.starts_with("failover_stream_restarts_total{") && l.ends_with(" 1"));
    assert!(restarts, "{metrics}");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_continued_anthropic_stream_goes_on_in_a_new_content_block() {
    let h = start_recovering(r#"{ "/v1/messages": "continue" }"#).await;
    h.up.then(
        "claude-x",
        Behaviour::Sse {
            pieces: anthropic_unfinished("Once upon")[..3].to_vec(),
            end: End::Close,
        },
    );
    let body = json!({"model": PRIMARY, "models": [FALLBACK], "max_tokens": 50, "stream": true,
                      "messages": [{"role": "user", "content": "a story"}]});
    let a = h.post("/v1/messages", &body.to_string(), None).await;
    let events = events(&a.text);
    let names: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names.first(), Some(&"message_start"), "{}", a.text);
    assert_eq!(names.iter().filter(|n| **n == "message_start").count(), 1);
    assert_eq!(names.last(), Some(&"message_stop"), "{}", a.text);
    assert!(!names.contains(&"error"), "{}", a.text);
    let blocks: Vec<(u64, String)> = (events.iter())
        .filter(|(name, _)| name == "content_block_delta")
        .map(|(_, e)| {
            let text = e["delta"]["text"].as_str().unwrap_or_default().to_owned();
            (e["index"].as_u64().unwrap(), text)
        })
        .collect();
    assert_eq!(blocks.first().unwrap(), &(0, "Once upon".to_owned()));
    assert!(
        blocks[1..].iter().all(|(index, _)| *index == 1),
        "{blocks:?}"
    );
    let stops: Vec<u64> = (events.iter())
        .filter(|(name, _)| name == "content_block_stop")
        .map(|(_, e)| e["index"].as_u64().unwrap())
        .collect();
    assert_eq!(stops, [0, 1], "{}", a.text);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_restart_after_a_tool_call_or_without_a_later_candidate() {
    let h = start_recovering(r#""continue""#).await;
    let tool_piece = format!(
        "data: {}",
        json!({"id": "c", "choices": [{"index": 0, "finish_reason": null, "delta": {"tool_calls": [
            {"index": 0, "id": "call_1", "type": "function",
             "function": {"name": "lookup", "arguments": "{\"q\":"}}]}}]})
    );
    h.up.then(
        "gpt-x",
        Behaviour::Sse {
            pieces: vec![tool_piece],
            end: End::Reset,
        },
    );
    let with_fallback = json!({"model": FALLBACK, "models": [PRIMARY], "stream": true,
                               "messages": [{"role": "user", "content": "hi"}]});
    assert_interrupted(&h, &with_fallback).await;

    // A model pinned alone has nowhere to restart.
    h.up.then(
        "gpt-x",
        Behaviour::Sse {
            pieces: vec![openai_finished(&["partial"])[0].clone()],
            end: End::Reset,
        },
    );
    let pinned = json!({"model": FALLBACK, "stream": true,
                        "messages": [{"role": "user", "content": "hi"}]});
    assert_interrupted(&h, &pinned).await;
    let claude_calls = (h.up.chat_calls().into_iter())
        .filter(|(m, _)| m == "claude-x")
        .count();
    assert_eq!(claude_calls, 0);
    h.stop().await;
}

/// `body` posted as an OpenAI chat ends in the `stream_interrupted` error
/// event, not restarted.
async fn assert_interrupted(h: &Harness, body: &serde_json::Value) {
    let answer = h
        .post("/v1/chat/completions", &body.to_string(), None)
        .await;
    let streamed = read_stream(&answer.text);
    assert!(!streamed.done, "{}", answer.text);
    assert_eq!(
        streamed.error.unwrap()["code"],
        "stream_interrupted",
        "{}",
        answer.text
    );
}
