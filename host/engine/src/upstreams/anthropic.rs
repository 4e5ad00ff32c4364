//! The Anthropic Messages shape (upstream only): rendering requests,
//! reading replies and streams.

use serde_json::{json, Value};

use reqwest::RequestBuilder;

use super::api::{unwritable, with_bearer, StreamDecode, Upstream};
use super::auth_header;
use super::openai::{garbled_event, unreadable};
use crate::auth::CredentialKind;
use crate::model::{
    ChatRequest, Completion, FinishReason, StreamEvent, TokenUsage, ToolCallDelta, TranslateError,
};
use crate::state::Credential;
use crate::wire::sse::SseEvent;
use crate::wire::tools;
use failover_policy::ProviderError;

/// `max_tokens` when the client gave none: Anthropic requires one, and
/// OpenAI clients expect "as much as the model likes"; 4096 fits every
/// current model's output limit.
pub(crate) const DEFAULT_MAX_TOKENS: u64 = 4096;

/// The API version header value this translation is written against.
pub(crate) const API_VERSION: &str = "2023-06-01";

/// Anthropic's Messages API.
pub(crate) struct AnthropicMessages;

impl Upstream for AnthropicMessages {
    fn body(&self, request: &ChatRequest, model: &str) -> Result<Vec<u8>, ProviderError> {
        let body = render_request(request, model).map_err(|e| {
            ProviderError::message(e.to_string())
                .with_status(400)
                .with_code("untranslatable_request")
        })?;
        serde_json::to_vec(&body).map_err(unwritable)
    }

    fn authorise(&self, post: RequestBuilder, credential: &Credential) -> RequestBuilder {
        let post = post.header("anthropic-version", API_VERSION);
        let secret = credential.secret.expose();
        match credential.kind {
            CredentialKind::ApiKey => match auth_header::api_key(secret) {
                Some(value) => post.header("x-api-key", value),
                // A byte no header can carry: reqwest reports the bad value.
                None => post.header("x-api-key", secret),
            },
            CredentialKind::OAuth | CredentialKind::Token => with_bearer(post, secret),
        }
    }

    fn read_whole(&self, text: String) -> Result<Completion, ProviderError> {
        parse_completion(&text)
    }

    fn decoder(&self) -> Box<dyn StreamDecode> {
        Box::<StreamDecoder>::default()
    }
}

/// The upstream request body, or why the request cannot be translated.
pub(crate) fn render_request(request: &ChatRequest, model: &str) -> Result<Value, TranslateError> {
    let api = crate::config::Api::AnthropicMessages;
    if let Some(what) =
        crate::model::unexpressible(api, &request.openai_only, &request.anthropic_only)
    {
        return Err(TranslateError(format!(
            "this request cannot be translated to the Anthropic Messages API: {what} has no counterpart there"
        )));
    }
    let messages = match &request.openai_messages {
        // Tool calls and results: translated turn by turn.
        Some(raw) => tools::anthropic_messages(raw)?,
        None => text_turns(request),
    };
    let mut body = json!({
        "model": model,
        "max_tokens": request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "messages": messages,
    });
    tools::add_anthropic_tools(&request.openai_extra, &mut body);
    for (name, value) in &request.anthropic_extra {
        body[name.as_str()] = value.clone();
    }
    if let Some(system) = &request.system {
        body["system"] = system.clone().into();
    }
    if request.stream {
        body["stream"] = true.into();
    }
    if let Some(t) = request.temperature {
        body["temperature"] = t.into();
    }
    if let Some(p) = request.top_p {
        body["top_p"] = p.into();
    }
    if !request.stop.is_empty() {
        body["stop_sequences"] = request.stop.clone().into();
    }
    Ok(body)
}

