use serde_json::{json, Value};

use super::*;
use crate::model::{Completion, FinishReason, StreamEvent, TokenUsage, ToolCallDelta};
use crate::upstreams::{anthropic, openai};

fn parse(body: Value) -> crate::model::ChatRequest {
    parse_request(body.to_string().as_bytes()).unwrap()
}

#[test]
fn a_tool_conversation_reads_and_renders_for_both_upstreams() {
    let request = parse(json!({
        "model": "auto", "max_tokens": 300, "stream": true, "top_k": 5,
        "metadata": {"user_id": "u1"}, "thinking": {"type": "enabled", "budget_tokens": 1024},
        "system": [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}],
        "tools": [{"name": "weather", "description": "d", "input_schema": {"type": "object",
                   "properties": {"city": {"type": "string"}}}}],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": true},
        "stop_sequences": ["END"],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "weather in Oslo?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}}]},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"},
                {"type": "text", "text": "checking"},
                {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "4C"},
                {"type": "text", "text": "and tomorrow?"}]}
        ]
    }));
    assert_eq!(request.system.as_deref(), Some("be brief"));
    assert_eq!(request.max_tokens, Some(300));
    assert!(request.stream);
    assert_eq!(request.stop, vec!["END".to_owned()]);
    assert!(request.openai_only.is_empty(), "{:?}", request.openai_only);
    assert_eq!(request.anthropic_only, vec!["field `top_k`".to_owned()]);

    let to_openai = openai::render_request(&request, "gpt-4o");
    let sent = to_openai["messages"].as_array().unwrap();
    let roles: Vec<&str> = sent.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "user"]);
    assert_eq!(
        sent[1]["content"][1]["image_url"]["url"],
        "data:image/png;base64,iVBOR"
    );
    assert_eq!(
        sent[2]["tool_calls"][0]["function"]["arguments"],
        r#"{"city":"Oslo"}"#
    );
    assert_eq!(sent[3]["tool_call_id"], "toolu_1");
    assert_eq!(to_openai["tool_choice"], "required");
    assert_eq!(to_openai["parallel_tool_calls"], false);
    assert_eq!(
        to_openai["tools"][0]["function"]["parameters"]["properties"]["city"]["type"],
        "string"
    );

    let to_anthropic = anthropic::render_request(&request, "claude-x").unwrap();
    assert_eq!(to_anthropic["top_k"], 5);
    assert_eq!(to_anthropic["metadata"]["user_id"], "u1");
    // Thinking blocks are not carried back and forth: thinking stays off.
    assert!(to_anthropic.get("thinking").is_none(), "{to_anthropic}");
    assert_eq!(
        to_anthropic["tool_choice"],
        json!({"type": "any", "disable_parallel_tool_use": true})
    );
    let turns = to_anthropic["messages"].as_array().unwrap();
    assert_eq!(turns.len(), 3, "{turns:#?}");
    assert_eq!(turns[0]["content"][1]["source"]["data"], "iVBOR");
    assert_eq!(turns[1]["content"][1]["input"]["city"], "Oslo");
    assert_eq!(turns[2]["content"][0]["type"], "tool_result");
    assert_eq!(turns[2]["content"][1]["text"], "and tomorrow?");
}

#[test]
fn bad_requests_name_the_place() {
    let cases = [
        (json!({"model": "auto"}), "field `messages`"),
        (
            json!({"model": "auto", "messages": [{"role": "system", "content": "x"}]}),
            "messages[0]: unknown role",
        ),
        (
            json!({"model": "auto", "messages": [{"role": "user", "content": [{"type": "document"}]}]}),
            "messages[0]: content[0]",
        ),
        (
            json!({"model": "auto", "messages": [{"role": "user", "content": "x"}],
                "tools": [{"type": "web_search_20250305", "name": "web_search"}]}),
            "tools[0]",
        ),
        (
            json!({"model": "auto", "messages": [{"role": "user", "content": "x"}],
                "tool_choice": {"type": "tool"}}),
            "tool_choice",
        ),
        (
            json!({"model": "", "messages": [{"role": "user", "content": "x"}]}),
            "field `model`",
        ),
    ];
    for (body, expected) in cases {
        let error = parse_request(body.to_string().as_bytes())
            .unwrap_err()
            .to_string();
        assert!(error.contains(expected), "{body}: {error}");
    }
}

