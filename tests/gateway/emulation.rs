//! What the fault-injecting upstream does with a request nothing scripted,
//! read from the request itself — so that a client outside the test (the
//! official SDKs) can ask for an outage or a tool call:
//!
//! - a fault named as `<fault>:<model>` anywhere in the body (`down`,
//!   `hang`, `cut` … see `faults.rs`): that model fails so;
//! - tools offered and no tool result yet: a call of the first tool with
//!   `{"city": "Oslo"}`, whole or streamed, in the caller's shape;
//! - a JSON response format: `{"ok": true}` as the text;
//! - `n` above 1 (OpenAI shape): that many choices, with `logprobs`, a
//!   `system_fingerprint`, a refusal in the last choice and usage details,
//!   whole or streamed.
//!
//! Anything else gets the ordinary text reply.

use serde_json::{json, Value};

use crate::upstream::{Behaviour, End};

/// The tool call's arguments.
pub const TOOL_ARGUMENTS: &str = r#"{"city": "Oslo"}"#;

/// The behaviour `body` asks of `model`, if it asks for one.
pub fn behaviour(body: &str, model: &str, anthropic: bool) -> Option<Behaviour> {
    let request: Value = serde_json::from_str(body).ok()?;
    let stream = request["stream"].as_bool().unwrap_or(false);
    if let Some(fault) = crate::faults::behaviour(body, model, anthropic, stream) {
        return Some(fault);
    }
    let answered = body.contains("tool_result") || body.contains(r#""role":"tool""#);
    let tool = request["tools"][0]
        .get("name")
        .or_else(|| request["tools"][0].pointer("/function/name"))
        .and_then(Value::as_str);
    if let (Some(tool), false) = (tool, answered) {
        return Some(match (anthropic, stream) {
            (true, false) => Behaviour::Raw("application/json", anthropic_tool_use(model, tool)),
            (false, false) => Behaviour::Raw("application/json", openai_tool_call(model, tool)),
            (true, true) => sse(anthropic_tool_stream(tool)),
            (false, true) => sse(openai_tool_stream(model, tool)),
        });
    }
    if let (false, Some(n)) = (anthropic, request["n"].as_u64().filter(|n| *n > 1)) {
        return Some(if stream {
            sse(openai_choices_stream(model, n))
        } else {
            Behaviour::Raw("application/json", openai_choices(model, n))
        });
    }
    let json_mode = request["response_format"]["type"]
        .as_str()
        .is_some_and(|t| t.starts_with("json"));
    if json_mode && !anthropic && !stream {
        let reply = json!({"id": "chatcmpl-json", "object": "chat.completion", "created": 1, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "{\"ok\": true}"},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 9, "completion_tokens": 4}});
        return Some(Behaviour::Raw("application/json", reply.to_string()));
    }
    None
}

fn sse(pieces: Vec<String>) -> Behaviour {
    Behaviour::Sse {
        pieces,
        end: End::Close,
    }
}

fn anthropic_tool_use(model: &str, tool: &str) -> String {
    let input: Value = serde_json::from_str(TOOL_ARGUMENTS).unwrap();
    json!({"id": "msg_tool", "type": "message", "role": "assistant", "model": model,
           "content": [{"type": "tool_use", "id": "toolu_emulated", "name": tool, "input": input}],
           "stop_reason": "tool_use", "usage": {"input_tokens": 20, "output_tokens": 9}})
    .to_string()
}

fn openai_tool_call(model: &str, tool: &str) -> String {
    json!({"id": "chatcmpl-tool", "object": "chat.completion", "created": 1, "model": model,
           "choices": [{"index": 0, "finish_reason": "tool_calls",
                        "message": {"role": "assistant", "content": null, "tool_calls": [
                            {"id": "call_emulated", "type": "function",
                             "function": {"name": tool, "arguments": TOOL_ARGUMENTS}}]}}],
           "usage": {"prompt_tokens": 20, "completion_tokens": 9}})
    .to_string()
}

