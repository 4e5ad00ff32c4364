//! Both faces of the gateway over both upstream shapes: Anthropic Messages
//! clients (`/v1/messages`, whole and streamed, tools included) served by
//! either shape; candidates that cannot express a request passed over
//! instead of blamed on it; aliases and per-request `models` chains.

use crate::harness;
use crate::upstream;

use failover::gateway::ClientKeys;
use harness::*;
use serde_json::{json, Value};
use upstream::{Behaviour, End};

fn data(value: Value) -> String {
    format!("data: {value}")
}

/// The next two calls of the OpenAI model (its profile, and the retry)
/// answer 503.
fn openai_down(h: &Harness) {
    for _ in 0..2 {
        h.up.then(
            "gpt-x",
            status(
                503,
                r#"{"error":{"message":"overloaded","type":"server_error"}}"#,
            ),
        );
    }
}

/// A Messages request with one tool.
fn messages_request(model: &str, stream: bool) -> Value {
    json!({"model": model, "max_tokens": 200, "stream": stream,
           "system": "be brief",
           "messages": [{"role": "user", "content": "weather in Oslo?"}],
           "tools": [{"name": "weather", "description": "today's weather",
                      "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]})
}

/// The events of an Anthropic SSE body, as (event name, data), checking
/// that each event's name is its data's type.
fn anthropic_events(body: &str) -> Vec<(String, Value)> {
    body.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let (name, data) = e.split_once('\n').unwrap_or_else(|| panic!("{e:?}"));
            let name = name.strip_prefix("event: ").unwrap().to_owned();
            let data: Value = serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
            assert_eq!(data["type"], name.as_str(), "{data}");
            (name, data)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_messages_client_is_served_by_anthropic_in_its_own_shape() {
    let h = start("", ClientKeys::default()).await;
    let a = h
        .post(
            "/v1/messages",
            &messages_request("auto", false).to_string(),
            None,
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.text);
    let message = a.json();
    assert_eq!(message["type"], "message");
    assert_eq!(message["role"], "assistant");
    // The upstream called the offered tool (see `emulation`).
    assert_eq!(message["content"][0]["type"], "tool_use", "{message}");
    assert_eq!(message["content"][0]["name"], "weather");
    assert_eq!(message["content"][0]["input"], json!({"city": "Oslo"}));
    assert_eq!(message["stop_reason"], "tool_use");
    assert_eq!(message["usage"]["output_tokens"], 9);
    // A whole answer says its own length (the gateway sets it, not the
    // router), and its type.
    assert_eq!(a.header("content-length"), a.text.len().to_string());
    assert_eq!(a.header("content-type"), "application/json");
    // The tools and the system prompt went upstream in Anthropic's shape.
    let sent: Value = serde_json::from_str(&h.up.calls()[0].body).unwrap();
    assert_eq!(sent["system"], "be brief");
    assert_eq!(
        sent["tools"][0]["input_schema"]["properties"]["city"]["type"],
        "string"
    );
    assert_eq!(sent["max_tokens"], 200);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_messages_stream_fails_over_to_openai_and_streams_its_tool_call_as_tool_use() {
    let h = start("", ClientKeys::default()).await;
    h.up.then(
        "claude-x",
        status(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ),
    )
    .then(
        "claude-x",
        status(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ),
    );
    h.up.then(
        "gpt-x",
        Behaviour::Sse {
            pieces: openai_tool_call_stream(),
            end: End::Close,
        },
    );
    let a = h
        .post(
            "/v1/messages",
            &messages_request("auto", true).to_string(),
            None,
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.header("x-failover-model"), FALLBACK);
    assert_eq!(a.header("content-type"), "text/event-stream");
    assert_the_tool_call_streams_as_tool_use(&a.text);
    // The OpenAI upstream got the tools in its own shape.
    let sent: Value = serde_json::from_str(&h.up.calls().last().unwrap().body).unwrap();
    assert_eq!(sent["tools"][0]["function"]["name"], "weather");
    assert_eq!(
        sent["messages"][0],
        json!({"role": "system", "content": "be brief"})
    );
    h.stop().await;
}

/// An OpenAI event stream: some text, then a `weather` tool call (id
/// `call_9`) whose arguments come in two pieces, ending in `tool_calls`.
fn openai_tool_call_stream() -> Vec<String> {
    let chunk = |delta: Value, finish: Value| {
        data(
            json!({"id": "chatcmpl-t", "object": "chat.completion.chunk", "created": 1, "model": "gpt-x",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    vec![
        chunk(
            json!({"role": "assistant", "content": "Let me check. "}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_9", "type": "function",
                     "function": {"name": "weather", "arguments": "{\"city\""}}]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": ": \"Oslo\"}"}}]}),
            Value::Null,
        ),
        chunk(json!({}), "tool_calls".into()),
        "data: [DONE]".to_owned(),
    ]
}

/// `body`, an Anthropic event stream, carries the stream of
/// [`openai_tool_call_stream`]: its text, its call as a `tool_use` block
/// with the arguments whole, and `tool_use` as the stop reason.
fn assert_the_tool_call_streams_as_tool_use(body: &str) {
    let events = anthropic_events(body);
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"message_start"));
    assert_eq!(names.last(), Some(&"message_stop"));
    let text: String = events
        .iter()
        .filter_map(|(_, d)| d["delta"]["text"].as_str())
        .collect();
    assert_eq!(text, "Let me check. ");
    let tool = events
        .iter()
        .find(|(n, d)| n == "content_block_start" && d["content_block"]["type"] == "tool_use")
        .expect("a tool_use block");
    assert_eq!(tool.1["content_block"]["id"], "call_9");
    assert_eq!(tool.1["content_block"]["name"], "weather");
    let json: String = events
        .iter()
        .filter(|(_, d)| d["index"] == tool.1["index"])
        .filter_map(|(_, d)| d["delta"]["partial_json"].as_str())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&json).unwrap(),
        json!({"city": "Oslo"})
    );
    let delta = events.iter().find(|(n, _)| n == "message_delta").unwrap();
    assert_eq!(delta.1["delta"]["stop_reason"], "tool_use");
}

