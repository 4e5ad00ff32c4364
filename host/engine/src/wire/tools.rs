//! Tools across the two shapes: OpenAI `tools`, `tool_choice`,
//! `parallel_tool_calls`, assistant `tool_calls` and `tool` results as
//! Anthropic `tools`, `tool_choice`, `tool_use` and `tool_result` blocks;
//! Anthropic `tool_use` back as OpenAI tool calls.

use serde_json::{json, Map, Value};

use crate::model::{ToolCallDelta, TranslateError};

/// Request fields about tools, translated for Anthropic upstreams.
pub(crate) const TOOL_FIELDS: &[&str] = &["tools", "tool_choice", "parallel_tool_calls"];

/// Why the OpenAI request field `name` (one of [`TOOL_FIELDS`]) cannot be
/// translated; `None` when it can.
pub(crate) fn untranslatable_field(name: &str, value: &Value) -> Option<String> {
    let ok = match name {
        "tools" => value
            .as_array()
            .is_some_and(|tools| tools.iter().all(|t| function_of(t).is_some())),
        "tool_choice" => anthropic_choice(value).is_some(),
        "parallel_tool_calls" => value.is_boolean(),
        _ => false,
    };
    (!ok).then(|| format!("field `{name}` (this form)"))
}

/// Whether an OpenAI message that is more than text is still one the
/// Anthropic shape can say: an assistant turn with function tool calls,
/// or a tool result of text.
pub(crate) fn translatable_message(message: &Map<String, Value>) -> bool {
    let known = |allowed: &[&str]| message.keys().all(|k| allowed.contains(&k.as_str()));
    match message.get("role").and_then(Value::as_str) {
        Some("assistant") => {
            known(&["role", "content", "name", "tool_calls", "refusal"])
                && message.get("refusal").is_none_or(Value::is_null)
                && text_of(message.get("content")).is_some()
                && message
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .is_some_and(|calls| calls.iter().all(|c| call_of(c).is_some()))
        }
        Some("user") => {
            known(&["role", "content", "name"])
                && super::images::anthropic_blocks(message.get("content")).is_some()
        }
        Some("tool") => {
            known(&["role", "content", "name", "tool_call_id"])
                && message.get("tool_call_id").is_some_and(Value::is_string)
                && text_of(message.get("content")).is_some()
        }
        _ => false,
    }
}

/// Adds Anthropic `tools` and `tool_choice` to `body` from the request's
/// OpenAI fields.
pub(crate) fn add_anthropic_tools(openai: &Map<String, Value>, body: &mut Value) {
    if let Some(tools) = openai.get("tools").and_then(Value::as_array) {
        let tools: Vec<Value> = tools
            .iter()
            .filter_map(function_of)
            .map(|f| {
                let mut tool = json!({
                    "name": f.get("name").cloned().unwrap_or_default(),
                    "input_schema": f.get("parameters").cloned()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
                });
                if let Some(description) = f.get("description").filter(|d| d.is_string()) {
                    tool["description"] = description.clone();
                }
                tool
            })
            .collect();
        if !tools.is_empty() {
            body["tools"] = tools.into();
        }
    }
    let mut choice = openai.get("tool_choice").and_then(anthropic_choice);
    if openai.get("parallel_tool_calls") == Some(&Value::Bool(false)) {
        let choice = choice.get_or_insert_with(|| json!({"type": "auto"}));
        if choice["type"] != "none" {
            choice["disable_parallel_tool_use"] = true.into();
        }
    }
    if let Some(choice) = choice {
        body["tool_choice"] = choice;
    }
}

/// OpenAI's `tool_choice` in Anthropic's words.
fn anthropic_choice(choice: &Value) -> Option<Value> {
    match choice {
        Value::String(s) => match s.as_str() {
            "auto" => Some(json!({"type": "auto"})),
            "required" => Some(json!({"type": "any"})),
            "none" => Some(json!({"type": "none"})),
            _ => None,
        },
        Value::Object(_) if choice["type"] == "function" => {
            let name = choice.pointer("/function/name")?.as_str()?;
            Some(json!({"type": "tool", "name": name}))
        }
        _ => None,
    }
}

/// The `function` of an OpenAI tool definition with a name.
fn function_of(tool: &Value) -> Option<&Map<String, Value>> {
    if tool.get("type").and_then(Value::as_str) != Some("function") {
        return None;
    }
    let function = tool.get("function")?.as_object()?;
    function.get("name")?.as_str()?;
    Some(function)
}