/// Text turns, consecutive turns of one role merged (Anthropic wants them
/// alternating).
fn text_turns(request: &ChatRequest) -> Vec<Value> {
    let mut messages: Vec<(crate::model::Role, String)> = Vec::new();
    for message in &request.messages {
        match messages.last_mut() {
            Some((role, text)) if *role == message.role => {
                text.push_str("\n\n");
                text.push_str(&message.content);
            }
            _ => messages.push((message.role, message.content.clone())),
        }
    }
    messages
        .iter()
        .map(|(role, text)| json!({"role": role.as_str(), "content": text}))
        .collect()
}

/// Reads a non-streaming reply; an `error` object or another shape is a
/// provider error carrying the body.
pub(crate) fn parse_completion(text: &str) -> Result<Completion, ProviderError> {
    let value: Value = serde_json::from_str(text).map_err(|_| unreadable(text))?;
    if value.get("type").and_then(Value::as_str) == Some("error")
        || value.get("error").is_some_and(|e| !e.is_null())
    {
        return Err(ProviderError::message(text));
    }
    let content = value
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| unreadable(text))?;
    let text_out: String = content
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect();
    let mut message_extra = serde_json::Map::new();
    if let Some(calls) = tools::openai_tool_calls(content) {
        message_extra.insert("tool_calls".into(), calls);
    }
    Ok(Completion {
        id: value
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        text: text_out,
        finish: stop_reason(value.get("stop_reason"), value.get("stop_sequence"))
            .unwrap_or(FinishReason::Stop),
        usage: value.get("usage").and_then(|u| {
            let (read, written) = cache_tokens(u);
            Some(TokenUsage {
                prompt_tokens: u.get("input_tokens")?.as_u64()? + read + written,
                completion_tokens: u.get("output_tokens")?.as_u64()?,
                cached_tokens: u.get("cache_read_input_tokens").and_then(Value::as_u64),
                reasoning_tokens: None,
            })
        }),
        message_extra,
        raw: None,
    })
}

/// Anthropic's cache reads and writes, which its `input_tokens` leaves out.
fn cache_tokens(usage: &Value) -> (u64, u64) {
    let count = |name: &str| usage.get(name).and_then(Value::as_u64).unwrap_or(0);
    (
        count("cache_read_input_tokens"),
        count("cache_creation_input_tokens"),
    )
}

fn stop_reason(value: Option<&Value>, sequence: Option<&Value>) -> Option<FinishReason> {
    Some(match value?.as_str()? {
        "end_turn" | "pause_turn" => FinishReason::Stop,
        "stop_sequence" => {
            FinishReason::StopSequence(sequence.and_then(Value::as_str).map(str::to_owned))
        }
        "max_tokens" => FinishReason::Length,
        "tool_use" => FinishReason::ToolCalls,
        "refusal" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    })
}

/// Reads an Anthropic stream, one server-sent event at a time.
#[derive(Debug, Default)]
pub(crate) struct StreamDecoder {
    pub id: String,
    input_tokens: Option<u64>,
    cached_tokens: Option<u64>,
    output_tokens: Option<u64>,
    finish: Option<FinishReason>,
    /// Content block index → tool-call index, for each `tool_use` block.
    tool_blocks: Vec<(u64, u32)>,
    /// `message_stop` arrived.
    pub done: bool,
}

