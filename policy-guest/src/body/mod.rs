//! Structured facts from a message that is a provider's JSON error body.
//!
//! Providers put the useful part of an error in a JSON body:
//! `{"error": {"type": "rate_limit_error", ...}}` (Anthropic, OpenAI),
//! `{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", ...}}` (Google),
//! `{"error": {"message": "Provider returned error", "metadata": {"raw": "..."}}}`
//! (OpenRouter, with the upstream's own body as a string), or a bare
//! `{"message": "..."}` (Bedrock, Cohere). SDKs often prefix it with the
//! status: `429 {"type":"error",...}`. The text of the body is scanned like
//! any message; this module adds what only the structure tells: symbolic
//! codes, a status number and a retry delay. A body is read with [`lean`]'s
//! reader, which keeps only the keys these rules read.

mod json;
mod lean;

#[cfg(feature = "fuzzing")]
pub(crate) use json::check_against_serde;

use lean::{Node, Object, CODE_KEYS};

/// Largest body parsed as JSON. Real error bodies are a few hundred bytes; a
/// larger "body" is an echoed request or a page, whose text is still scanned
/// but whose structure is not worth the parse (it bounds the worst case).
pub const MAX_JSON_BODY_BYTES: usize = 16 * 1024;

/// How far into a message the JSON may start: room for a prefix such as
/// `"Error: 429 "`, not a search through a long text.
const MAX_JSON_OFFSET: usize = 64;

/// How many bodies nested as strings (OpenRouter's `metadata.raw`) are read.
const MAX_EMBEDDED_BODIES: usize = 2;

/// Most codes a body can contribute; the rest are ignored.
const MAX_CODES: usize = 8;

/// What a JSON error body says beyond its text.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct BodyFacts {
    /// Symbolic codes: `type`, string `code`, string `status`, Google
    /// `details[].reason`, Bedrock `__type`.
    pub codes: Vec<String>,
    /// An HTTP status named by the body (`"code": 429`, `"code": "429"`).
    pub status: Option<u16>,
    /// Google's `RetryInfo.retryDelay` (`"37s"`), in milliseconds.
    pub retry_delay_ms: Option<u64>,
    /// Where in the message the JSON starts.
    pub offset: usize,
    /// The body carries an upstream provider's own body (OpenRouter's
    /// `metadata.raw`): the wrapper's message is not the whole story.
    pub upstream: bool,
}

/// Reads `message` as a JSON error body, if it is one.
pub fn parse(message: &str) -> Option<BodyFacts> {
    if message.len() > MAX_JSON_BODY_BYTES {
        return None;
    }
    let (offset, value) = first_json_value(message)?;
    let mut facts = BodyFacts {
        offset,
        ..BodyFacts::default()
    };
    read_body(&value, &mut facts, 0);
    Some(facts)
}

/// Parses the first JSON object or array in `text`, allowing a short prefix
/// and anything after the value.
fn first_json_value(text: &str) -> Option<(usize, Node)> {
    let head = &text.as_bytes()[..text.len().min(MAX_JSON_OFFSET)];
    let start = memchr::memchr2(b'{', b'[', head)?;
    json::first_value(&text[start..]).map(|value| (start, value))
}

fn read_body(value: &Node, facts: &mut BodyFacts, embedded: usize) {
    let object = match value {
        Node::Object(object) => object,
        // Google sometimes wraps the body in a one-element array.
        Node::Array(items) => match items.first() {
            Some(Node::Object(object)) => object,
            _ => return,
        },
        _ => return,
    };
    read_fields(object, facts);
    match object.get("error") {
        Some(Node::Object(inner)) => {
            read_fields(inner, facts);
            read_details(inner, facts);
            read_embedded(inner, facts, embedded);
        }
        // Flat bodies: `{"error":"insufficient_balance","message":"…"}`.
        Some(Node::Text(code)) if object.contains_key("message") => push_code(facts, code),
        _ => {}
    }
    read_details(object, facts);
}

fn read_fields(object: &Object, facts: &mut BodyFacts) {
    for &key in CODE_KEYS {
        match object.get(key) {
            Some(Node::Text(text)) => {
                if let Some(status) = status_from_text(text) {
                    facts.status.get_or_insert(status);
                } else if key != "type" || text != "error" {
                    push_code(facts, text);
                }
            }
            Some(Node::Number(number)) => {
                if let Some(status) = number.and_then(status_from_number) {
                    facts.status.get_or_insert(status);
                }
            }
            _ => {}
        }
    }
}

/// Reads a level's structured details, given apart from its message (JSON
/// text: Google's list of `ErrorInfo` and `RetryInfo` objects, or one such
/// object) for their codes and retry delay, as a body's `details` are read.
pub fn parse_details(text: &str) -> Option<BodyFacts> {
    if text.len() > MAX_JSON_BODY_BYTES {
        return None;
    }
    let (_, value) = first_json_value(text)?;
    let mut facts = BodyFacts::default();
    match &value {
        Node::Array(items) => read_detail_items(items, &mut facts),
        Node::Object(object) => {
            read_fields(object, &mut facts);
            read_detail_items(std::slice::from_ref(&value), &mut facts);
            read_details(object, &mut facts);
        }
        _ => return None,
    }
    Some(facts)
}