/// `(id, name, arguments)` of an OpenAI assistant tool call.
fn call_of(call: &Value) -> Option<(&str, &str, &str)> {
    if call
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("function")
        != "function"
    {
        return None;
    }
    let id = call.get("id")?.as_str()?;
    let name = call.pointer("/function/name")?.as_str()?;
    let arguments = call
        .pointer("/function/arguments")
        .and_then(Value::as_str)
        .unwrap_or("");
    Some((id, name, arguments))
}

/// The text of a message's content: a string, text parts, or nothing.
fn text_of(content: Option<&Value>) -> Option<String> {
    match content {
        None | Some(Value::Null) => Some(String::new()),
        Some(Value::String(text)) => Some(text.clone()),
        Some(Value::Array(parts)) => parts
            .iter()
            .map(|p| {
                (p.get("type").and_then(Value::as_str) == Some("text"))
                    .then(|| p.get("text").and_then(Value::as_str))
                    .flatten()
            })
            .collect(),
        Some(_) => None,
    }
}

/// OpenAI messages as Anthropic turns: system messages are left out (they
/// are the request's system prompt), assistant tool calls become `tool_use`
/// blocks, tool results `tool_result` blocks of a user turn, and
/// consecutive turns of one role merge (Anthropic wants them alternating).
pub(crate) fn anthropic_messages(messages: &[Value]) -> Result<Vec<Value>, TranslateError> {
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        let at = |what: String| TranslateError(format!("messages[{index}]: {what}"));
        let text_in = |message: &Value| {
            text_of(message.get("content")).ok_or_else(|| at("content that is not text".into()))
        };
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        let (role, blocks) = match role {
            "system" | "developer" => continue,
            "user" => {
                let blocks = super::images::anthropic_blocks(message.get("content"))
                    .ok_or_else(|| at("content other than text and images".into()))?;
                ("user", blocks)
            }
            "assistant" => {
                let mut blocks = text_block(text_in(message)?);
                for call in message
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let (id, name, arguments) =
                        call_of(call).ok_or_else(|| at("a tool call without id or name".into()))?;
                    let input: Value = if arguments.trim().is_empty() {
                        json!({})
                    } else {
                        serde_json::from_str(arguments).map_err(|e| {
                            at(format!("the arguments of tool call {id} are not JSON: {e}"))
                        })?
                    };
                    blocks
                        .push(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
                }
                ("assistant", blocks)
            }
            "tool" => {
                let id = message
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| at("a tool result without `tool_call_id`".into()))?;
                let text = text_in(message)?;
                let result = json!({"type": "tool_result", "tool_use_id": id, "content": text});
                ("user", vec![result])
            }
            other => return Err(at(format!("a {other} turn has no Anthropic counterpart"))),
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, content)) if *last == role => content.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    Ok(turns
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect())
}

fn text_block(text: String) -> Vec<Value> {
    if text.is_empty() {
        Vec::new()
    } else {
        vec![json!({"type": "text", "text": text})]
    }
}

/// OpenAI `tool_calls` of Anthropic content blocks; `None` when there is no
/// `tool_use` block.
pub(crate) fn openai_tool_calls(content: &[Value]) -> Option<Value> {
    let calls: Vec<Value> = content
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("tool_use"))
        .map(|block| {
            let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
            json!({"id": block.get("id").cloned().unwrap_or_default(), "type": "function",
                   "function": {"name": block.get("name").cloned().unwrap_or_default(),
                                "arguments": input.to_string()}})
        })
        .collect();
    (!calls.is_empty()).then(|| calls.into())
}

/// Stream pieces of OpenAI tool calls: a chunk's `delta.tool_calls`, or a
/// whole message's `tool_calls` (one piece per call, indexed by position).
pub(crate) fn deltas_of(tool_calls: &Value) -> Vec<ToolCallDelta> {
    tool_calls
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(position, call)| ToolCallDelta {
            index: call
                .get("index")
                .and_then(Value::as_u64)
                .and_then(|i| u32::try_from(i).ok())
                .unwrap_or(u32::try_from(position).unwrap_or(u32::MAX)),
            id: call.get("id").and_then(Value::as_str).map(str::to_owned),
            name: call
                .pointer("/function/name")
                .and_then(Value::as_str)
                .map(str::to_owned),
            arguments: call
                .pointer("/function/arguments")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
        })
        .collect()
}

