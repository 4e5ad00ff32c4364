//! The OpenAI chat-completions shape: parsing what clients send the
//! gateway, rendering requests for OpenAI-compatible upstreams, reading
//! their replies and streams, and rendering replies for clients.

use serde_json::{json, Map, Value};

use super::sse::SseEvent;
use super::tools::{self, TOOL_FIELDS};
use super::{ChatRequest, Completion, FinishReason, Message, Role, StreamEvent, TokenUsage};
use failover_sandbox::provider_error::ProviderError;

/// Request fields that mean nothing to a translation and are dropped
/// silently when a request goes to a non-OpenAI upstream.
const HARMLESS: &[&str] = &[
    "user",
    "stream_options",
    "store",
    "metadata",
    "service_tier",
];

/// A client's request body that is not a chat-completions request; the
/// message names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadRequest(pub String);

/// Parses a client's chat-completions request body.
pub fn parse_request(body: &[u8]) -> Result<ChatRequest, BadRequest> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| BadRequest(format!("the body is not JSON: {e}")))?;
    let Value::Object(mut object) = value else {
        return Err(BadRequest("the body must be a JSON object".into()));
    };
    let mut request = ChatRequest {
        model: match object.remove("model") {
            Some(Value::String(model)) if !model.trim().is_empty() => model,
            _ => {
                return Err(BadRequest(
                    "field `model` must be a non-empty string".into(),
                ))
            }
        },
        ..ChatRequest::default()
    };
    let Some(Value::Array(messages)) = object.remove("messages") else {
        return Err(BadRequest("field `messages` must be an array".into()));
    };
    if messages.is_empty() {
        return Err(BadRequest("field `messages` must not be empty".into()));
    }
    read_messages(&messages, &mut request)?;
    request.stream = match object.remove("stream") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(stream)) => stream,
        Some(_) => return Err(BadRequest("field `stream` must be a boolean".into())),
    };
    for name in ["max_tokens", "max_completion_tokens"] {
        if let Some(value) = object.remove(name).filter(|v| !v.is_null()) {
            let tokens = value
                .as_u64()
                .filter(|n| *n > 0)
                .ok_or_else(|| BadRequest(format!("field `{name}` must be a positive integer")))?;
            request.max_tokens = Some(tokens);
        }
    }
    request.temperature = number(&mut object, "temperature")?;
    request.top_p = number(&mut object, "top_p")?;
    request.stop = match object.remove("stop") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(stop)) => vec![stop],
        Some(Value::Array(stops)) => stops
            .into_iter()
            .map(|s| match s {
                Value::String(s) => Ok(s),
                _ => Err(BadRequest(
                    "field `stop` must be a string or strings".into(),
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(BadRequest(
                "field `stop` must be a string or strings".into(),
            ))
        }
    };
    match object.get("n") {
        None | Some(Value::Null) => {}
        Some(n) if n.as_u64() == Some(1) => {
            object.remove("n");
        }
        Some(_) => request.openai_only.push("field `n` above 1".into()),
    }
    for (name, value) in object {
        if TOOL_FIELDS.contains(&name.as_str()) {
            if let Some(why) = tools::untranslatable_field(&name, &value) {
                request.openai_only.push(why);
            }
        } else if !HARMLESS.contains(&name.as_str()) && !value.is_null() {
            request.openai_only.push(format!("field `{name}`"));
        }
        request.openai_extra.insert(name, value);
    }
    Ok(request)
}

fn number(object: &mut Map<String, Value>, name: &str) -> Result<Option<f64>, BadRequest> {
    match object.remove(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_f64()
            .map(Some)
            .ok_or_else(|| BadRequest(format!("field `{name}` must be a number"))),
    }
}

fn read_messages(messages: &[Value], request: &mut ChatRequest) -> Result<(), BadRequest> {
    let mut system: Vec<String> = Vec::new();
    let mut plain = true;
    for (index, message) in messages.iter().enumerate() {
        let at = |what: &str| BadRequest(format!("messages[{index}]: {what}"));
        let Value::Object(message) = message else {
            return Err(at("must be an object"));
        };
        let role = message
            .get("role")
            .and_then(Value::as_str)
            .ok_or_else(|| at("field `role` must be a string"))?;
        let text = match message.get("content") {
            Some(Value::String(text)) => Some(text.clone()),
            Some(Value::Array(parts)) => text_parts(parts),
            None | Some(Value::Null) => None,
            Some(_) => return Err(at("field `content` must be a string, an array or null")),
        };
        let extra_fields = message
            .keys()
            .any(|k| !matches!(k.as_str(), "role" | "content" | "name"));
        let role = match role {
            "system" | "developer" => None,
            "user" => Some(Role::User),
            "assistant" => Some(Role::Assistant),
            "tool" | "function" => {
                if !tools::translatable_message(message) {
                    request
                        .openai_only
                        .push(format!("messages[{index}] (a {role} result)"));
                }
                plain = false;
                continue;
            }
            other => return Err(at(&format!("unknown role {other:?}"))),
        };
        let Some(text) = text.filter(|_| !extra_fields) else {
            if !tools::translatable_message(message) {
                request
                    .openai_only
                    .push(format!("messages[{index}] (more than text)"));
            }
            plain = false;
            continue;
        };
        match role {
            None => system.push(text),
            Some(role) => request.messages.push(Message {
                role,
                content: text,
            }),
        }
    }
    if !system.is_empty() {
        request.system = Some(system.join("\n\n"));
    }
    if !plain {
        request.openai_messages = Some(messages.to_vec());
    }
    Ok(())
}

/// The text of content parts, when every part is text.
fn text_parts(parts: &[Value]) -> Option<String> {
    let mut text = String::new();
    for part in parts {
        if part.get("type").and_then(Value::as_str) != Some("text") {
            return None;
        }
        text.push_str(part.get("text").and_then(Value::as_str)?);
    }
    Some(text)
}

/// The upstream request body for `model` (the provider's own model name).
pub fn render_request(request: &ChatRequest, model: &str) -> Value {
    let messages = match &request.openai_messages {
        Some(raw) => raw.clone(),
        None => request
            .system
            .iter()
            .map(|system| json!({"role": "system", "content": system}))
            .chain(
                request
                    .messages
                    .iter()
                    .map(|m| json!({"role": m.role.as_str(), "content": m.content})),
            )
            .collect(),
    };
    let mut body = request.openai_extra.clone();
    body.insert("model".into(), model.into());
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), request.stream.into());
    if let Some(max) = request.max_tokens {
        body.insert("max_tokens".into(), max.into());
    }
    if let Some(t) = request.temperature {
        body.insert("temperature".into(), t.into());
    }
    if let Some(p) = request.top_p {
        body.insert("top_p".into(), p.into());
    }
    if !request.stop.is_empty() {
        body.insert("stop".into(), request.stop.clone().into());
    }
    Value::Object(body)
}

