//! Anthropic Messages requests from clients, read into the one request the
//! runner carries: the conversation is rewritten in the OpenAI shape (which
//! both upstream shapes are rendered from), and what only Anthropic can say
//! is kept aside for Anthropic upstreams.

use serde_json::{json, Map, Value};

use super::super::openai::{request_from_value, BadRequest};
use crate::model::ChatRequest;
use crate::wire::images;

/// Fields passed to Anthropic upstreams and dropped for OpenAI-shaped
/// ones, whose answer is as good without them (hints and bookkeeping).
const ANTHROPIC_HINTS: &[&str] = &["metadata", "service_tier"];

/// Fields dropped for every upstream. `thinking`: thinking blocks are not
/// carried through the translation (neither in replies nor in the history
/// a client sends back), and Anthropic refuses a tool-use conversation
/// with thinking on whose history lacks them — without `thinking` every
/// turn is answered, without the thinking.
const DROPPED: &[&str] = &["thinking"];

/// Parses a client's Messages request body.
pub(crate) fn parse_request(body: &[u8]) -> Result<ChatRequest, BadRequest> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| BadRequest(format!("the body is not JSON: {e}")))?;
    let Value::Object(mut object) = value else {
        return Err(BadRequest("the body must be a JSON object".into()));
    };
    let mut openai = Map::new();
    let mut anthropic_extra = Map::new();
    let mut anthropic_only = Vec::new();
    for name in [
        "model",
        "models",
        "max_tokens",
        "temperature",
        "top_p",
        "stream",
    ] {
        if let Some(value) = object.remove(name) {
            openai.insert(name.into(), value);
        }
    }
    if let Some(stops) = object.remove("stop_sequences") {
        openai.insert("stop".into(), stops);
    }
    let system =
        match object.remove("system") {
            None | Some(Value::Null) => None,
            Some(system) => Some(block_text(&system).ok_or_else(|| {
                BadRequest("field `system` must be a string or text blocks".into())
            })?),
        };
    let Some(Value::Array(messages)) = object.remove("messages") else {
        return Err(BadRequest("field `messages` must be an array".into()));
    };
    let mut turns: Vec<Value> = system
        .map(|text| json!({"role": "system", "content": text}))
        .into_iter()
        .collect();
    for (index, message) in messages.iter().enumerate() {
        openai_turns(index, message, &mut turns)?;
    }
    openai.insert("messages".into(), turns.into());
    if let Some(tools) = object.remove("tools") {
        openai.insert("tools".into(), openai_tools(&tools)?);
    }
    if let Some(choice) = object.remove("tool_choice") {
        openai_choice(&choice, &mut openai)?;
    }
    for (name, value) in object {
        if DROPPED.contains(&name.as_str()) {
            continue;
        }
        if !ANTHROPIC_HINTS.contains(&name.as_str()) && !value.is_null() {
            anthropic_only.push(format!("field `{name}`"));
        }
        anthropic_extra.insert(name, value);
    }
    let mut request = request_from_value(Value::Object(openai))?;
    request.anthropic_extra = anthropic_extra;
    request.anthropic_only = anthropic_only;
    Ok(request)
}

/// The text of a string or of text blocks (`cache_control` and citations
/// are optimisations and annotations: dropped).
fn block_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Array(blocks) => {
            let texts: Option<Vec<&str>> = blocks
                .iter()
                .map(|b| {
                    (b.get("type").and_then(Value::as_str) == Some("text"))
                        .then(|| b.get("text").and_then(Value::as_str))
                        .flatten()
                })
                .collect();
            Some(texts?.join("\n\n"))
        }
        _ => None,
    }
}

/// One Anthropic turn as OpenAI messages: a user turn's tool results
/// become `tool` messages (first, as OpenAI wants them right after the
/// calls), an assistant's `tool_use` blocks its `tool_calls`.
fn openai_turns(index: usize, message: &Value, out: &mut Vec<Value>) -> Result<(), BadRequest> {
    let at = |what: String| BadRequest(format!("messages[{index}]: {what}"));
    let role = message
        .get("role")
        .and_then(Value::as_str)
        .ok_or_else(|| at("field `role` must be a string".into()))?;
    if !matches!(role, "user" | "assistant") {
        return Err(at(format!(
            "unknown role {role:?} (the Messages API takes user and assistant)"
        )));
    }
    let blocks = match message.get("content") {
        Some(Value::String(text)) => {
            out.push(json!({"role": role, "content": text}));
            return Ok(());
        }
        Some(Value::Array(blocks)) => blocks,
        _ => return Err(at("field `content` must be a string or an array".into())),
    };
    let in_block = |(j, what): BlockError| at(format!("content[{j}]: {what}"));
    if role == "user" {
        user_turn(blocks, out).map_err(in_block)
    } else {
        out.push(assistant_turn(blocks).map_err(in_block)?);
        Ok(())
    }
}

type BlockError = (usize, String);

