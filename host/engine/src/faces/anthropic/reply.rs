//! Replies in the Anthropic Messages shape for clients: a whole `message`,
//! the stream of `message_start` … `message_stop` events, and errors.

use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::model::{Completion, FinishReason, StreamEvent, TokenUsage, ToolCallDelta};

/// Anthropic's `stop_reason` for why generation stopped.
pub fn stop_reason(finish: &FinishReason) -> &'static str {
    match finish {
        FinishReason::Stop | FinishReason::Other(_) => "end_turn",
        FinishReason::StopSequence(_) => "stop_sequence",
        FinishReason::Length => "max_tokens",
        FinishReason::ToolCalls => "tool_use",
        FinishReason::ContentFilter => "refusal",
    }
}

/// The stop sequence that ended the reply, when one did and it is known.
fn stop_sequence(finish: &FinishReason) -> Value {
    match finish {
        FinishReason::StopSequence(Some(sequence)) => sequence.clone().into(),
        _ => Value::Null,
    }
}

/// The client-facing `message` object: text, then tool calls as `tool_use`
/// blocks (arguments that are not JSON arrive as `{"arguments": "…"}`).
pub(crate) fn message_json(id: &str, model: &str, completion: &Completion) -> Value {
    let mut content = Vec::new();
    if !completion.text.is_empty() {
        content.push(json!({"type": "text", "text": completion.text}));
    }
    let calls = completion
        .message_extra
        .get("tool_calls")
        .and_then(Value::as_array);
    for call in calls.into_iter().flatten() {
        let arguments = call
            .pointer("/function/arguments")
            .and_then(Value::as_str)
            .unwrap_or("");
        content.push(json!({
            "type": "tool_use",
            "id": call.get("id").cloned().unwrap_or_default(),
            "name": call.pointer("/function/name").cloned().unwrap_or_default(),
            "input": tool_input(arguments),
        }));
    }
    json!({
        "id": id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason(&completion.finish),
        "stop_sequence": stop_sequence(&completion.finish),
        "usage": usage_json(completion.usage.unwrap_or_default()),
    })
}

fn tool_input(arguments: &str) -> Value {
    if arguments.trim().is_empty() {
        return json!({});
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(input @ Value::Object(_)) => input,
        _ => json!({"arguments": arguments}),
    }
}

/// Usage in Anthropic's convention: `input_tokens` leaves the cache reads
/// out (they are `cache_read_input_tokens`).
fn usage_json(usage: TokenUsage) -> Value {
    let cached = usage.cached_tokens.unwrap_or(0);
    let mut json = json!({"input_tokens": usage.prompt_tokens.saturating_sub(cached),
                          "output_tokens": usage.completion_tokens});
    if let Some(cached) = usage.cached_tokens {
        json["cache_read_input_tokens"] = cached.into();
    }
    json
}

/// Anthropic's error `type` for an HTTP status.
pub fn error_type(status: u16) -> &'static str {
    match status {
        400 | 422 => "invalid_request_error",
        401 => "authentication_error",
        402 => "billing_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        503 | 529 => "overloaded_error",
        504 => "timeout_error",
        _ => "api_error",
    }
}

/// An Anthropic-style error object.
pub(crate) fn error_json(status: u16, message: &str) -> Value {
    json!({"type": "error", "error": {"type": error_type(status), "message": message}})
}

/// Which content block of the stream is open.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Open {
    Text,
    /// A tool call's block: its index among the reply's calls, its id.
    Tool(u32, String),
}

/// Writes a reply's stream events as Anthropic SSE: content blocks opened
/// and closed around text and tool calls, usage at the end.
#[derive(Debug)]
pub(crate) struct StreamEncoder {
    open: Option<Open>,
    /// Index of the next content block.
    next_block: u32,
}

impl StreamEncoder {
    /// The stream's start: `message_start` for reply `id` from `model`.
    pub fn start(id: &str, model: &str) -> (Self, String) {
        let message = json!({"type": "message_start", "message": {
            "id": id, "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": usage_json(TokenUsage::default())}});
        let encoder = StreamEncoder {
            open: None,
            next_block: 0,
        };
        (encoder, sse("message_start", &message))
    }

    /// The SSE text of one stream event.
    pub fn event(&mut self, event: &StreamEvent) -> String {
        let mut out = String::new();
        match event {
            StreamEvent::Text(text) => {
                if self.open != Some(Open::Text) {
                    self.close(&mut out);
                    self.open_block(&mut out, Open::Text, json!({"type": "text", "text": ""}));
                }
                self.delta(&mut out, json!({"type": "text_delta", "text": text}));
            }
            StreamEvent::ToolCall(call) => self.tool_call(&mut out, call),
            // OpenAI-only chunk fields: the Messages shape has no place.
            StreamEvent::Extra(_) => {}
            StreamEvent::Finish { reason, usage } => {
                self.close(&mut out);
                let usage = usage.unwrap_or_default();
                let delta = json!({"type": "message_delta",
                    "delta": {"stop_reason": stop_reason(reason), "stop_sequence": stop_sequence(reason)},
                    "usage": usage_json(usage)});
                out.push_str(&sse("message_delta", &delta));
                out.push_str(&sse("message_stop", &json!({"type": "message_stop"})));
            }
        }
        out
    }

    /// A piece of a tool call: a new block when the call is another than
    /// the open one's (another index, or another id — some servers repeat
    /// the id on every piece, which is the same call), else a delta.
    fn tool_call(&mut self, out: &mut String, call: &ToolCallDelta) {
        let same = match &self.open {
            Some(Open::Tool(index, id)) => {
                *index == call.index && call.id.as_ref().is_none_or(|new| new == id)
            }
            _ => false,
        };
        if !same {
            self.close(out);
            let id = call.id.clone().unwrap_or_default();
            let block = json!({"type": "tool_use", "id": id,
                "name": call.name.clone().unwrap_or_default(), "input": {}});
            self.open_block(out, Open::Tool(call.index, id), block);
        }
        if !call.arguments.is_empty() {
            let delta = json!({"type": "input_json_delta", "partial_json": call.arguments});
            self.delta(out, delta);
        }
    }

    fn open_block(&mut self, out: &mut String, open: Open, block: Value) {
        let start = json!({"type": "content_block_start", "index": self.next_block, "content_block": block});
        out.push_str(&sse("content_block_start", &start));
        self.open = Some(open);
    }

    fn delta(&self, out: &mut String, delta: Value) {
        let event =
            json!({"type": "content_block_delta", "index": self.next_block, "delta": delta});
        out.push_str(&sse("content_block_delta", &event));
    }

    fn close(&mut self, out: &mut String) {
        if self.open.take().is_some() {
            let stop = json!({"type": "content_block_stop", "index": self.next_block});
            out.push_str(&sse("content_block_stop", &stop));
            self.next_block += 1;
        }
    }

    /// The open block closed, so that what follows — the answer started
    /// over on another model — begins a block of its own.
    pub fn restart(&mut self) -> String {
        let mut out = String::new();
        self.close(&mut out);
        out
    }

    /// An `error` event ending a broken stream (no `message_stop`, so a
    /// client never takes a cut reply for whole).
    pub fn error(&mut self, status: u16, message: &str) -> String {
        sse("error", &error_json(status, message))
    }
}

fn sse(event: &str, data: &Value) -> String {
    let mut out = String::new();
    let _ = write!(out, "event: {event}\ndata: {data}\n\n");
    out
}