/// Reads an upstream's non-streaming reply. An in-band error object, or a
/// body that is not a completion, is a provider error carrying the body.
pub fn parse_completion(text: &str) -> Result<Completion, ProviderError> {
    let value: Value = serde_json::from_str(text).map_err(|_| unreadable(text))?;
    if value.get("error").is_some_and(|e| !e.is_null()) {
        return Err(ProviderError::message(text));
    }
    let choice = value
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or_else(|| unreadable(text))?;
    let message = choice.get("message").ok_or_else(|| unreadable(text))?;
    let mut message_extra = message.as_object().cloned().unwrap_or_default();
    message_extra.remove("role");
    let content = message_extra.remove("content");
    message_extra.retain(|_, v| !v.is_null());
    Ok(Completion {
        id: value
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        text: content
            .as_ref()
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        finish: finish(choice.get("finish_reason")).unwrap_or(FinishReason::Stop),
        usage: usage(value.get("usage")),
        message_extra,
    })
}

/// A provider error for a reply that is not the expected shape.
pub(crate) fn unreadable(text: &str) -> ProviderError {
    const PREVIEW: usize = 200;
    let mut end = text.len().min(PREVIEW);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    ProviderError::message(format!(
        "the provider's reply is not a chat completion: {:?}",
        &text[..end]
    ))
}

fn finish(value: Option<&Value>) -> Option<FinishReason> {
    Some(match value?.as_str()? {
        "stop" => FinishReason::Stop,
        "length" => FinishReason::Length,
        "content_filter" => FinishReason::ContentFilter,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        other => FinishReason::Other(other.to_owned()),
    })
}

fn usage(value: Option<&Value>) -> Option<TokenUsage> {
    let value = value?;
    Some(TokenUsage {
        prompt_tokens: value.get("prompt_tokens")?.as_u64()?,
        completion_tokens: value.get("completion_tokens")?.as_u64()?,
    })
}

/// Reads an OpenAI-shaped upstream stream, one server-sent event at a time.
#[derive(Debug, Default)]
pub struct StreamDecoder {
    /// The stream's id (from its first chunk).
    pub id: String,
    finish: Option<FinishReason>,
    usage: Option<TokenUsage>,
    /// `[DONE]` arrived.
    pub done: bool,
}

