//! Streams through the gateway as agent frameworks use them: tool calls
//! streamed in both upstream shapes, replies of tool calls alone, and
//! streams that end without saying they are complete, break late, outlive
//! the run's deadline or grow past the size bound.

use crate::harness;
use crate::upstream;

use failover::auth::RecordedReason;
use failover::gateway::ClientKeys;
use harness::*;
use serde_json::{json, Value};
use upstream::{Behaviour, End};

/// A request with one tool, streamed or not.
fn tool_request(model: &str, stream: bool) -> String {
    json!({"model": model, "stream": stream,
           "messages": [{"role": "user", "content": "weather in Oslo?"}],
           "tools": [{"type": "function", "function": {"name": "weather",
                      "description": "today's weather",
                      "parameters": {"type": "object",
                                     "properties": {"city": {"type": "string"}},
                                     "required": ["city"]}}}],
           "tool_choice": "auto"})
    .to_string()
}

fn data(value: Value) -> String {
    format!("data: {value}")
}

/// The chunks an OpenAI-compatible upstream streams for one tool call.
fn openai_tool_stream() -> Vec<String> {
    let chunk = |delta: Value, finish: Value| {
        data(
            json!({"id": "chatcmpl-t", "object": "chat.completion.chunk", "created": 1,
                    "model": "gpt-x", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    vec![
        chunk(
            json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": "call_abc",
                   "type": "function", "function": {"name": "weather", "arguments": ""}}]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"ci"}}]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "ty\": \"Oslo\"}"}}]}),
            Value::Null,
        ),
        chunk(json!({}), "tool_calls".into()),
        "data: [DONE]".into(),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_openai_tool_call_streams_through_in_the_shape_the_sdk_reads() {
    let h = start("", ClientKeys::default()).await;
    h.up.then(
        "gpt-x",
        Behaviour::Sse {
            pieces: openai_tool_stream(),
            end: End::Close,
        },
    );
    let a = h
        .post("/v1/chat/completions", &tool_request(FALLBACK, true), None)
        .await;
    assert_eq!(a.status, 200, "{}", a.text);
    let streamed = read_stream(&a.text);
    assert!(streamed.done && streamed.error.is_none(), "{}", a.text);
    // The role first, content null as OpenAI sends it before a tool call.
    let first = &streamed.chunks[0]["choices"][0]["delta"];
    assert_eq!(first["role"], "assistant");
    assert!(first["content"].is_null(), "{first}");
    assert_eq!(streamed.text, "");
    assert_eq!(streamed.tool_calls.len(), 1);
    let call = &streamed.tool_calls[0];
    assert_eq!(call["id"], "call_abc");
    assert_eq!(call["function"]["name"], "weather");
    let arguments: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments, json!({"city": "Oslo"}));
    assert_eq!(streamed.finish.as_deref(), Some("tool_calls"));
    // The upstream got the tools as sent; the profile answered well.
    let sent: Value = serde_json::from_str(&h.up.calls()[0].body).unwrap();
    assert_eq!(sent["tools"][0]["function"]["name"], "weather");
    let usage = h.usage("openai:a");
    assert!(
        usage.cooldown_until.is_none() && usage.error_count == 0,
        "{usage:?}"
    );
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anthropic_tool_use_stream_is_the_chains_answer_as_openai_tool_calls() {
    let h = start("", ClientKeys::default()).await;
    let events = [
        json!({"type": "message_start", "message": {"id": "msg_t", "usage": {"input_tokens": 9}}}),
        json!({"type": "content_block_start", "index": 0,
               "content_block": {"type": "tool_use", "id": "toolu_01", "name": "weather", "input": {}}}),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "input_json_delta", "partial_json": "{\"city\": "}}),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "input_json_delta", "partial_json": "\"Oslo\"}"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 12}}),
        json!({"type": "message_stop"}),
    ];
    h.up.then(
        "claude-x",
        Behaviour::Sse {
            pieces: events.into_iter().map(data).collect(),
            end: End::Close,
        },
    );
    let a = h
        .post("/v1/chat/completions", &tool_request("auto", true), None)
        .await;
    assert_eq!(a.status, 200, "{}", a.text);
    // A reply of tool calls alone is the primary's reply: no fallback.
    assert_eq!(a.header("x-failover-model"), PRIMARY);
    let streamed = read_stream(&a.text);
    assert!(streamed.done, "{}", a.text);
    assert_eq!(streamed.tool_calls[0]["id"], "toolu_01");
    assert_eq!(
        streamed.tool_calls[0]["function"]["arguments"],
        "{\"city\": \"Oslo\"}"
    );
    assert_eq!(streamed.finish.as_deref(), Some("tool_calls"));
    let chat_calls = h.up.chat_calls();
    assert_eq!(chat_calls.len(), 1, "{chat_calls:?}");
    // The tools went to Anthropic in its own shape.
    let sent: Value = serde_json::from_str(&h.up.calls()[0].body).unwrap();
    assert_eq!(sent["tools"][0]["name"], "weather");
    assert_eq!(sent["tools"][0]["input_schema"]["required"][0], "city");
    assert_eq!(sent["tool_choice"], json!({"type": "auto"}));
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_conversation_goes_to_anthropic_as_tool_use_and_comes_back_as_tool_calls() {
    let h = start("", ClientKeys::default()).await;
    let reply = json!({"id": "msg_2", "type": "message", "role": "assistant",
        "content": [{"type": "text", "text": "Checking Rome too."},
                    {"type": "tool_use", "id": "toolu_02", "name": "weather", "input": {"city": "Rome"}}],
        "stop_reason": "tool_use", "usage": {"input_tokens": 30, "output_tokens": 9}});
    h.up.then(
        "claude-x",
        Behaviour::Raw("application/json", reply.to_string()),
    );
    let mut request: Value = serde_json::from_str(&tool_request(PRIMARY, false)).unwrap();
    request["messages"] = json!([
        {"role": "user", "content": "weather in Oslo?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "toolu_01", "type": "function",
            "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}}]},
        {"role": "tool", "tool_call_id": "toolu_01", "content": "4°C, snow"},
    ]);
    let a = h
        .post("/v1/chat/completions", &request.to_string(), None)
        .await;
    assert_eq!(a.status, 200, "{}", a.text);
    let message = &a.json()["choices"][0]["message"];
    assert_eq!(message["content"], "Checking Rome too.");
    assert_eq!(message["tool_calls"][0]["id"], "toolu_02");
    assert_eq!(
        message["tool_calls"][0]["function"]["arguments"],
        "{\"city\":\"Rome\"}"
    );
    assert_eq!(a.json()["choices"][0]["finish_reason"], "tool_calls");
    let sent: Value = serde_json::from_str(&h.up.calls()[0].body).unwrap();
    let turns = sent["messages"].as_array().unwrap();
    assert_eq!(turns.len(), 3, "{sent}");
    assert_eq!(turns[1]["content"][0]["type"], "tool_use");
    assert_eq!(turns[1]["content"][0]["input"]["city"], "Oslo");
    assert_eq!(turns[2]["content"][0]["type"], "tool_result");
    assert_eq!(turns[2]["content"][0]["tool_use_id"], "toolu_01");
    h.stop().await;
}

/// Text pieces of an OpenAI-shaped stream, with no finish reason.
fn openai_text(pieces: &[&str]) -> Vec<String> {
    pieces
        .iter()
        .map(|p| {
            data(
                json!({"id": "chatcmpl-c", "choices": [{"index": 0, "delta": {"content": p},
                        "finish_reason": null}]}),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_closed_without_its_terminator_is_interrupted_and_the_profiles_failure() {
    let h = start("", ClientKeys::default()).await;
    // A clean close after some text: no finish reason, no [DONE].
    h.up.then(
        "gpt-x",
        Behaviour::Sse {
            pieces: openai_text(&["half ", "a reply"]),
            end: End::Close,
        },
    );
    let a = h.chat(FALLBACK, true, None).await;
    assert_eq!(a.status, 200);
    let streamed = read_stream(&a.text);
    assert_eq!(streamed.text, "half a reply");
    assert!(
        !streamed.done,
        "a cut reply is never told complete: {}",
        a.text
    );
    assert_eq!(streamed.error.unwrap()["code"], "stream_interrupted");
    // The profile's failure, timeout-class: recorded through the policy,
    // which leaves a timeout's profile as it was (F-6.1), and counted.
    let usage = h.usage("openai:a");
    assert!(usage.cooldown_until.is_none(), "{usage:?}");
    assert_eq!(
        h.get("/status").await.json()["counters"]["streamsBrokenAfterStart"],
        1
    );

    // Garbage after the text: the same.
    let mut pieces = openai_text(&["some text"]);
    pieces.push("data: {this is not json".into());
    h.up.then(
        "gpt-x",
        Behaviour::Sse {
            pieces,
            end: End::Close,
        },
    );
    let b = h.chat(FALLBACK, true, None).await;
    let streamed = read_stream(&b.text);
    assert!(!streamed.done && streamed.error.is_some(), "{}", b.text);
    assert_eq!(
        h.get("/status").await.json()["counters"]["streamsBrokenAfterStart"],
        2
    );
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_error_event_is_recorded_against_the_profile_that_served() {
    let h = start("", ClientKeys::default()).await;
    let pieces = vec![
        data(
            json!({"type": "message_start", "message": {"id": "msg_e", "usage": {"input_tokens": 3}}}),
        ),
        data(json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "text_delta", "text": "Once upon"}})),
        format!(
            "event: error\n{}",
            data(
                json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
            )
        ),
    ];
    h.up.then(
        "claude-x",
        Behaviour::Sse {
            pieces,
            end: End::Close,
        },
    );
    let a = h.chat(PRIMARY, true, None).await;
    let streamed = read_stream(&a.text);
    assert_eq!(streamed.text, "Once upon");
    assert!(!streamed.done);
    let error = streamed.error.unwrap();
    assert_eq!(error["code"], "stream_interrupted");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("overloaded_error"),
        "{error}"
    );
    let usage = h.usage("anthropic:a");
    assert_eq!(
        usage.cooldown_reason,
        Some(RecordedReason::Overloaded),
        "{usage:?}"
    );
    let status = h.get("/status").await.json();
    assert_eq!(status["counters"]["streamsBrokenAfterStart"], 1, "{status}");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_deadline_bounds_the_whole_stream() {
    let h = start_with_slow_provider(60, Some(1.0), &["a"]).await;
    h.up.then(
        "m",
        Behaviour::Sse {
            pieces: openai_text(&["started"]),
            end: End::Stall,
        },
    );
    let started = std::time::Instant::now();
    let a = h.chat("slow/m", true, None).await;
    let streamed = read_stream(&a.text);
    assert_eq!(streamed.text, "started");
    assert_eq!(streamed.error.unwrap()["code"], "deadline_exceeded");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "ended by the run's deadline, not the minute-long idle limit"
    );
    // The attempt's timeout (F-12.12), never a success: the key is not
    // cooled and has served nothing.
    let usage = h.usage("slow:a");
    assert_eq!((usage.error_count, usage.last_used), (0, None), "{usage:?}");
    h.stop().await;
}

/// A whole reply whose body stalls after its head: the attempt's one timer
/// (send and read share it) ends the read within the attempt's timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_reply_that_stalls_after_its_head_times_out_within_the_attempt() {
    let h = start_with_slow_provider(1, None, &["a"]).await;
    h.up.then(
        "m",
        Behaviour::Sse {
            pieces: openai_text(&["started"]),
            end: End::Stall,
        },
    );
    let started = std::time::Instant::now();
    // Not asked to stream: the event stream is read whole, and never ends.
    let a = h.chat("slow/m", false, None).await;
    let took = started.elapsed();
    assert!(a.status >= 500, "{} {}", a.status, a.text);
    assert!(a.text.contains("within 1.0 s"), "{}", a.text);
    assert!(
        took >= std::time::Duration::from_millis(900) && took < std::time::Duration::from_secs(20),
        "{took:?}"
    );
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_past_the_maximum_size_is_cut_with_a_clear_error() {
    let h = start_setup(Setup {
        top: "gateway: { maxStreamBytes: 1024 },",
        ..Setup::default()
    })
    .await;
    let piece = "x".repeat(600);
    h.up.then(
        "gpt-x",
        Behaviour::Sse {
            pieces: openai_text(&[&piece, &piece, &piece]),
            end: End::Close,
        },
    );
    let a = h.chat(FALLBACK, true, None).await;
    let streamed = read_stream(&a.text);
    assert_eq!(streamed.text.len(), 600, "the piece that fits, no more");
    let error = streamed.error.unwrap();
    assert_eq!(error["code"], "stream_too_large");
    assert!(
        error["message"].as_str().unwrap().contains("1024"),
        "{error}"
    );
    h.stop().await;
}