#[test]
fn a_whole_reply_is_a_message() {
    let mut completion = Completion {
        id: "chatcmpl-1".into(),
        text: "let me look".into(),
        finish: FinishReason::ToolCalls,
        usage: Some(TokenUsage {
            prompt_tokens: 12,
            completion_tokens: 7,
            cached_tokens: Some(4),
            reasoning_tokens: None,
        }),
        message_extra: serde_json::Map::new(),
        raw: None,
    };
    completion.message_extra.insert(
        "tool_calls".into(),
        json!([{"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}}]),
    );
    let message = message_json("msg_1", "openai/gpt-4o", &completion);
    assert_eq!(message["type"], "message");
    assert_eq!(message["content"][0]["text"], "let me look");
    assert_eq!(message["content"][1]["input"]["city"], "Oslo");
    assert_eq!(message["stop_reason"], "tool_use");
    assert_eq!(
        message["usage"],
        json!({"input_tokens": 8, "output_tokens": 7, "cache_read_input_tokens": 4})
    );
}

/// The events of an SSE text, as (event name, data).
fn events(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| {
            let (name, data) = e.split_once('\n').unwrap();
            let name = name.strip_prefix("event: ").unwrap().to_owned();
            (
                name,
                serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_stream_opens_and_closes_blocks_around_text_and_tool_calls() {
    let (mut encoder, head) = StreamEncoder::start("msg_1", "anthropic/claude");
    let mut text = head;
    for event in [
        StreamEvent::Text("Hel".into()),
        StreamEvent::Text("lo".into()),
        StreamEvent::ToolCall(ToolCallDelta {
            index: 0,
            id: Some("call_1".into()),
            name: Some("f".into()),
            arguments: String::new(),
        }),
        StreamEvent::ToolCall(ToolCallDelta {
            index: 0,
            arguments: "{\"a\":".into(),
            ..Default::default()
        }),
        // Some servers repeat the id on every piece: still the same call.
        StreamEvent::ToolCall(ToolCallDelta {
            index: 0,
            id: Some("call_1".into()),
            arguments: "1}".into(),
            ..Default::default()
        }),
        StreamEvent::ToolCall(ToolCallDelta {
            index: 1,
            id: Some("call_2".into()),
            name: Some("g".into()),
            arguments: "{}".into(),
        }),
        StreamEvent::Finish {
            reason: FinishReason::ToolCalls,
            usage: Some(TokenUsage {
                prompt_tokens: 3,
                completion_tokens: 9,
                ..TokenUsage::default()
            }),
        },
    ] {
        text.push_str(&encoder.event(&event));
    }
    let events = events(&text);
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    assert_eq!(events[0].1["message"]["id"], "msg_1");
    assert_eq!(events[5].1["index"], 1);
    assert_eq!(events[5].1["content_block"]["name"], "f");
    assert_eq!(events[7].1["delta"]["partial_json"], "1}");
    assert_eq!(events[9].1["index"], 2);
    assert_eq!(events[12].1["delta"]["stop_reason"], "tool_use");
    assert_eq!(events[12].1["usage"]["output_tokens"], 9);
    for (name, data) in &events {
        assert_eq!(data["type"], name.as_str());
    }
    let error = encoder.error(503, "cut");
    assert!(
        error.starts_with("event: error\n") && error.contains("overloaded_error"),
        "{error}"
    );
}

#[test]
fn a_stop_sequence_is_named_to_anthropic_clients_and_is_stop_to_openai_ones() {
    let reply = anthropic::parse_completion(
        r#"{"id":"msg_s","type":"message","role":"assistant","content":[{"type":"text","text":"a"}],
            "stop_reason":"stop_sequence","stop_sequence":"END","usage":{"input_tokens":3,"output_tokens":1}}"#,
    )
    .unwrap();
    assert_eq!(reply.finish, FinishReason::StopSequence(Some("END".into())));
    assert_eq!(reply.finish.as_openai(), "stop");
    let message = message_json("msg_s", "anthropic/claude", &reply);
    assert_eq!(message["stop_reason"], "stop_sequence");
    assert_eq!(message["stop_sequence"], "END");
    let (mut encoder, _) = StreamEncoder::start("msg_s", "anthropic/claude");
    let end = encoder.event(&StreamEvent::Finish {
        reason: reply.finish.clone(),
        usage: None,
    });
    assert!(end.contains(r#""stop_sequence":"END""#), "{end}");
}
