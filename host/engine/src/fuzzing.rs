//! What the fuzz targets call: each runs untrusted bytes through one
//! parser and checks what must hold whatever the bytes.

use crate::chat::sse::{SseDecoder, MAX_EVENT_BYTES};

/// Decodes `bytes` as a server-sent event stream, cut into pieces at
/// `cuts` (offsets, in any order): the events must be the same however
/// the stream is cut, and none may exceed the size bound.
pub fn sse(bytes: &[u8], cuts: &[usize]) {
    let whole = decode(bytes, &[]);
    let pieces = decode(bytes, cuts);
    assert_eq!(whole, pieces, "the events depend on how the stream is cut");
}

fn decode(bytes: &[u8], cuts: &[usize]) -> Option<Vec<(String, String)>> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut decoder = SseDecoder::default();
    let mut events = Vec::new();
    let mut start = 0;
    for end in cuts.into_iter().chain([bytes.len()]) {
        if end < start {
            continue;
        }
        for event in decoder.feed(&bytes[start..end]).ok()? {
            assert!(event.data.len() <= MAX_EVENT_BYTES);
            events.push((event.event, event.data));
        }
        start = end;
    }
    if let Some(event) = decoder.finish() {
        events.push((event.event, event.data));
    }
    Some(events)
}

/// Parses `body` as an OpenAI chat request; what parses must render for
/// an OpenAI upstream without a panic.
pub fn openai_request(body: &[u8]) {
    if let Ok(request) = crate::chat::openai::parse_request(body) {
        let _ = crate::chat::openai::render_request(&request, "gpt-x");
    }
}

/// Parses `body` as an Anthropic Messages request; what parses must render
/// for both kinds of upstream without a panic.
pub fn anthropic_request(body: &[u8]) {
    if let Ok(request) = crate::chat::messages::parse_request(body) {
        let _ = crate::chat::openai::render_request(&request, "gpt-x");
        let _ = crate::chat::anthropic::render_request(&request, "claude-x");
    }
}

/// Reads `text` as a recorded trace, strictly and leniently.
pub fn trace(text: &[u8]) {
    let path = std::path::Path::new("fuzz.jsonl");
    for lenient in [false, true] {
        if let Ok(trace) = crate::replay::trace::Trace::parse(text, path, lenient) {
            for outcome in &trace.outcomes {
                let _ = outcome.failure();
            }
        }
    }
}

/// Reads `text` as a JSON5 config.
pub fn config(text: &str) {
    let _ = crate::config::Config::parse(text, std::path::Path::new("fuzz.json5"));
}