fn read_details(object: &Object, facts: &mut BodyFacts) {
    let Some(Node::Array(details)) = object.get("details") else {
        return;
    };
    read_detail_items(details, facts);
}

/// The `reason` codes and the first `retryDelay` of detail objects.
fn read_detail_items(details: &[Node], facts: &mut BodyFacts) {
    for detail in details.iter().take(MAX_CODES) {
        let Node::Object(detail) = detail else {
            continue;
        };
        if let Some(Node::Text(reason)) = detail.get("reason") {
            push_code(facts, reason);
        }
        if let Some(Node::Text(delay)) = detail.get("retryDelay") {
            if facts.retry_delay_ms.is_none() {
                facts.retry_delay_ms = parse_duration_seconds(delay);
            }
        }
    }
}

/// OpenRouter passes the upstream provider's body through as a string.
fn read_embedded(error: &Object, facts: &mut BodyFacts, embedded: usize) {
    if embedded >= MAX_EMBEDDED_BODIES {
        return;
    }
    let Some(Node::Object(metadata)) = error.get("metadata") else {
        return;
    };
    let parsed;
    let inner = match metadata.get("raw") {
        Some(Node::Text(raw)) => {
            facts.upstream |= !raw.trim().is_empty();
            parsed = first_json_value(raw);
            parsed.as_ref().map(|(_, inner)| inner)
        }
        Some(raw @ Node::Object(_)) => {
            facts.upstream = true;
            Some(raw)
        }
        _ => None,
    };
    if let Some(inner) = inner {
        // The outer body's status stands; the upstream's codes add to it.
        let status = facts.status;
        read_body(inner, facts, embedded + 1);
        if status.is_some() {
            facts.status = status;
        }
    }
}

fn push_code(facts: &mut BodyFacts, code: &str) {
    let code = code.trim();
    if !code.is_empty() && facts.codes.len() < MAX_CODES && !facts.codes.iter().any(|c| c == code) {
        facts.codes.push(code.to_owned());
    }
}

fn status_from_number(number: u64) -> Option<u16> {
    (100..=599)
        .contains(&number)
        .then(|| u16::try_from(number).ok())
        .flatten()
}

/// A three-digit HTTP status written as text (`"429"`).
pub fn status_from_text(text: &str) -> Option<u16> {
    if text.len() == 3 && text.bytes().all(|b| b.is_ascii_digit()) {
        text.parse().ok().and_then(status_from_number)
    } else {
        None
    }
}

/// `"37s"`, `"1.5s"` → milliseconds.
fn parse_duration_seconds(text: &str) -> Option<u64> {
    let seconds: f64 = text.trim().strip_suffix('s')?.parse().ok()?;
    crate::retry_after::seconds_to_ms(seconds)
}