/// A `/v1/messages` request with `body`, presenting `key` as `x-api-key`
/// when given.
fn messages_post(h: &Harness, key: Option<&str>, body: String) -> reqwest::RequestBuilder {
    let mut request = h
        .client
        .post(format!("{}/v1/messages", h.base))
        .header("content-type", "application/json")
        .header("anthropic-version", "2023-06-01")
        .body(body);
    if let Some(key) = key {
        request = request.header("x-api-key", key);
    }
    request
}

/// With every candidate rate limited, the messages request `body` is
/// answered with an Anthropic `rate_limit_error` listing the attempts.
async fn assert_rate_limited_is_a_rate_limit_error(h: &Harness, body: String) {
    for model in ["claude-x", "gpt-x", "gpt-x"] {
        h.up.then(
            model,
            status(
                429,
                r#"{"error":{"message":"slow down","type":"rate_limit_error"}}"#,
            ),
        );
    }
    h.up.then(
        "claude-x",
        status(
            429,
            r#"{"error":{"message":"slow down","type":"rate_limit_error"}}"#,
        ),
    );
    let limited = answer(
        messages_post(h, Some("client-key-1"), body)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(limited.status, 429, "{}", limited.text);
    assert_eq!(limited.json()["error"]["type"], "rate_limit_error");
    assert!(
        limited.json()["error"]["attempts"].is_array(),
        "{}",
        limited.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_errors_are_anthropic_errors() {
    let mut keys = ClientKeys::default();
    keys.add("client-key-1");
    let h = start("", keys).await;
    let body = messages_request("auto", false).to_string();
    let request = |key: Option<&str>, body: String| messages_post(&h, key, body);
    let refused = answer(request(Some("wrong"), body.clone()).send().await.unwrap()).await;
    assert_eq!(refused.status, 401);
    assert_eq!(refused.json()["type"], "error");
    assert_eq!(refused.json()["error"]["type"], "authentication_error");
    let unknown = answer(
        request(
            Some("client-key-1"),
            messages_request("nope", false).to_string(),
        )
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(unknown.status, 404, "{}", unknown.text);
    assert_eq!(unknown.json()["error"]["type"], "not_found_error");
    // A sub-route this gateway does not serve answers in the same shape.
    let count = h
        .client
        .post(format!("{}/v1/messages/count_tokens", h.base))
        .header("x-api-key", "client-key-1")
        .body("{}")
        .send()
        .await
        .unwrap();
    let count = answer(count).await;
    assert_eq!(count.status, 404, "{}", count.text);
    assert_eq!(count.json()["error"]["type"], "not_found_error");
    // The OpenAI face keeps OpenAI's error shape.
    let openai = h.post("/v1/chat/completions", "{}", None).await;
    assert!(openai.json()["error"]["message"].is_string() && openai.json().get("type").is_none());
    let bad = answer(
        request(
            Some("client-key-1"),
            r#"{"model":"auto","messages":[{"role":"user","content":[{"type":"document"}]}]}"#
                .into(),
        )
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(bad.status, 400);
    assert_eq!(bad.json()["error"]["type"], "invalid_request_error");
    assert!(bad.text.contains("messages[0]: content[0]"), "{}", bad.text);
    assert_rate_limited_is_a_rate_limit_error(&h, body).await;
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_candidate_that_cannot_express_the_request_is_passed_over_not_blamed() {
    let h = start("", ClientKeys::default()).await;
    let before = h.usage("anthropic:a");
    // `n: 2` has no Anthropic counterpart: the Anthropic primary is passed
    // over without a call and the OpenAI fallback answers.
    let body = json!({"model": "auto", "n": 2, "messages": [{"role": "user", "content": "hi"}]});
    let a = h
        .post("/v1/chat/completions", &body.to_string(), Some("s-shape"))
        .await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.header("x-failover-model"), FALLBACK);
    assert!(
        h.up.calls().iter().all(|c| c.model == "gpt-x"),
        "{:?}",
        h.up.chat_calls()
    );
    assert_eq!(h.usage("anthropic:a"), before, "no profile state change");
    // The session does not move to the fallback for one request's feature.
    let session = h.sessions.get("s-shape").unwrap();
    assert_eq!(session.model(), None, "{session:?}");
    // The next plain request goes to the primary again.
    let plain = h.chat("auto", false, Some("s-shape")).await;
    assert_eq!(plain.header("x-failover-model"), PRIMARY);
    // During an outage of the only candidate that can say it, the client
    // hears the outage, not that its request is wrong.
    openai_down(&h);
    let down = h
        .post("/v1/chat/completions", &body.to_string(), None)
        .await;
    assert_eq!(down.status, 503, "{}", down.text);
    assert_eq!(down.json()["error"]["code"], "overloaded");
    assert!(
        down.text.contains("cannot express field `n` above 1"),
        "{}",
        down.text
    );
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_openai_tool_request_survives_an_openai_outage_on_anthropic() {
    let h = start("", ClientKeys::default()).await;
    openai_down(&h);
    let reply = json!({"id": "msg_3", "type": "message", "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_07", "name": "weather", "input": {"city": "Oslo"}}],
        "stop_reason": "tool_use", "usage": {"input_tokens": 20, "output_tokens": 8}});
    h.up.then(
        "claude-x",
        Behaviour::Raw("application/json", reply.to_string()),
    );
    // The `openai-first` alias is the chain OpenAI, then Anthropic.
    let request = json!({"model": "openai-first",
        "messages": [{"role": "user", "content": "weather in Oslo?"}],
        "tools": [{"type": "function", "function": {"name": "weather",
                   "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]});
    let a = h
        .post("/v1/chat/completions", &request.to_string(), None)
        .await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.header("x-failover-model"), PRIMARY);
    let choice = &a.json()["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["tool_calls"][0]["id"], "toolu_07");
    assert_eq!(
        choice["message"]["tool_calls"][0]["function"]["arguments"],
        r#"{"city":"Oslo"}"#
    );
    let sent: Value = serde_json::from_str(&h.up.calls().last().unwrap().body).unwrap();
    assert_eq!(sent["tools"][0]["name"], "weather");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aliases_and_request_model_lists_make_chains() {
    let h = start("", ClientKeys::default()).await;
    // A one-model alias is that model, strict.
    let a = h.chat("gpt", false, None).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.header("x-failover-model"), FALLBACK);
    h.up.then(
        "gpt-x",
        status(503, r#"{"error":{"message":"overloaded"}}"#),
    )
    .then(
        "gpt-x",
        status(503, r#"{"error":{"message":"overloaded"}}"#),
    );
    let strict = h.chat("gpt", false, None).await;
    assert_eq!(strict.status, 503, "{}", strict.text);
    // OpenRouter's `models`: the model first, then the list.
    h.up.then(
        "gpt-x",
        status(503, r#"{"error":{"message":"overloaded"}}"#),
    )
    .then(
        "gpt-x",
        status(503, r#"{"error":{"message":"overloaded"}}"#),
    );
    let body = json!({"model": "gpt", "models": ["openrouter/meta/llama-x"],
                      "messages": [{"role": "user", "content": "hi"}]});
    let listed = h
        .post("/v1/chat/completions", &body.to_string(), None)
        .await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    assert_eq!(listed.header("x-failover-model"), "openrouter/meta/llama-x");
    let many: Vec<String> = (0..17).map(|i| format!("openai/m{i}")).collect();
    let long =
        json!({"model": "auto", "models": many, "messages": [{"role": "user", "content": "hi"}]});
    let too_long = h
        .post("/v1/chat/completions", &long.to_string(), None)
        .await;
    assert_eq!(too_long.status, 400, "{}", too_long.text);
    assert_eq!(too_long.json()["error"]["code"], "too_many_models");
    let unknown = json!({"model": "auto", "models": ["nope"], "messages": [{"role": "user", "content": "hi"}]});
    let refused = h
        .post("/v1/chat/completions", &unknown.to_string(), None)
        .await;
    assert_eq!(refused.status, 404, "{}", refused.text);
    assert!(refused.text.contains("models.aliases"), "{}", refused.text);
    let ids: Vec<String> = h.get("/v1/models").await.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        ids.contains(&"gpt".to_owned()) && ids.contains(&"openai-first".to_owned()),
        "{ids:?}"
    );
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_alone_is_an_answer_not_an_empty_reply() {
    let h = start("", ClientKeys::default()).await;
    let chunk = |delta: Value, finish: Value| {
        data(
            json!({"id": "chatcmpl-r", "object": "chat.completion.chunk", "created": 1, "model": "gpt-x",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    let pieces = vec![
        chunk(json!({"role": "assistant", "content": null}), Value::Null),
        chunk(json!({"refusal": "I can't help with that."}), Value::Null),
        chunk(json!({}), "stop".into()),
        "data: [DONE]".to_owned(),
    ];
    h.up.then(
        "gpt-x",
        Behaviour::Sse {
            pieces,
            end: End::Close,
        },
    );
    let body =
        json!({"model": "gpt", "stream": true, "messages": [{"role": "user", "content": "hi"}]});
    let a = h
        .post("/v1/chat/completions", &body.to_string(), None)
        .await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert!(
        a.text.contains("I can't help with that.") && a.text.contains("[DONE]"),
        "{}",
        a.text
    );
    assert_eq!(h.up.chat_calls().len(), 1, "no failover for a refusal");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_on_the_only_candidate_left_after_a_pass_over_moves_no_session() {
    let h = start("", ClientKeys::default()).await;
    // The Anthropic primary cannot say `n: 2`; OpenAI asks for a second.
    h.up.then(
        "gpt-x",
        Behaviour::Status(
            429,
            vec![("retry-after", "1".into())],
            r#"{"error":{"message":"slow down","type":"rate_limit_error"}}"#.into(),
        ),
    );
    let body = json!({"model": "auto", "n": 2, "messages": [{"role": "user", "content": "hi"}]});
    let a = h
        .post("/v1/chat/completions", &body.to_string(), Some("s-wait"))
        .await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.header("x-failover-model"), FALLBACK);
    assert_eq!(h.up.chat_calls().len(), 2, "{:?}", h.up.chat_calls());
    // The primary never failed: the session stays on it.
    let session = h.sessions.get("s-wait").unwrap();
    assert_eq!(session.model(), None, "{session:?}");
    h.stop().await;
}