fn anthropic_tool_stream(tool: &str) -> Vec<String> {
    let (head, tail) = TOOL_ARGUMENTS.split_at(6);
    [
        json!({"type": "message_start", "message": {"id": "msg_tool_s", "usage": {"input_tokens": 20}}}),
        json!({"type": "content_block_start", "index": 0,
               "content_block": {"type": "tool_use", "id": "toolu_emulated", "name": tool, "input": {}}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": head}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": tail}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
        json!({"type": "message_stop"}),
    ]
    .into_iter()
    .map(|event| format!("event: {}\ndata: {event}", event["type"].as_str().unwrap()))
    .collect()
}

fn openai_tool_stream(model: &str, tool: &str) -> Vec<String> {
    let (head, tail) = TOOL_ARGUMENTS.split_at(6);
    let chunk = |delta: Value, finish: Value| {
        let chunk = json!({"id": "chatcmpl-tool-s", "object": "chat.completion.chunk", "created": 1,
            "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {chunk}")
    };
    vec![
        chunk(
            json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": "call_emulated",
                   "type": "function", "function": {"name": tool, "arguments": head}}]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": tail}}]}),
            Value::Null,
        ),
        chunk(json!({}), "tool_calls".into()),
        "data: [DONE]".to_owned(),
    ]
}

/// The usage an emulated `n` reply reports, details included.
fn detailed_usage() -> Value {
    json!({"prompt_tokens": 11, "completion_tokens": 6, "total_tokens": 17,
           "prompt_tokens_details": {"cached_tokens": 3},
           "completion_tokens_details": {"reasoning_tokens": 2}})
}

fn logprobs(token: &str) -> Value {
    json!({"content": [{"token": token, "logprob": -0.25, "bytes": null, "top_logprobs": []}]})
}

/// Choice `i` of `n`: text, except the last, a refusal.
fn choice_message(i: u64, n: u64) -> Value {
    if i + 1 == n {
        json!({"role": "assistant", "content": null, "refusal": "I can't help with that."})
    } else {
        json!({"role": "assistant", "content": format!("choice {i}")})
    }
}

fn openai_choices(model: &str, n: u64) -> String {
    let choices: Vec<Value> = (0..n)
        .map(|i| {
            json!({"index": i, "message": choice_message(i, n),
                        "logprobs": logprobs(&format!("choice {i}")), "finish_reason": "stop"})
        })
        .collect();
    json!({"id": "chatcmpl-n", "object": "chat.completion", "created": 1, "model": model,
           "system_fingerprint": "fp_emulated", "choices": choices, "usage": detailed_usage()})
    .to_string()
}

fn openai_choices_stream(model: &str, n: u64) -> Vec<String> {
    let chunk = |choices: Value, usage: Value| {
        let chunk = json!({"id": "chatcmpl-n-s", "object": "chat.completion.chunk", "created": 1,
            "model": model, "system_fingerprint": "fp_emulated", "choices": choices, "usage": usage});
        format!("data: {chunk}")
    };
    let mut pieces = Vec::new();
    for i in 0..n {
        // As OpenAI streams it: the role first (empty logprobs), then the
        // content with its logprobs.
        let role = json!({"role": "assistant", "content": ""});
        pieces.push(chunk(
            json!([{"index": i, "delta": role, "logprobs": {"content": []}, "finish_reason": null}]),
            Value::Null,
        ));
        let message = choice_message(i, n);
        let delta = match message["content"].as_str() {
            Some(text) => json!({"content": text}),
            None => json!({"refusal": message["refusal"]}),
        };
        pieces.push(chunk(
            json!([{"index": i, "delta": delta, "logprobs": logprobs(&format!("choice {i}")), "finish_reason": null}]),
            Value::Null,
        ));
    }
    let finishes: Vec<Value> = (0..n)
        .map(|i| json!({"index": i, "delta": {}, "finish_reason": "stop"}))
        .collect();
    pieces.push(chunk(finishes.into(), Value::Null));
    pieces.push(chunk(json!([]), detailed_usage()));
    pieces.push("data: [DONE]".to_owned());
    pieces
}