impl StreamDecoder {
    /// The events one server-sent event carries; an error event (or an
    /// unreadable chunk) is a provider error.
    pub fn feed(&mut self, event: &SseEvent) -> Result<Vec<StreamEvent>, ProviderError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(self.finish_event().into_iter().collect());
        }
        if data.is_empty() {
            return Ok(Vec::new());
        }
        let chunk: Value = serde_json::from_str(data).map_err(|_| unreadable(data))?;
        if chunk.get("error").is_some_and(|e| !e.is_null()) || event.event == "error" {
            return Err(ProviderError::message(data));
        }
        if self.id.is_empty() {
            if let Some(id) = chunk.get("id").and_then(Value::as_str) {
                self.id = id.to_owned();
            }
        }
        if let Some(usage) = usage(chunk.get("usage")) {
            self.usage = Some(usage);
        }
        let mut events = Vec::new();
        if let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) {
            let text = choice.pointer("/delta/content").and_then(Value::as_str);
            if let Some(text) = text.filter(|t| !t.is_empty()) {
                events.push(StreamEvent::Text(text.to_owned()));
            }
            if let Some(calls) = choice.pointer("/delta/tool_calls") {
                events.extend(
                    tools::deltas_of(calls)
                        .into_iter()
                        .map(StreamEvent::ToolCall),
                );
            }
            if let Some(reason) = finish(choice.get("finish_reason")) {
                self.finish = Some(reason);
            }
        }
        Ok(events)
    }

    /// The final event when the stream ends: `None` when it ended without
    /// `[DONE]` or a finish reason — cut off, and then [`Self::done`] stays
    /// false: a stream that closes cleanly without saying it is complete is
    /// not complete.
    pub fn end(&mut self) -> Option<StreamEvent> {
        if self.done || self.finish.is_none() {
            return None;
        }
        self.done = true;
        self.finish_event()
    }

    fn finish_event(&mut self) -> Option<StreamEvent> {
        Some(StreamEvent::Finish {
            reason: self.finish.take().unwrap_or(FinishReason::Stop),
            usage: self.usage.take(),
        })
    }
}

/// The client-facing `chat.completion` object.
pub fn completion_json(id: &str, model: &str, created: u64, completion: &Completion) -> Value {
    let mut message = completion.message_extra.clone();
    message.insert("role".into(), "assistant".into());
    message.insert("content".into(), completion.text.clone().into());
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
    body
}

/// What a client-facing chunk carries.
#[derive(Debug, Clone, Copy)]
pub enum Chunk<'a> {
    /// The first chunk: the role, with empty text content, or null content
    /// when the reply opens with a tool call (as OpenAI sends it).
    Role {
        tool_first: bool,
    },
    Event(&'a StreamEvent),
}

/// A client-facing `chat.completion.chunk`: the role on the first, then
/// text and tool-call deltas, then the finish reason (and usage).
pub fn chunk_json(id: &str, model: &str, created: u64, chunk: Chunk<'_>) -> Value {
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
    json!({
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
    })
}