impl StreamDecoder {
    /// The events one server-sent event carries; an `error` event is a
    /// provider error carrying its data.
    pub(crate) fn feed(&mut self, event: &SseEvent) -> Result<Vec<StreamEvent>, ProviderError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(Vec::new());
        }
        let value: Value = serde_json::from_str(data).map_err(|_| garbled_event(data))?;
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(&event.event);
        Ok(match kind {
            "error" => return Err(ProviderError::message(data)),
            "message_start" => {
                self.message_start(&value);
                None
            }
            "content_block_start" => self.block_start(&value),
            "content_block_delta" => self.block_delta(&value),
            "message_delta" => {
                self.message_delta(&value);
                None
            }
            "message_stop" => {
                self.done = true;
                Some(self.finish_event())
            }
            _ => None,
        }
        .into_iter()
        .collect())
    }

    /// `message_start`: the id and the prompt's tokens.
    fn message_start(&mut self, value: &Value) {
        let message = value.get("message");
        if let Some(id) = message.and_then(|m| m.get("id")).and_then(Value::as_str) {
            self.id = id.to_owned();
        }
        let usage = message.and_then(|m| m.get("usage"));
        let (read, written) = usage.map(cache_tokens).unwrap_or_default();
        self.input_tokens = usage
            .and_then(|u| u.get("input_tokens"))
            .and_then(Value::as_u64)
            .map(|input| input + read + written);
        self.cached_tokens = usage
            .and_then(|u| u.get("cache_read_input_tokens"))
            .and_then(Value::as_u64);
    }

    /// `content_block_start`: a `tool_use` block starts a tool call (its
    /// input comes as deltas; a proxy may send it whole here).
    fn block_start(&mut self, value: &Value) -> Option<StreamEvent> {
        let block = value.get("content_block")?;
        if block.get("type").and_then(Value::as_str) != Some("tool_use") {
            return None;
        }
        let index = u32::try_from(self.tool_blocks.len()).unwrap_or(u32::MAX);
        let at = value
            .get("index")
            .and_then(Value::as_u64)
            .unwrap_or(u64::MAX);
        self.tool_blocks.push((at, index));
        let arguments = block
            .get("input")
            .filter(|i| i.as_object().is_some_and(|o| !o.is_empty()))
            .map(Value::to_string)
            .unwrap_or_default();
        Some(StreamEvent::ToolCall(ToolCallDelta {
            index,
            id: block.get("id").and_then(Value::as_str).map(str::to_owned),
            name: block.get("name").and_then(Value::as_str).map(str::to_owned),
            arguments,
        }))
    }

    /// `content_block_delta`: text, or a piece of a tool call's input.
    fn block_delta(&self, value: &Value) -> Option<StreamEvent> {
        if let Some(text) = value.pointer("/delta/text").and_then(Value::as_str) {
            if !text.is_empty() {
                return Some(StreamEvent::Text(text.to_owned()));
            }
        }
        let json = value
            .pointer("/delta/partial_json")
            .and_then(Value::as_str)?;
        let at = value
            .get("index")
            .and_then(Value::as_u64)
            .unwrap_or(u64::MAX);
        let index = self
            .tool_blocks
            .iter()
            .find(|(block, _)| *block == at)
            .or(self.tool_blocks.last())
            .map(|(_, index)| *index)?;
        (!json.is_empty()).then(|| {
            StreamEvent::ToolCall(ToolCallDelta {
                index,
                arguments: json.to_owned(),
                ..Default::default()
            })
        })
    }

    /// `message_delta`: the stop reason and the reply's tokens.
    fn message_delta(&mut self, value: &Value) {
        let sequence = value.pointer("/delta/stop_sequence");
        if let Some(reason) = stop_reason(value.pointer("/delta/stop_reason"), sequence) {
            self.finish = Some(reason);
        }
        if let Some(out) = value
            .pointer("/usage/output_tokens")
            .and_then(Value::as_u64)
        {
            self.output_tokens = Some(out);
        }
    }

    fn finish_event(&mut self) -> StreamEvent {
        StreamEvent::Finish {
            reason: self.finish.take().unwrap_or(FinishReason::Stop),
            usage: match (self.input_tokens, self.output_tokens) {
                (Some(prompt_tokens), Some(completion_tokens)) => Some(TokenUsage {
                    prompt_tokens,
                    completion_tokens,
                    cached_tokens: self.cached_tokens,
                    reasoning_tokens: None,
                }),
                _ => None,
            },
        }
    }
}

impl StreamDecode for StreamDecoder {
    fn feed(&mut self, event: &SseEvent) -> Result<Vec<StreamEvent>, ProviderError> {
        StreamDecoder::feed(self, event)
    }

    fn done(&self) -> bool {
        self.done
    }

    fn id(&self) -> &str {
        &self.id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Message, Role};