/// Checks that the lean reader reads `text` as a whole `serde_json::Value`
/// would, kept to what the rules read: both refuse it, or both give the
/// same value (tests and the fuzz target).
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn check_lean_reader(text: &str) {
    // A key a whole `Value` treats as a marker when serde_json's
    // `raw_value` feature is on, as it is in builds that link the host
    // (the fuzzer's); the lean reader treats it as any key, as a whole
    // `Value` does in the guest's own build.
    if text.contains("$serde_json::private::RawValue") {
        return;
    }
    json::check_against_serde(text);
    let lean = serde_json::from_str::<Node>(text);
    let whole = serde_json::from_str::<serde_json::Value>(text);
    match (lean, whole) {
        (Ok(lean), Ok(whole)) => assert_eq!(lean, Node::through_value(&whole), "{text:?}"),
        (Err(_), Err(_)) => {}
        (lean, whole) => panic!("{text:?}: lean {lean:?}, whole {whole:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lean_reader_reads_as_a_whole_value_would() {
        let bodies = [
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            r#"{"error":{"code":429,"message":"Quota","status":"RESOURCE_EXHAUSTED","details":[{"@type":"x","retryDelay":"37s"},1,"a",[2],{"reason":"R"}]}}"#,
            r#"{"error":{"message":"Provider returned error","code":429,"metadata":{"raw":"{\"error\":{\"type\":\"rate_limit_error\"}}","provider_name":"A"}}}"#,
            r#"[{"error":{"code":"429"}},{"x":1},2,3,4,5,6,7,8,9,10]"#,
            r#"{"code":"a","code":-1,"code":1.5,"code":-0,"code":null,"status":true,"\u0074ype":"escaped key"}"#,
            r#"{"error":"insufficient_balance","message":null,"details":{"reason":"not an array"}}"#,
            r#"{"metadata":{"raw":{"error":{"type":"x"}},"raw":7}}"#,
            r#"{"error":{"type":1e400}}"#,
            r#"{"error":{"type":"x"},}"#,
            r#"{"a":[1,2,{"b":[}]}"#,
            r#"{"code":18446744073709551616,"status":-9223372036854775809}"#,
            // Found by the fuzzer: a number out of range where no rule reads.
            r#"{"typ.e":22.2222222222e222222}"#,
            r#"{"error":{"type":"x"},"pad":[1,{"a":-1e999}]}"#,
            "[]",
            "{}",
            "[[[[[[[[]]]]]]]]",
            // Number, string and grammar edge cases of the hand-written reader.
            r#"{"code":18446744073709551616,"status":18446744073709551615,"x":-9223372036854775809}"#,
            r#"{"code":9999999999999999999,"status":10000000000000000000}"#,
            r#"{"a":1.7976931348623158e308,"b":1e-400,"c":0.0,"d":01}"#,
            r#"{"message":"tab\there","type":"\ud83d\ude00 \u00e9 \n\/\\\"","x":"\ud800"}"#,
            r#"{"type":"\udc00"}"#,
            r#"{"type":"\ud800\u0041"}"#,
            r#"{"type":"\uD834\uDD1E","code":"\u0000"}"#,
            r#"{"type":"caf\u00e9 au lait — ok","status":"日本"}"#,
            "{ \"type\" :\t\"spaced\" ,\r\n \"code\" : 429 }",
            r#"{"a":tru,"b":nul}"#,
            r#"{"a":true,"b":null,"c":false}"#,
            r#"{1:2}"#,
            r#"{"a":1}x trailing"#,
            r#"[1]2"#,
            r#"{"a":-,"b":1.,"c":1e,"d":1e+,"e":.5,"f":+1}"#,
        ];
        for body in bodies {
            check_lean_reader(body);
            for cut in 0..body.len() {
                if body.is_char_boundary(cut) {
                    check_lean_reader(&body[..cut]);
                }
            }
        }
    }

    #[test]
    fn the_lean_reader_reads_every_body_of_the_case_files_as_a_whole_value_would() {
        let files = [
            include_str!("../../../tests/cases/classify.jsonl"),
            include_str!("../../../tests/cases/classify-real.jsonl"),
            include_str!("../../../tests/cases/classify-reference.jsonl"),
        ];
        let mut bodies = 0;
        for line in files.iter().flat_map(|file| file.lines()) {
            // Every JSON text inside a case line (messages, headers,
            // expectations), from each `{` or `[` on.
            let Ok(case) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            let mut texts = vec![&case];
            while let Some(value) = texts.pop() {
                match value {
                    serde_json::Value::String(text) => {
                        for (at, _) in text.match_indices(['{', '[']) {
                            let mut values = serde_json::Deserializer::from_str(&text[at..])
                                .into_iter::<serde_json::Value>();
                            if let Some(Ok(whole)) = values.next() {
                                bodies += 1;
                                check_lean_reader(&whole.to_string());
                            }
                        }
                    }
                    serde_json::Value::Array(items) => texts.extend(items),
                    serde_json::Value::Object(map) => texts.extend(map.values()),
                    _ => {}
                }
            }
        }
        assert!(bodies > 50, "only {bodies} bodies found");
    }

    #[test]
    fn reads_anthropic_body_with_sdk_prefix() {
        let facts = parse(
            r#"529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        )
        .unwrap();
        assert_eq!(facts.codes, vec!["overloaded_error"]);
        assert_eq!(facts.status, None);
    }

    #[test]
    fn reads_google_status_reason_and_delay() {
        let facts = parse(
            r#"{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED",
               "details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}"#,
        )
        .unwrap();
        assert_eq!(facts.status, Some(429));
        assert_eq!(facts.codes, vec!["RESOURCE_EXHAUSTED"]);
        assert_eq!(facts.retry_delay_ms, Some(37_000));
    }

    #[test]
    fn reads_openrouter_embedded_upstream_body() {
        let facts = parse(
            r#"{"error":{"message":"Provider returned error","code":429,"metadata":{"raw":"{\"error\":{\"type\":\"rate_limit_error\",\"code\":503}}","provider_name":"Anthropic"}}}"#,
        )
        .unwrap();
        assert_eq!(facts.status, Some(429));
        assert_eq!(facts.codes, vec!["rate_limit_error"]);
    }

    #[test]
    fn azure_string_status_code_is_a_status() {
        let facts = parse(r#"{"error":{"code":"429","message":"Rate limit"}}"#).unwrap();
        assert_eq!(facts.status, Some(429));
        assert!(facts.codes.is_empty());
    }

    #[test]
    fn plain_text_and_broken_json_are_not_bodies() {
        assert_eq!(parse("Internal server error"), None);
        assert_eq!(parse(r#"{"error": {"type": "#), None);
        assert_eq!(parse("\"just a string\""), None);
    }

    #[test]
    fn oversized_bodies_are_not_parsed() {
        let body = format!(
            r#"{{"error":{{"type":"rate_limit_error","pad":"{}"}}}}"#,
            "x".repeat(MAX_JSON_BODY_BYTES)
        );
        assert_eq!(parse(&body), None);
    }

    #[test]
    fn json_far_into_a_long_message_is_not_read() {
        let message = format!("{} {{\"error\":{{\"type\":\"x\"}}}}", "a".repeat(100));
        assert_eq!(parse(&message), None);
    }
}