/// An OpenAI-style error object.
pub fn error_json(message: &str, kind: &str, code: Option<&str>) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_requests_round_trip() {
        let request = parse_request(
            br#"{"model":"auto","messages":[{"role":"system","content":"be brief"},
                {"role":"user","content":[{"type":"text","text":"hi"}]}],
                "max_tokens":5,"stop":"\n","user":"u1"}"#,
        )
        .unwrap();
        assert_eq!(request.system.as_deref(), Some("be brief"));
        assert_eq!(request.messages[0].content, "hi");
        assert!(request.openai_only.is_empty(), "{:?}", request.openai_only);
        let body = render_request(&request, "gpt-4o");
        assert_eq!(body["messages"][0]["role"], "system");
        assert_eq!(body["max_tokens"], 5);
        assert_eq!(body["user"], "u1");
    }

    #[test]
    fn what_cannot_be_translated_is_named_and_passed_through() {
        let request = parse_request(
            br#"{"model":"auto","tools":[{"type":"function"}],"messages":[
                {"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}"#,
        )
        .unwrap();
        assert!(request.openai_only.iter().any(|w| w.contains("tools")));
        assert!(request
            .openai_only
            .iter()
            .any(|w| w.contains("messages[0]")));
        let body = render_request(&request, "gpt-4o");
        assert_eq!(body["messages"][0]["content"][0]["type"], "image_url");
        assert!(body["tools"].is_array());
    }

    #[test]
    fn tool_call_deltas_stream_through() {
        let mut decoder = StreamDecoder::default();
        let event = |data: &str| SseEvent {
            event: String::new(),
            data: data.into(),
        };
        let first = decoder
            .feed(&event(
                r#"{"choices":[{"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"weather","arguments":""}}]}}]}"#,
            ))
            .unwrap();
        let [StreamEvent::ToolCall(call)] = &first[..] else {
            panic!("{first:?}")
        };
        assert_eq!(
            (call.id.as_deref(), call.name.as_deref()),
            (Some("call_1"), Some("weather"))
        );
        let next = decoder
            .feed(&event(
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\""}}]}}]}"#,
            ))
            .unwrap();
        assert!(matches!(&next[..], [StreamEvent::ToolCall(c)] if c.arguments == "{\"city\""));
        let chunk = chunk_json("c", "m", 0, Chunk::Event(&next[0]));
        assert_eq!(chunk["choices"][0]["delta"]["tool_calls"][0]["index"], 0);
        let role = chunk_json("c", "m", 0, Chunk::Role { tool_first: true });
        assert!(role["choices"][0]["delta"]["content"].is_null());
    }

    #[test]
    fn tool_requests_stay_translatable() {
        let request = parse_request(
            br#"{"model":"auto","tools":[{"type":"function","function":{"name":"f"}}],
                "tool_choice":"auto","messages":[{"role":"user","content":"hi"},
                {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
                {"role":"tool","tool_call_id":"c1","content":"done"}]}"#,
        )
        .unwrap();
        assert!(request.openai_only.is_empty(), "{:?}", request.openai_only);
        assert!(request.openai_messages.is_some());
    }

    #[test]
    fn bad_requests_name_the_field() {
        for (body, field) in [
            (&b"{"[..], "not JSON"),
            (br#"{"messages":[]}"#, "`model`"),
            (br#"{"model":"a","messages":{}}"#, "`messages`"),
            (
                br#"{"model":"a","messages":[{"role":"x","content":"y"}]}"#,
                "messages[0]",
            ),
            (
                br#"{"model":"a","messages":[{"role":"user","content":"y"}],"max_tokens":-1}"#,
                "max_tokens",
            ),
        ] {
            let error = parse_request(body).unwrap_err().to_string();
            assert!(error.contains(field), "{error}");
        }
    }

    #[test]
    fn replies_in_band_errors_and_garbage() {
        let ok = parse_completion(
            r#"{"id":"c1","choices":[{"message":{"role":"assistant","content":"hey"},"finish_reason":"length"}],
                "usage":{"prompt_tokens":3,"completion_tokens":1}}"#,
        )
        .unwrap();
        assert_eq!((ok.text.as_str(), ok.finish.as_openai()), ("hey", "length"));
        assert_eq!(ok.usage.unwrap().completion_tokens, 1);
        let in_band =
            parse_completion(r#"{"error":{"message":"overloaded","code":529}}"#).unwrap_err();
        assert!(in_band.message.contains("overloaded"));
        let garbage = parse_completion("<html>oops</html>").unwrap_err();
        assert!(garbage.message.contains("not a chat completion"));
    }

    #[test]
    fn streams_decode_text_finish_and_errors() {
        let mut decoder = StreamDecoder::default();
        let event = |data: &str| SseEvent {
            event: String::new(),
            data: data.into(),
        };
        assert_eq!(
            decoder
                .feed(&event(
                    r#"{"id":"s1","choices":[{"delta":{"content":"a"}}]}"#
                ))
                .unwrap(),
            [StreamEvent::Text("a".into())]
        );
        assert!(decoder
            .feed(&event(
                r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#
            ))
            .unwrap()
            .is_empty());
        assert!(matches!(
            decoder.feed(&event("[DONE]")).unwrap()[..],
            [StreamEvent::Finish { .. }]
        ));
        assert_eq!(decoder.id, "s1");
        let mut cut = StreamDecoder::default();
        cut.feed(&event(r#"{"choices":[{"delta":{"content":"half"}}]}"#))
            .unwrap();
        assert_eq!(cut.end(), None);
        assert!(!cut.done, "a clean close without a terminator is a cut");
        let mut finished = StreamDecoder::default();
        finished
            .feed(&event(
                r#"{"choices":[{"delta":{},"finish_reason":"length"}]}"#,
            ))
            .unwrap();
        assert!(matches!(finished.end(), Some(StreamEvent::Finish { .. })));
        assert!(finished.done);
        assert!(StreamDecoder::default()
            .feed(&event(r#"{"error":{"message":"x"}}"#))
            .is_err());
    }
}
