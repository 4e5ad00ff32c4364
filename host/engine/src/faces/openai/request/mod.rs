//! Client requests in the OpenAI chat-completions shape: parsing what a
//! client sends, naming the field when it is wrong.

use serde_json::{Map, Value};

use crate::model::{ChatRequest, Message, Role};
use crate::wire::tools::{self, TOOL_FIELDS};
pub(crate) mod plain;

use plain::plain_request;

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
pub(crate) struct BadRequest(pub String);

/// Parses a client's chat-completions request body: a plain one in one
/// pass ([`plain_request`]), any other through a JSON tree.
pub(crate) fn parse_request(body: &[u8]) -> Result<ChatRequest, BadRequest> {
    if let Some(request) = plain_request(body) {
        return Ok(request);
    }
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| BadRequest(format!("the body is not JSON: {e}")))?;
    request_from_value(value)
}

/// Reads a chat-completions request already parsed as JSON.
pub(crate) fn request_from_value(value: Value) -> Result<ChatRequest, BadRequest> {
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
    request.models = models(object.remove("models"))?;
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
    request.stop = stop_sequences(object.remove("stop"))?;
    match object.get("n") {
        None | Some(Value::Null) => {}
        Some(n) if n.as_u64() == Some(1) => {
            object.remove("n");
        }
        Some(_) => {
            request.openai_only.push("field `n` above 1".into());
            if let Some(n) = object.remove("n") {
                request.openai_extra.insert("n".into(), n);
            }
        }
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

/// `models`: the one-off fallbacks, each a non-empty name.
fn models(value: Option<Value>) -> Result<Vec<String>, BadRequest> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(models)) => models
            .into_iter()
            .map(|m| match m {
                Value::String(m) if !m.trim().is_empty() => Ok(m),
                _ => Err(BadRequest(
                    "field `models` must be non-empty strings".into(),
                )),
            })
            .collect(),
        Some(_) => Err(BadRequest(
            "field `models` must be an array of model names".into(),
        )),
    }
}

/// `stop`: one sequence or several.
fn stop_sequences(value: Option<Value>) -> Result<Vec<String>, BadRequest> {
    let invalid = || BadRequest("field `stop` must be a string or strings".into());
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(stop)) => Ok(vec![stop]),
        Some(Value::Array(stops)) => stops
            .into_iter()
            .map(|s| match s {
                Value::String(s) => Ok(s),
                _ => Err(invalid()),
            })
            .collect(),
        Some(_) => Err(invalid()),
    }
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
        let role = match text_role(role) {
            Some(role) => role,
            None if matches!(role, "tool" | "function") => {
                if !tools::translatable_message(message) {
                    request
                        .openai_only
                        .push(format!("messages[{index}] (a {role} result)"));
                }
                plain = false;
                continue;
            }
            None => return Err(at(&format!("unknown role {role:?}"))),
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

/// The role of a message that can be plain text: `Some(None)` for a
/// system one (`system`, `developer`), `None` for a role that is not a
/// text turn's. One table for both request readers.
pub(super) fn text_role(role: &str) -> Option<Option<Role>> {
    match role {
        "system" | "developer" => Some(None),
        "user" => Some(Some(Role::User)),
        "assistant" => Some(Some(Role::Assistant)),
        _ => None,
    }
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
