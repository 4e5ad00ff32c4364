//! Faults a request can ask the fault-injecting upstream for, by naming
//! them in its body as `<fault>:<model>` (the model's name at the
//! provider, `claude-x` of `anthropic/claude-x`), so that a client outside
//! the tests — an SDK, `curl`, the README's demo — can make one model fail
//! and watch the gateway recover:
//!
//! | fault | the model's answer |
//! |---|---|
//! | `down` | 503, overloaded |
//! | `error` | 500, a server error |
//! | `limit` | 429 with `Retry-After: 1` |
//! | `overflow` | 400, the context is too long |
//! | `filter` | 400, a content filter refused the prompt |
//! | `hang` | nothing, ever |
//! | `slow` | the reply after 10 s |
//! | `cut` | a stream of text, then a reset |
//! | `stall` | a stream of text, then silence |
//! | `garbage` | a whole stream with one unreadable event in it |
//! | `junk` | a stream of text, then unreadable events only |

use std::time::Duration;

use serde_json::json;

use crate::upstream::{Behaviour, End};

/// How long `slow` waits before its reply.
pub const SLOW: Duration = Duration::from_secs(10);

/// How long `hang` holds a request: longer than any deadline.
const HANG: Duration = Duration::from_secs(3600);

/// The fault `body` asks of `model`, if it names one.
pub fn behaviour(body: &str, model: &str, anthropic: bool, stream: bool) -> Option<Behaviour> {
    let asks = |fault: &str| names(body, &format!("{fault}:{model}"));
    let status =
        |code, headers, body: &str| Some(Behaviour::Status(code, headers, body.to_owned()));
    if asks("down") {
        return status(503, vec![], overloaded(anthropic));
    }
    if asks("error") {
        return status(500, vec![], server_error(anthropic));
    }
    if asks("limit") {
        return status(
            429,
            vec![("retry-after", "1".to_owned())],
            rate_limited(anthropic),
        );
    }
    if asks("overflow") {
        return status(400, vec![], context_overflow(anthropic));
    }
    if asks("filter") {
        return status(400, vec![], content_filter(anthropic));
    }
    if asks("hang") {
        return Some(Behaviour::Slow(HANG));
    }
    if asks("slow") {
        return Some(Behaviour::Slow(SLOW));
    }
    broken_stream(&asks, anthropic, stream)
}

/// Whether `body` holds `directive` as a word of its own: `overflow:gpt-x`
/// is not in `overflow:gpt-x-large`.
fn names(body: &str, directive: &str) -> bool {
    body.match_indices(directive).any(|(at, _)| {
        let next = body[at + directive.len()..].chars().next();
        next.is_none_or(|c| !(c.is_alphanumeric() || matches!(c, '-' | '.' | '_' | '/')))
    })
}

/// The stream faults; asked of a whole reply, a cut is a reset and a stall
/// a hang.
fn broken_stream(asks: &dyn Fn(&str) -> bool, anthropic: bool, stream: bool) -> Option<Behaviour> {
    let fault = ["cut", "stall", "garbage", "junk"]
        .into_iter()
        .find(|fault| asks(fault))?;
    if !stream {
        return Some(match fault {
            "cut" => Behaviour::Reset,
            "stall" => Behaviour::Slow(HANG),
            _ => Behaviour::Reply,
        });
    }
    let unreadable = || "data: {\"choices\": [{\"delta\": {\"content\": \"unfinis".to_owned();
    let mut pieces = vec![text_event(anthropic, "The answer ")];
    let end = match fault {
        "cut" => End::Reset,
        "stall" => End::Stall,
        "garbage" => {
            pieces.extend([unreadable(), text_event(anthropic, "is 42.")]);
            pieces.extend(stream_end(anthropic));
            End::Close
        }
        _ => {
            pieces.extend((0..4).map(|_| unreadable()));
            End::Close
        }
    };
    if anthropic {
        pieces.insert(0, anthropic_start());
    }
    Some(Behaviour::Sse { pieces, end })
}

fn text_event(anthropic: bool, text: &str) -> String {
    let event = if anthropic {
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}})
    } else {
        json!({"id": "chatcmpl-fault", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
    };
    format!("data: {event}")
}

fn anthropic_start() -> String {
    let start = json!({"type": "message_start", "message": {"id": "msg_fault", "usage": {"input_tokens": 7}}});
    format!("data: {start}")
}

/// A whole stream's terminal events.
fn stream_end(anthropic: bool) -> Vec<String> {
    if anthropic {
        vec![
            format!(
                "data: {}",
                json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 4}})
            ),
            format!("data: {}", json!({"type": "message_stop"})),
        ]
    } else {
        vec![
            format!(
                "data: {}",
                json!({"id": "chatcmpl-fault", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
            ),
            "data: [DONE]".to_owned(),
        ]
    }
}

fn overloaded(anthropic: bool) -> &'static str {
    if anthropic {
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
    } else {
        r#"{"error":{"message":"The server is overloaded","type":"server_error"}}"#
    }
}

fn server_error(anthropic: bool) -> &'static str {
    if anthropic {
        r#"{"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#
    } else {
        r#"{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}"#
    }
}

fn rate_limited(anthropic: bool) -> &'static str {
    if anthropic {
        r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your rate limit"}}"#
    } else {
        r#"{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}"#
    }
}

fn context_overflow(anthropic: bool) -> &'static str {
    if anthropic {
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#
    } else {
        r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#
    }
}

fn content_filter(anthropic: bool) -> &'static str {
    if anthropic {
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"Output blocked by content filtering policy"}}"#
    } else {
        r#"{"error":{"message":"The response was filtered due to the prompt triggering the content management policy.","type":null,"param":"prompt","code":"content_filter"}}"#
    }
}
