//! The request body sent to an OpenAI-compatible upstream, written straight
//! from a [`ChatRequest`].

use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;
use serde_json::Value;

use crate::model::ChatRequest;

/// The upstream request for `model` (the provider's own model name), as
/// JSON. Its members are those of [`request_body`], ordered by name.
pub(crate) fn render_request(request: &ChatRequest, model: &str) -> Value {
    // Infallible: every member is a string, number, bool or JSON value.
    serde_json::to_value(Upstream { request, model }).unwrap_or_default()
}

/// The upstream request body for `model`, written straight from the
/// request: no JSON tree is built (it cost a fifth of the gateway's own
/// work per request).
pub(crate) fn request_body(
    request: &ChatRequest,
    model: &str,
) -> Result<Vec<u8>, serde_json::Error> {
    serde_json::to_vec(&Upstream { request, model })
}

/// The members the gateway writes itself; a passed-through field of the
/// same name is never written twice (none is kept today: parsing takes
/// them out).
const WRITTEN: &[&str] = &[
    "model",
    "messages",
    "stream",
    "max_tokens",
    "temperature",
    "top_p",
    "stop",
];

/// A request as an OpenAI-compatible upstream gets it.
struct Upstream<'a> {
    request: &'a ChatRequest,
    model: &'a str,
}

impl Serialize for Upstream<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let request = self.request;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("model", self.model)?;
        match &request.openai_messages {
            Some(raw) => map.serialize_entry("messages", raw)?,
            None => map.serialize_entry("messages", &PlainMessages(request))?,
        }
        map.serialize_entry("stream", &request.stream)?;
        if let Some(max) = request.max_tokens {
            map.serialize_entry("max_tokens", &max)?;
        }
        if let Some(t) = request.temperature {
            map.serialize_entry("temperature", &t)?;
        }
        if let Some(p) = request.top_p {
            map.serialize_entry("top_p", &p)?;
        }
        if !request.stop.is_empty() {
            map.serialize_entry("stop", &request.stop)?;
        }
        for (name, value) in &request.openai_extra {
            if !WRITTEN.contains(&name.as_str()) {
                map.serialize_entry(name, value)?;
            }
        }
        map.end()
    }
}

/// A text-only conversation: the system prompt first, then the turns.
struct PlainMessages<'a>(&'a ChatRequest);

impl Serialize for PlainMessages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let request = self.0;
        let count = usize::from(request.system.is_some()) + request.messages.len();
        let mut seq = serializer.serialize_seq(Some(count))?;
        if let Some(system) = &request.system {
            seq.serialize_element(&TextMessage {
                role: "system",
                content: system,
            })?;
        }
        for message in &request.messages {
            seq.serialize_element(&TextMessage {
                role: message.role.as_str(),
                content: &message.content,
            })?;
        }
        seq.end()
    }
}

/// One text turn.
#[derive(Serialize)]
struct TextMessage<'a> {
    role: &'a str,
    content: &'a str,
}
