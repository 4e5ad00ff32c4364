//! OpenAI-compatible upstreams: the request body written, whole replies and
//! streams read.
//!
//! - `body` — the request body, written straight from the request;
//! - `reply` — whole replies and stream events read;
//! - `whole` — a whole reply split into its members, to relay it as it
//!   came; its child `one_pass` reads the usual reply in one pass.

mod body;
mod fields;
mod reply;
mod whole;

pub(crate) use body::{render_request, request_body};
use reqwest::RequestBuilder;
#[cfg(feature = "fuzzing")]
pub(crate) use whole::agreement::check_against_tree as check_reply_against_tree;

use super::api::{unwritable, with_bearer, StreamDecode, Upstream};
use crate::model::{ChatRequest, Completion};
use crate::state::Credential;
use failover_policy::ProviderError;

pub(crate) use reply::{garbled_event, is_garbled, parse_completion, unreadable, StreamDecoder};

/// OpenAI's chat-completions API, and every server that speaks it.
pub(crate) struct OpenAiChat;

impl Upstream for OpenAiChat {
    fn body(&self, request: &ChatRequest, model: &str) -> Result<Vec<u8>, ProviderError> {
        request_body(request, model).map_err(unwritable)
    }

    fn authorise(&self, post: RequestBuilder, credential: &Credential) -> RequestBuilder {
        with_bearer(post, credential.secret.expose())
    }

    fn read_whole(&self, text: String) -> Result<Completion, ProviderError> {
        parse_completion(text)
    }

    fn decoder(&self) -> Box<dyn StreamDecode> {
        Box::<StreamDecoder>::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faces::openai::{chunk_json, completion_json, parse_request, Chunk};
    use crate::model::StreamEvent;
    use crate::wire::sse::SseEvent;

    /// A `data:`-only event.
    fn event(data: &str) -> SseEvent {
        SseEvent {
            event: String::new(),
            data: data.into(),
        }
    }

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
        // The bytes sent upstream say the same, the model first.
        let sent = request_body(&request, "gpt-4o").unwrap();
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(&sent).unwrap(),
            body
        );
        assert!(sent.starts_with(br#"{"model":"gpt-4o","messages":[{"role":"system","#));
    }

    #[test]
    fn the_body_sent_upstream_never_repeats_a_member() {
        let mut request = parse_request(
            br#"{"model":"auto","messages":[{"role":"user","content":"hi"}],
                "temperature":0.5,"stop":["x"],"seed":7}"#,
        )
        .unwrap();
        // A passed-through field named like one the gateway writes.
        request.openai_extra.insert("stream".into(), true.into());
        let sent = String::from_utf8(request_body(&request, "m").unwrap()).unwrap();
        assert_eq!(sent.matches("\"stream\"").count(), 1, "{sent}");
        assert!(sent.contains(r#""stream":false"#), "{sent}");
        let body: serde_json::Value = serde_json::from_str(&sent).unwrap();
        assert_eq!(
            (&body["temperature"], &body["stop"][0], &body["seed"]),
            (&0.5.into(), &"x".into(), &7.into())
        );
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
        // F-12.12: complete only with a finish reason and `[DONE]`.
        let mut cut = StreamDecoder::default();
        cut.feed(&event(r#"{"choices":[{"delta":{"content":"half"}}]}"#))
            .unwrap();
        assert!(!cut.done, "content alone is not complete");
        let error = cut.feed(&event("[DONE]")).unwrap_err();
        assert!(error.message.contains("without finish_reason"), "{error:?}");
        let mut finished = StreamDecoder::default();
        finished
            .feed(&event(
                r#"{"choices":[{"delta":{},"finish_reason":"length"}]}"#,
            ))
            .unwrap();
        assert!(
            !finished.done,
            "a finish reason without [DONE] is not complete"
        );
        let error = finished.feed(&event("{not json")).unwrap_err();
        assert!(
            error.message.contains("ended before a terminal event"),
            "{error:?}"
        );
        assert!(StreamDecoder::default()
            .feed(&event(r#"{"error":{"message":"x"}}"#))
            .is_err());
    }

    #[test]
    fn what_the_events_do_not_carry_passes_through_for_openai_clients() {
        let mut decoder = StreamDecoder::default();
        let events = decoder
            .feed(&event(
                r#"{"system_fingerprint":"fp_1","choices":[
                    {"index":0,"delta":{"content":"a"},"logprobs":{"content":[{"token":"a","logprob":-1}]}},
                    {"index":1,"delta":{"content":"b"}}]}"#,
            ))
            .unwrap();
        let [StreamEvent::Text(text), StreamEvent::Extra(extra)] = &events[..] else {
            panic!("{events:?}")
        };
        assert_eq!(text, "a");
        assert_eq!(extra["system_fingerprint"], "fp_1");
        assert_eq!(extra["choices"][0]["logprobs"]["content"][0]["token"], "a");
        assert_eq!(extra["choices"][0]["delta"], serde_json::json!({}));
        assert_eq!(extra["choices"][1]["delta"]["content"], "b");
        let chunk = chunk_json("id", "openai/m", 1, Chunk::Event(&events[1]));
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert_eq!(chunk["model"], "openai/m");
        assert_eq!(chunk["choices"][1]["index"], 1);
        // The fingerprint once; a plain chunk has nothing extra.
        let plain = decoder
            .feed(&event(
                r#"{"system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"content":"c"}}]}"#,
            ))
            .unwrap();
        assert!(matches!(&plain[..], [StreamEvent::Text(_)]), "{plain:?}");
        // A whole reply goes back as it came, with the gateway's id and model.
        let whole = parse_completion(
            r#"{"id":"up","object":"chat.completion","system_fingerprint":"fp_2","choices":[
                {"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"stop"},
                {"index":1,"message":{"role":"assistant","content":"y"},"finish_reason":"stop"}],
                "usage":{"prompt_tokens":5,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":4}}}"#,
        )
        .unwrap();
        assert_eq!(whole.usage.as_ref().unwrap().cached_tokens, Some(4));
        let body: serde_json::Value =
            serde_json::from_str(&completion_json("chatcmpl-gw", "openai/m", 1, whole)).unwrap();
        assert_eq!(body["choices"][1]["message"]["content"], "y");
        assert_eq!(body["system_fingerprint"], "fp_2");
        assert_eq!(
            (body["id"].as_str(), body["model"].as_str()),
            (Some("chatcmpl-gw"), Some("openai/m"))
        );
    }
}