fn user_turn(blocks: &[Value], out: &mut Vec<Value>) -> Result<(), BlockError> {
    let mut parts = Vec::new();
    for (j, block) in blocks.iter().enumerate() {
        match block.get("type").and_then(Value::as_str).unwrap_or("") {
            "text" => parts.push(json!({"type": "text", "text": text_field(block, j)?})),
            "image" => parts.push(
                images::openai_image_part(block)
                    .ok_or((j, "an image must have a base64 or url source".to_owned()))?,
            ),
            "tool_result" => out.push(tool_result(block, j)?),
            other => {
                return Err((
                    j,
                    format!("a {other:?} block is not supported by this gateway"),
                ))
            }
        }
    }
    if !parts.is_empty() {
        out.push(json!({"role": "user", "content": parts}));
    }
    Ok(())
}

fn text_field(block: &Value, j: usize) -> Result<&str, BlockError> {
    block
        .get("text")
        .and_then(Value::as_str)
        .ok_or((j, "a text block needs a string `text`".to_owned()))
}

/// A tool result as an OpenAI `tool` message; an error result says so in
/// its text, the one place both shapes can carry it.
fn tool_result(block: &Value, j: usize) -> Result<Value, BlockError> {
    let id = block
        .get("tool_use_id")
        .and_then(Value::as_str)
        .ok_or((j, "a tool_result needs a string `tool_use_id`".to_owned()))?;
    let text = match block.get("content") {
        None | Some(Value::Null) => String::new(),
        Some(content) => block_text(content).ok_or((
            j,
            "a tool_result's content must be text (images in tool results are not supported)"
                .to_owned(),
        ))?,
    };
    let text = if block.get("is_error") == Some(&Value::Bool(true)) {
        format!("[tool error] {text}")
    } else {
        text
    };
    Ok(json!({"role": "tool", "tool_call_id": id, "content": text}))
}

/// An assistant turn: its text, and its `tool_use` blocks as tool calls.
/// Thinking blocks are left out (neither OpenAI shape nor translation
/// carries them).
fn assistant_turn(blocks: &[Value]) -> Result<Value, BlockError> {
    let mut text = String::new();
    let mut calls = Vec::new();
    for (j, block) in blocks.iter().enumerate() {
        match block.get("type").and_then(Value::as_str).unwrap_or("") {
            "text" => text.push_str(text_field(block, j)?),
            "tool_use" => {
                let field = |name: &str| {
                    block
                        .get(name)
                        .and_then(Value::as_str)
                        .ok_or((j, format!("a tool_use needs a string `{name}`")))
                };
                let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
                calls.push(json!({"id": field("id")?, "type": "function",
                    "function": {"name": field("name")?, "arguments": input.to_string()}}));
            }
            "thinking" | "redacted_thinking" => {}
            other => {
                return Err((
                    j,
                    format!("a {other:?} block is not supported by this gateway"),
                ))
            }
        }
    }
    let mut turn = json!({"role": "assistant", "content": text});
    if !calls.is_empty() {
        turn["tool_calls"] = calls.into();
    }
    Ok(turn)
}

/// Anthropic custom tools as OpenAI function tools.
fn openai_tools(tools: &Value) -> Result<Value, BadRequest> {
    let Value::Array(tools) = tools else {
        return Err(BadRequest("field `tools` must be an array".into()));
    };
    tools
        .iter()
        .enumerate()
        .map(|(i, tool)| {
            let name = tool.get("name").and_then(Value::as_str);
            let custom = tool.get("type").is_none_or(|t| t == "custom");
            match (name, custom) {
                (Some(name), true) => {
                    let mut function = json!({"name": name,
                        "parameters": tool.get("input_schema").cloned().unwrap_or_else(|| json!({"type": "object"}))});
                    if let Some(description) = tool.get("description").filter(|d| d.is_string()) {
                        function["description"] = description.clone();
                    }
                    Ok(json!({"type": "function", "function": function}))
                }
                _ => Err(BadRequest(format!(
                    "tools[{i}]: only custom tools (a name and an input_schema) are supported by this gateway"
                ))),
            }
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

/// Anthropic's `tool_choice` in OpenAI's words.
fn openai_choice(choice: &Value, openai: &mut Map<String, Value>) -> Result<(), BadRequest> {
    let bad =
        || BadRequest("field `tool_choice` must be auto, any, tool (with a name) or none".into());
    let kind = choice.get("type").and_then(Value::as_str).ok_or_else(bad)?;
    let value = match kind {
        "auto" => json!("auto"),
        "any" => json!("required"),
        "none" => json!("none"),
        "tool" => {
            let name = choice.get("name").and_then(Value::as_str).ok_or_else(bad)?;
            json!({"type": "function", "function": {"name": name}})
        }
        _ => return Err(bad()),
    };
    openai.insert("tool_choice".into(), value);
    if choice.get("disable_parallel_tool_use") == Some(&Value::Bool(true)) {
        openai.insert("parallel_tool_calls".into(), false.into());
    }
    Ok(())
}
