//! Replies in the OpenAI shape for clients: the completion, its chunks and
//! errors.

use serde_json::{json, Value};

use crate::model::{Completion, StreamEvent, TokenUsage};
use crate::wire::tools;

/// The client-facing `chat.completion` object, as JSON text.
pub(crate) fn completion_json(
    id: &str,
    model: &str,
    created: u64,
    completion: Completion,
) -> String {
    if let Some(reply) = &completion.raw {
        // An OpenAI-shaped upstream's reply, whole: every choice and field.
        return reply.render(id, model, created);
    }
    let mut message = completion.message_extra;
    message.insert("role".into(), "assistant".into());
    message.insert("content".into(), completion.text.into());
    let mut body = json!({
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "message": message,
                     "finish_reason": completion.finish.as_openai()}],
    });
    if let Some(usage) = completion.usage {
        body["usage"] = usage_json(usage);
    }
    body.to_string()
}

/// What a client-facing chunk carries.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Chunk<'a> {
    /// The first chunk: the role, with empty text content, or null content
    /// when the reply opens with a tool call (as OpenAI sends it).
    Role {
        tool_first: bool,
    },
    Event(&'a StreamEvent),
}

/// A client-facing `chat.completion.chunk`: the role on the first, then
/// text and tool-call deltas, then the finish reason (and usage).
pub(crate) fn chunk_json(id: &str, model: &str, created: u64, chunk: Chunk<'_>) -> Value {
    let (delta, finish, usage) = match chunk {
        Chunk::Role { tool_first } => (
            json!({"role": "assistant", "content": if tool_first { Value::Null } else { "".into() }}),
            Value::Null,
            None,
        ),
        Chunk::Event(StreamEvent::Text(text)) => (json!({"content": text}), Value::Null, None),
        Chunk::Event(StreamEvent::ToolCall(call)) => (
            json!({"tool_calls": [tools::delta_json(call)]}),
            Value::Null,
            None,
        ),
        Chunk::Event(StreamEvent::Finish { reason, usage }) => {
            (json!({}), Value::from(reason.as_openai()), *usage)
        }
        Chunk::Event(StreamEvent::Extra(fields)) => {
            let mut chunk = json!({"id": id, "object": "chat.completion.chunk",
                                   "created": created, "model": model, "choices": []});
            for (name, value) in fields {
                chunk[name.as_str()] = value.clone();
            }
            return chunk;
        }
    };
    let mut chunk = json!({
        "id": id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    });
    if let Some(usage) = usage {
        chunk["usage"] = usage_json(usage);
    }
    chunk
}

fn usage_json(usage: TokenUsage) -> Value {
    let mut json = json!({
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
    });
    if let Some(cached) = usage.cached_tokens {
        json["prompt_tokens_details"] = json!({"cached_tokens": cached});
    }
    if let Some(reasoning) = usage.reasoning_tokens {
        json["completion_tokens_details"] = json!({"reasoning_tokens": reasoning});
    }
    json
}

/// An OpenAI-style error object.
pub(crate) fn error_json(message: &str, kind: &str, code: Option<&str>) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}