/// A tool-call piece as the OpenAI `delta.tool_calls` entry clients read.
pub(crate) fn delta_json(delta: &ToolCallDelta) -> Value {
    let mut call = json!({"index": delta.index, "function": {"arguments": delta.arguments}});
    if let Some(id) = &delta.id {
        call["id"] = id.clone().into();
        call["type"] = "function".into();
    }
    if let Some(name) = &delta.name {
        call["function"]["name"] = name.clone().into();
    }
    call
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_conversation_translates_to_anthropic_turns() {
        let messages: Vec<Value> = serde_json::from_str(
            r#"[{"role":"system","content":"be brief"},
                {"role":"user","content":"weather in Paris and Rome?"},
                {"role":"assistant","content":null,"tool_calls":[
                  {"id":"call_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}},
                  {"id":"call_2","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Rome\"}"}}]},
                {"role":"tool","tool_call_id":"call_1","content":"18C"},
                {"role":"tool","tool_call_id":"call_2","content":[{"type":"text","text":"21C"}]},
                {"role":"user","content":"thanks"}]"#,
        )
        .unwrap();
        for message in &messages[2..5] {
            assert!(
                translatable_message(message.as_object().unwrap()),
                "{message}"
            );
        }
        let turns = anthropic_messages(&messages).unwrap();
        assert_eq!(turns.len(), 3, "{turns:#?}");
        assert_eq!(turns[1]["role"], "assistant");
        assert_eq!(turns[1]["content"][1]["input"]["city"], "Rome");
        assert_eq!(turns[2]["role"], "user");
        assert_eq!(turns[2]["content"][0]["tool_use_id"], "call_1");
        assert_eq!(turns[2]["content"][1]["content"], "21C");
        assert_eq!(turns[2]["content"][2]["text"], "thanks");
    }

    #[test]
    fn tools_and_choices_translate_and_odd_forms_are_named() {
        let openai: Map<String, Value> = serde_json::from_str(
            r#"{"tools":[{"type":"function","function":{"name":"weather","description":"d",
                 "parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],
                "tool_choice":{"type":"function","function":{"name":"weather"}},
                "parallel_tool_calls":false}"#,
        )
        .unwrap();
        for (name, value) in &openai {
            assert_eq!(untranslatable_field(name, value), None, "{name}");
        }
        let mut body = json!({});
        add_anthropic_tools(&openai, &mut body);
        assert_eq!(
            body["tools"][0]["input_schema"]["properties"]["city"]["type"],
            "string"
        );
        assert_eq!(
            body["tool_choice"],
            json!({"type": "tool", "name": "weather", "disable_parallel_tool_use": true})
        );
        assert!(untranslatable_field("tools", &json!([{"type": "code_interpreter"}])).is_some());
        assert!(untranslatable_field("tool_choice", &json!("sometimes")).is_some());
    }

    #[test]
    fn anthropic_tool_use_comes_back_as_openai_calls() {
        let content: Vec<Value> = serde_json::from_str(
            r#"[{"type":"text","text":"let me see"},
                {"type":"tool_use","id":"toolu_1","name":"weather","input":{"city":"Oslo"}}]"#,
        )
        .unwrap();
        let calls = openai_tool_calls(&content).unwrap();
        assert_eq!(calls[0]["function"]["arguments"], r#"{"city":"Oslo"}"#);
        let deltas = deltas_of(&calls);
        assert_eq!(deltas[0].id.as_deref(), Some("toolu_1"));
        let chunk = delta_json(&deltas[0]);
        assert_eq!(chunk["type"], "function");
        assert_eq!(chunk["function"]["name"], "weather");
        let later = delta_json(&ToolCallDelta {
            index: 0,
            arguments: "{\"a".into(),
            ..Default::default()
        });
        assert!(later.get("id").is_none() && later["function"].get("name").is_none());
    }

    #[test]
    fn broken_arguments_are_named() {
        let messages: Vec<Value> = serde_json::from_str(
            r#"[{"role":"assistant","tool_calls":[{"id":"c9","type":"function",
                 "function":{"name":"f","arguments":"{oops"}}]}]"#,
        )
        .unwrap();
        let error = anthropic_messages(&messages).unwrap_err().to_string();
        assert!(
            error.contains("messages[0]") && error.contains("c9"),
            "{error}"
        );
    }
}