    #[test]
    fn requests_translate_system_turns_and_limits() {
        let request = ChatRequest {
            system: Some("be brief".into()),
            messages: vec![
                Message {
                    role: Role::User,
                    content: "a".into(),
                },
                Message {
                    role: Role::User,
                    content: "b".into(),
                },
                Message {
                    role: Role::Assistant,
                    content: "c".into(),
                },
            ],
            stop: vec!["X".into()],
            ..Default::default()
        };
        let body = render_request(&request, "claude-sonnet-4").unwrap();
        assert_eq!(body["system"], "be brief");
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
        assert_eq!(body["messages"][0]["content"], "a\n\nb");
        assert_eq!(body["messages"].as_array().unwrap().len(), 2);
        assert_eq!(body["stop_sequences"][0], "X");
        let tools = ChatRequest {
            openai_only: vec!["field `response_format`".into()],
            ..Default::default()
        };
        let error = render_request(&tools, "m").unwrap_err().to_string();
        assert!(
            error.contains("field `response_format`") && error.contains("cannot be translated")
        );
    }

    #[test]
    fn replies_and_streams() {
        let reply = parse_completion(
            r#"{"id":"m1","type":"message","content":[{"type":"text","text":"hi"}],
                "stop_reason":"max_tokens","usage":{"input_tokens":4,"output_tokens":2}}"#,
        )
        .unwrap();
        assert_eq!(
            (reply.text.as_str(), reply.finish.as_openai()),
            ("hi", "length")
        );
        assert!(
            parse_completion(r#"{"type":"error","error":{"type":"overloaded_error"}}"#).is_err()
        );
        let mut decoder = StreamDecoder::default();
        let feed = |d: &mut StreamDecoder, data: &str| {
            d.feed(&SseEvent {
                event: String::new(),
                data: data.into(),
            })
            .unwrap()
        };
        feed(
            &mut decoder,
            r#"{"type":"message_start","message":{"id":"m2","usage":{"input_tokens":3}}}"#,
        );
        assert_eq!(
            feed(
                &mut decoder,
                r#"{"type":"content_block_delta","delta":{"type":"text_delta","text":"yo"}}"#
            ),
            [StreamEvent::Text("yo".into())]
        );
        feed(
            &mut decoder,
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}"#,
        );
        let last = feed(&mut decoder, r#"{"type":"message_stop"}"#);
        assert_eq!(
            last,
            [StreamEvent::Finish {
                reason: FinishReason::Stop,
                usage: Some(TokenUsage {
                    prompt_tokens: 3,
                    completion_tokens: 1,
                    ..TokenUsage::default()
                })
            }]
        );
        let mut tool = StreamDecoder::default();
        let start = feed(
            &mut tool,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"weather","input":{}}}"#,
        );
        assert!(matches!(&start[..], [StreamEvent::ToolCall(c)]
            if c.id.as_deref() == Some("toolu_1") && c.index == 0 && c.arguments.is_empty()));
        let piece = feed(
            &mut tool,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Oslo\"}"}}"#,
        );
        assert!(matches!(&piece[..], [StreamEvent::ToolCall(c)]
            if c.index == 0 && c.arguments == r#"{"city": "Oslo"}"# && c.id.is_none()));
        let reply = parse_completion(
            r#"{"id":"m3","type":"message","content":[{"type":"tool_use","id":"toolu_2","name":"f","input":{"a":1}}],
                "stop_reason":"tool_use"}"#,
        )
        .unwrap();
        assert_eq!(reply.finish, FinishReason::ToolCalls);
        assert_eq!(
            reply.message_extra["tool_calls"][0]["function"]["arguments"],
            r#"{"a":1}"#
        );
        let error = StreamDecoder::default()
            .feed(&SseEvent {
                event: "error".into(),
                data: r#"{"type":"error","error":{"type":"overloaded_error"}}"#.into(),
            })
            .unwrap_err();
        assert!(error.message.contains("overloaded_error"));
    }
}
