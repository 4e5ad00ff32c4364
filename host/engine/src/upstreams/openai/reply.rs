//! Replies of OpenAI-compatible upstreams: the whole reply and its stream
//! read.

use serde_json::{json, Value};

use super::fields::{finish_named, usage};
use super::whole::{self, Unread};
use crate::model::{Completion, FinishReason, StreamEvent, TokenUsage};
use crate::wire::sse::SseEvent;
use crate::wire::tools;
use failover_policy::ProviderError;

/// Reads an upstream's non-streaming reply. An in-band error object, or a
/// body that is not a completion, is a provider error carrying the body.
pub(crate) fn parse_completion(text: impl Into<String>) -> Result<Completion, ProviderError> {
    let read = whole::read(text.into()).map_err(|(unread, text)| match unread {
        Unread::InBandError => ProviderError::message(text),
        Unread::NotACompletion => unreadable(&text),
    })?;
    Ok(read.into_completion())
}

/// A provider error for a reply that is not the expected shape.
pub(crate) fn unreadable(text: &str) -> ProviderError {
    ProviderError::message(format!(
        "the provider's reply is not a chat completion: {:?}",
        preview(text)
    ))
}

/// A provider error for a stream event that cannot be read: the stream is
/// over, before its terminal event (F-12.12), and worded so that a policy
/// reads an incomplete stream, a timeout.
pub(crate) fn garbled_event(text: &str) -> ProviderError {
    ProviderError::message(format!("{GARBLED_EVENT}{:?}", preview(text)))
}

/// How [`garbled_event`] starts its message.
const GARBLED_EVENT: &str =
    "a stream event is unreadable, so the stream ended before a terminal event: ";

/// Whether `error` is one [`garbled_event`] made.
pub(crate) fn is_garbled(error: &ProviderError) -> bool {
    error.message.starts_with(GARBLED_EVENT) && error.code.is_none()
}

/// The start of `text`: enough to recognise it, never a whole reply.
fn preview(text: &str) -> &str {
    const PREVIEW: usize = 200;
    let mut end = text.len().min(PREVIEW);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

fn finish(value: Option<&Value>) -> Option<FinishReason> {
    Some(finish_named(value?.as_str()?))
}

/// Reads an OpenAI-shaped upstream stream, one server-sent event at a time.
#[derive(Debug, Default)]
pub(crate) struct StreamDecoder {
    /// The stream's id (from its first chunk).
    pub id: String,
    finish: Option<FinishReason>,
    usage: Option<TokenUsage>,
    /// A `finish_reason` arrived.
    finished: bool,
    /// `[DONE]` arrived after a `finish_reason`: the stream is complete.
    pub done: bool,
    /// The `system_fingerprint` was passed on already.
    fingerprint_sent: bool,
}

/// A choice's `index` (0 when absent, as a single-choice stream has it).
fn index_of(choice: &Value) -> u64 {
    choice.get("index").and_then(Value::as_u64).unwrap_or(0)
}

impl StreamDecoder {
    /// The events one server-sent event carries; an error event (or an
    /// unreadable chunk) is a provider error.
    pub(crate) fn feed(&mut self, event: &SseEvent) -> Result<Vec<StreamEvent>, ProviderError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            // Complete only with both (F-12.12): a `[DONE]` after no
            // finish reason ends a reply cut short upstream.
            if !self.finished {
                return Err(ProviderError::message(
                    "the stream ended without finish_reason: [DONE] came before the reply was complete",
                ));
            }
            self.done = true;
            return Ok(self.finish_event().into_iter().collect());
        }
        if data.is_empty() {
            return Ok(Vec::new());
        }
        let chunk: Value = serde_json::from_str(data).map_err(|_| garbled_event(data))?;
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
        let extra = self.extra_of(&chunk);
        let first = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|choices| choices.iter().find(|c| index_of(c) == 0));
        if let Some(choice) = first {
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
                self.finished = true;
            }
        }
        // After the content it came with: logprobs follow their text.
        events.extend(extra.map(StreamEvent::Extra));
        Ok(events)
    }

    /// What of `chunk` the other events do not carry, as chunk fields: the
    /// choices after the first, the first's `logprobs` and `refusal`
    /// delta, and the `system_fingerprint` (once).
    fn extra_of(&mut self, chunk: &Value) -> Option<serde_json::Map<String, Value>> {
        let mut extra = serde_json::Map::new();
        let mut choices = Vec::new();
        for choice in chunk
            .get("choices")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if index_of(choice) != 0 {
                choices.push(choice.clone());
                continue;
            }
            let logprobs = choice.get("logprobs").filter(|v| !v.is_null());
            let refusal = choice.pointer("/delta/refusal").filter(|v| !v.is_null());
            if logprobs.is_some() || refusal.is_some() {
                let mut delta = json!({});
                if let Some(refusal) = refusal {
                    delta["refusal"] = refusal.clone();
                }
                choices.push(json!({"index": 0, "delta": delta,
                    "logprobs": logprobs.cloned().unwrap_or(Value::Null), "finish_reason": null}));
            }
        }
        if !choices.is_empty() {
            extra.insert("choices".into(), choices.into());
        }
        if !self.fingerprint_sent {
            if let Some(fingerprint) = chunk.get("system_fingerprint").filter(|v| v.is_string()) {
                extra.insert("system_fingerprint".into(), fingerprint.clone());
                self.fingerprint_sent = true;
            }
        }
        (!extra.is_empty()).then_some(extra)
    }

    fn finish_event(&mut self) -> Option<StreamEvent> {
        Some(StreamEvent::Finish {
            reason: self.finish.take().unwrap_or(FinishReason::Stop),
            usage: self.usage.take(),
        })
    }
}

impl crate::upstreams::api::StreamDecode for StreamDecoder {
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
