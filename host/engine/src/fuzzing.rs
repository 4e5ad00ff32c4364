//! What the fuzz targets call: each runs untrusted bytes through one
//! parser and checks what must hold whatever the bytes.

use crate::wire::sse::SseDecoder;

/// The largest event in the fuzzer's runs: small enough that its 4 KiB
/// inputs reach the bound.
const FUZZ_EVENT_LIMIT: usize = 64;

/// Decodes `bytes` as a server-sent event stream, cut into pieces at
/// `cuts` (offsets, in any order), and one byte at a time: the bound must
/// stop both or neither; the events must be the same, except that a feed
/// stopped by the bound returns none of its own, so that the cut
/// decoding's events are then a prefix of the bytewise ones. No event may
/// exceed the bound.
pub fn sse(bytes: &[u8], cuts: &[usize]) {
    let every_byte: Vec<usize> = (0..bytes.len()).collect();
    let (reference, stopped) = decode(bytes, &every_byte);
    let (events, cut_stopped) = decode(bytes, cuts);
    assert_eq!(
        stopped, cut_stopped,
        "the bound depends on how the stream is cut"
    );
    if stopped {
        assert!(
            reference.starts_with(&events),
            "the events depend on the cuts"
        );
    } else {
        assert_eq!(
            reference, events,
            "the events depend on how the stream is cut"
        );
    }
}

/// The events decoded, and whether the bound stopped the stream.
fn decode(bytes: &[u8], cuts: &[usize]) -> (Vec<(String, String)>, bool) {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut decoder = SseDecoder::with_limit(FUZZ_EVENT_LIMIT);
    let mut events = Vec::new();
    let mut start = 0;
    for end in cuts.into_iter().chain([bytes.len()]) {
        match decoder.feed(&bytes[start..end]) {
            Ok(decoded) => {
                for event in decoded {
                    assert!(
                        event.data.len() <= FUZZ_EVENT_LIMIT,
                        "an event over the bound"
                    );
                    events.push((event.event, event.data));
                }
            }
            Err(_) => return (events, true),
        }
        start = end;
    }
    if let Some(event) = decoder.finish() {
        events.push((event.event, event.data));
    }
    (events, false)
}

/// Parses `body` as an OpenAI chat request; what parses must render for
/// an OpenAI upstream without a panic, and a body the one-pass reader
/// takes must read as the general reader (through a tree) reads it.
pub fn openai_request(body: &[u8]) {
    use crate::faces::openai::{parse_request, plain_request, request_from_value};
    if let Ok(request) = parse_request(body) {
        let _ = crate::upstreams::openai::render_request(&request, "gpt-x");
    }
    if let Some(plain) = plain_request(body) {
        let tree = serde_json::from_slice(body).expect("read in one pass, but not JSON");
        assert_eq!(
            Ok(plain),
            request_from_value(tree),
            "the two readers differ"
        );
    }
}

/// Parses `body` as an Anthropic Messages request; what parses must render
/// for both kinds of upstream without a panic.
pub fn anthropic_request(body: &[u8]) {
    if let Ok(request) = crate::faces::anthropic::parse_request(body) {
        let _ = crate::upstreams::openai::render_request(&request, "gpt-x");
        let _ = crate::upstreams::anthropic::render_request(&request, "claude-x");
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

/// Reads `bytes` as an upstream's whole OpenAI reply and holds the reader
/// and its relay to a JSON tree of it (see `check_reply_against_tree`).
pub fn openai_reply(bytes: &[u8]) {
    if let Ok(text) = std::str::from_utf8(bytes) {
        crate::upstreams::openai::check_reply_against_tree(text);
    }
}
