//! What the shape of a message says, beyond its phrases.
//!
//! Client libraries often put the HTTP status at the front of the text
//! (`429 {"type":"error",…}`, `HTTP 410: No body`, `Error code: 400 - {…}`,
//! `API Error: 524 <!DOCTYPE html>…`); gateways answer with HTML error
//! pages; a stream wrapper says nothing but `Request failed` or
//! `terminated`. These readings are anchored at the start of the message or
//! compare it whole, so a number or a word in the middle of a sentence never
//! becomes a status or a bare message.

use crate::trim::{trim, trim_end, trim_start};

/// A status written at the start of a message, and the text after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeadingStatus<'a> {
    pub status: u16,
    pub rest: &'a str,
}

/// Words of a wrapper before a status, at most: `OpenAI API error code: 429`.
const MAX_WRAPPER_WORDS: usize = 4;

/// How far into a message a leading status may start: the longest
/// wrappers seen are SDK exception names with a second wrapper
/// (`openai.APIConnectionError: Error code: 503`, 46 bytes).
const MAX_STATUS_OFFSET: usize = 52;

/// The longest bare message, with room for an `Error:` prefix and spaces.
const MAX_BARE_BYTES: usize = 64;

/// The status at the start of `message`, after an optional wrapper such as
/// `Error:`, `API Error`, `Codex error`, `Error code:`, `HTTP`,
/// `HTTP/1.1`, `status code` (two wrappers at most:
/// `RateLimitError: Error code: 429 - …`).
pub fn leading_status(message: &str) -> Option<LeadingStatus<'_>> {
    let mut text = trim_start(message);
    // A status within reach of the start: most messages have no digit there
    // and are done with at once.
    let head = &text.as_bytes()[..text.len().min(MAX_STATUS_OFFSET)];
    if !has_ascii_digit(head) {
        return None;
    }
    for _ in 0..2 {
        match strip_wrapper(text) {
            Some(rest) => text = rest,
            None => break,
        }
    }
    let text = strip_http(text);
    let digits = text.as_bytes().get(..3)?;
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let after = &text[3..];
    let delimited = match after.bytes().next() {
        None => true,
        Some(b) => b.is_ascii_whitespace() || matches!(b, b':' | b'-' | b')' | b','),
    };
    if !delimited {
        return None;
    }
    let status: u16 = text[..3].parse().ok()?;
    if !(100..=599).contains(&status) {
        return None;
    }
    let rest =
        after.trim_start_matches(|c: char| c.is_whitespace() || matches!(c, ':' | '-' | ')' | ','));
    Some(LeadingStatus {
        status,
        rest: trim_end(rest),
    })
}

/// Whether `bytes` holds an ASCII digit, eight bytes at a time: in the
/// sandbox a loop pays its metering on every turn, and every message is
/// asked this.
fn has_ascii_digit(bytes: &[u8]) -> bool {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        // A byte is a digit when it XOR `0` is below 10. Subtracting 10
        // from every byte sets the high bit of the lowest such byte (`!x`
        // drops bytes whose own high bit was set); a higher byte is set
        // only by a borrow from a lower one that is, so the word's answer
        // is exact.
        let x =
            u64::from_le_bytes(word.try_into().expect("eight bytes")) ^ (ONES * u64::from(b'0'));
        if x.wrapping_sub(ONES * 10) & !x & HIGHS != 0 {
            return true;
        }
    }
    words.remainder().iter().any(u8::is_ascii_digit)
}

/// Strips a wrapper: up to [`MAX_WRAPPER_WORDS`] words ending in one that
/// ends in `error` or `exception` or is `api`, then optionally `code` or
/// `status`, then the delimiter. `None` when `text` does not start so.
fn strip_wrapper(text: &str) -> Option<&str> {
    let mut at = 0;
    let mut wrapper_end = None;
    for _ in 0..MAX_WRAPPER_WORDS {
        let word_len = text[at..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.')))
            .unwrap_or(text.len() - at);
        if word_len == 0
            || (wrapper_end.is_none() && !text[at..].starts_with(|c: char| c.is_ascii_alphabetic()))
        {
            // A wrapper starts with a word; `503 Internal Error` starts with its status.
            break;
        }
        let word = &text.as_bytes()[at..at + word_len];
        let wrapper = ends_with_ignore_case(word, b"error")
            || ends_with_ignore_case(word, b"exception")
            || word.eq_ignore_ascii_case(b"api");
        let keyword = wrapper_end.is_some()
            && (word.eq_ignore_ascii_case(b"code") || word.eq_ignore_ascii_case(b"status"));
        if wrapper || keyword {
            wrapper_end = Some(at + word_len);
        } else if wrapper_end.is_some() {
            break;
        }
        at += word_len;
        at = text.len() - text[at..].trim_start_matches([' ', '\t']).len();
    }
    let end = wrapper_end?;
    Some(
        text[end..].trim_start_matches(|c: char| c.is_whitespace() || matches!(c, ':' | '-' | '(')),
    )
}

/// Strips `HTTP`, `HTTP/1.1`, `HTTP/2` and `status code` before a status.
fn strip_http(text: &str) -> &str {
    let mut rest = text;
    if starts_with_ignore_case(rest, "http") {
        rest = &rest[4..];
        if let Some(version) = rest.strip_prefix('/') {
            rest = version.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
        }
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ':');
    }
    for keyword in ["status code", "status"] {
        if starts_with_ignore_case(rest, keyword) {
            rest =
                rest[keyword.len()..].trim_start_matches(|c: char| c.is_whitespace() || c == ':');
            break;
        }
    }
    rest
}

fn ends_with_ignore_case(word: &[u8], suffix: &[u8]) -> bool {
    word.len() >= suffix.len() && word[word.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
}

/// Whether `text` starts with `prefix`, ASCII case ignored.
pub fn starts_with_ignore_case(text: &str, prefix: &str) -> bool {
    text.len() >= prefix.len()
        && text.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

/// `text` without surrounding whitespace and one final `.`: what a whole
/// message is compared by.
fn trimmed_sentence(text: &str) -> &str {
    let text = trim(text);
    trim_end(text.strip_suffix('.').unwrap_or(text))
}

/// What HTTP wrappers say when the response had no body.
const NO_BODY: &[&str] = &[
    "",
    "no body",
    "no body response",
    "no response body",
    "(no body)",
    "status code (no body)",
];

/// Whether `text` is empty or only says that there was no body.
pub fn says_no_body(text: &str) -> bool {
    let text = trimmed_sentence(text);
    NO_BODY
        .iter()
        .any(|phrase| text.eq_ignore_ascii_case(phrase))
}

/// Whether `text` is an HTML page (a gateway's or CDN's error page). A
/// captured body may be cut, so the closing tag is not required.
pub fn is_html_page(text: &str) -> bool {
    let text = trim_start(text);
    starts_with_ignore_case(text, "<!doctype html") || starts_with_ignore_case(text, "<html")
}

/// Messages that are failures only when they are the whole message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bare {
    /// `An unknown error occurred`: a stream wrapper's message when a
    /// stream ends aborted or in error without detail (F-5.5).
    UnknownErrorOccurred,
    /// `Request failed`, `terminated`, `stream_read_error`: a transport
    /// failure with nothing else to say.
    TransportFailure,
    /// `Unknown error (no error details in response)` (F-5.1).
    NoErrorDetails,
    /// `connection refused`, `other side closed`, `Premature close`: a
    /// transport word that is evidence for a retry, not a reason (F-12.8).
    RetryEvidence,
}

/// The bare message `message` is, if any; an `Error:` or `TypeError:`
/// prefix does not count.
pub fn bare(message: &str) -> Option<Bare> {
    if message.len() > MAX_BARE_BYTES {
        return None;
    }
    // Trimmed once: after a prefix only its start needs it again, and
    // after the final `.` only its end (each trim is a call or two in the
    // sandbox, and nearly every short message is asked this).
    let text = trim(message);
    let text = ["error:", "typeerror:"]
        .iter()
        .find(|p| starts_with_ignore_case(text, p))
        .map_or(text, |p| trim_start(&text[p.len()..]));
    let text = text.strip_suffix('.').map_or(text, trim_end);
    if text.eq_ignore_ascii_case("an unknown error occurred") {
        return Some(Bare::UnknownErrorOccurred);
    }
    if text.eq_ignore_ascii_case("unknown error (no error details in response)") {
        return Some(Bare::NoErrorDetails);
    }
    if ["connection refused", "other side closed", "premature close"]
        .iter()
        .any(|p| text.eq_ignore_ascii_case(p))
    {
        return Some(Bare::RetryEvidence);
    }
    [
        "request failed",
        "terminated",
        "stream_read_error",
        "load failed",
    ]
    .iter()
    .any(|p| text.eq_ignore_ascii_case(p))
    .then_some(Bare::TransportFailure)
}

/// Whether `text` states a request size over its ceiling, as Groq's 413
/// does ("Limit 8000, Requested 8098"): the request cannot fit, whatever
/// the limit is called (F-12.8).
pub fn requested_exceeds_limit(text: &str) -> bool {
    match (number_after(text, "limit"), number_after(text, "requested")) {
        (Some(limit), Some(requested)) => requested > limit,
        _ => false,
    }
}

/// The number written right after the first `word` that has one (`Limit
/// 8000`, `limit: 8000`), in any case.
fn number_after(text: &str, word: &str) -> Option<u64> {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(found) = find_ignore_case(&text[from..], word) {
        let mut at = from + found + word.len();
        from = at;
        while bytes.get(at).is_some_and(|b| *b == b' ' || *b == b':') {
            at += 1;
        }
        let digits = bytes[at..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if digits > 0 && digits <= 18 {
            return text[at..at + digits].parse().ok();
        }
    }
    None
}

/// Whether `text` says `insufficient <one word> balance` ("Insufficient MBT
/// balance", "insufficient account balance"); exactly one word between, so
/// "insufficient to reconcile the final balance" is not billing.
pub fn insufficient_word_balance(text: &str) -> bool {
    const WORD: &str = "insufficient";
    const BALANCE: &str = "balance";
    let bytes = text.as_bytes();
    let skip_spaces = |mut at: usize| {
        while bytes.get(at) == Some(&b' ') {
            at += 1;
        }
        at
    };
    let mut from = 0;
    while let Some(found) = find_ignore_case(&text[from..], WORD) {
        from += found + WORD.len();
        let word_start = skip_spaces(from);
        let mut at = word_start;
        while bytes
            .get(at)
            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
        {
            at += 1;
        }
        let balance_start = skip_spaces(at);
        let spaced = word_start > from && at > word_start && balance_start > at;
        let balance_end = balance_start + BALANCE.len();
        if spaced
            && bytes
                .get(balance_start..balance_end)
                .is_some_and(|b| b.eq_ignore_ascii_case(BALANCE.as_bytes()))
            && bytes
                .get(balance_end)
                .is_none_or(|b| !b.is_ascii_alphanumeric())
        {
            return true;
        }
    }
    false
}

/// Whether `text` contains `needle` (ASCII, lowercase), in any case.
pub fn contains_ignore_case(text: &str, needle: &str) -> bool {
    find_ignore_case(text, needle).is_some()
}

fn find_ignore_case(text: &str, needle: &str) -> Option<usize> {
    text.as_bytes()
        .windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

/// Whether the message starts the way billing errors do (`Billing error:`,
/// `Credit balance …`, `Payment required`, `HTTP 402`) and goes on about
/// paying: an upgrade, credits, a payment, a purchase, a plan.
pub fn billing_head(message: &str) -> bool {
    let text = trim_start(message);
    let text = strip_prefix_ignore_case(text, "error").map_or(text, trim_delimiters);
    let head = [
        "billing",
        "credit balance",
        "insufficient credit",
        "payment required",
        "http 402",
        "http402",
    ]
    .iter()
    .any(|p| starts_with_ignore_case(text, p));
    head && [
        "upgrade",
        "credits",
        "payment",
        "purchase",
        "subscription",
        "plan",
    ]
    .iter()
    .any(|w| find_ignore_case(message, w).is_some())
}

/// The message with a leading `402` / `HTTP 402 Payment Required` /
/// `Payment required` wrapper removed: what a 402's own text says.
pub fn without_402_wrapper(message: &str) -> &str {
    let mut text = trim_start(message);
    if let Some(rest) = strip_prefix_ignore_case(text, "error") {
        text = trim_delimiters(rest);
    }
    let after_status = strip_prefix_ignore_case(text, "http")
        .map_or(text, str::trim_start)
        .strip_prefix("402");
    let rest = match after_status {
        Some(rest) => {
            let rest = trim_start(rest);
            strip_prefix_ignore_case(rest, "payment required").unwrap_or(rest)
        }
        None => match strip_prefix_ignore_case(text, "payment required") {
            Some(rest) => rest,
            None => return trim(message),
        },
    };
    trim_end(trim_delimiters(rest))
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    starts_with_ignore_case(text, prefix).then(|| &text[prefix.len()..])
}

fn trim_delimiters(text: &str) -> &str {
    text.trim_start_matches(|c: char| c.is_whitespace() || matches!(c, ':' | '-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(text: &str) -> Option<(u16, &str)> {
        leading_status(text).map(|s| (s.status, s.rest))
    }

    #[test]
    fn statuses_at_the_start_with_their_wrappers() {
        assert_eq!(
            status("429 Too Many Requests"),
            Some((429, "Too Many Requests"))
        );
        assert_eq!(status("HTTP 410: No body"), Some((410, "No body")));
        assert_eq!(status("410"), Some((410, "")));
        assert_eq!(
            status("Error: 529 {\"type\":\"error\"}"),
            Some((529, "{\"type\":\"error\"}"))
        );
        assert_eq!(
            status("Error code: 429 - {'error': 1}"),
            Some((429, "{'error': 1}"))
        );
        assert_eq!(
            status("API Error: 524 <!DOCTYPE html>"),
            Some((524, "<!DOCTYPE html>"))
        );
        assert_eq!(
            status("API Error (520 <!DOCTYPE html>"),
            Some((520, "<!DOCTYPE html>"))
        );
        assert_eq!(status("Codex error: 500 boom"), Some((500, "boom")));
        assert_eq!(
            status("OpenAI API 402: {\"error\":{}}"),
            Some((402, "{\"error\":{}}"))
        );
        assert_eq!(
            status("HTTP/1.1 503 Service Unavailable"),
            Some((503, "Service Unavailable"))
        );
        assert_eq!(
            status("400 status code (no body)"),
            Some((400, "status code (no body)"))
        );
        assert_eq!(status("status code 404"), Some((404, "")));
    }

    #[test]
    fn digits_are_found_at_every_place_of_a_word() {
        // Every byte value at every offset of two words and a tail, among
        // neighbours that must not be mistaken for digits.
        for len in [0, 1, 7, 8, 9, 16, 19] {
            for at in 0..len {
                for byte in 0..=255u8 {
                    for filler in [b'a', b'/', b':', 0xff, 0x00] {
                        let mut bytes = vec![filler; len];
                        bytes[at] = byte;
                        assert_eq!(
                            has_ascii_digit(&bytes),
                            bytes.iter().any(u8::is_ascii_digit),
                            "{bytes:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn numbers_that_are_not_leading_statuses() {
        assert_eq!(status("4000 tokens"), None);
        assert_eq!(status("429abc"), None);
        assert_eq!(status("The model returned 429"), None);
        assert_eq!(status("Request failed"), None);
        assert_eq!(status("999 problems"), None);
        assert_eq!(status("code: 429"), None);
        assert_eq!(status("Error"), None);
        assert_eq!(status(""), None);
        assert_eq!(status("私 429"), None);
    }

    #[test]
    fn no_body_wrappers() {
        for text in [
            "",
            "No body",
            "No body response",
            "status code (no body)",
            "No response body.",
        ] {
            assert!(says_no_body(text), "{text:?}");
        }
        assert!(!says_no_body("Bad Request"));
    }

    #[test]
    fn html_pages_even_when_cut() {
        assert!(is_html_page("<!DOCTYPE html><html><body>502"));
        assert!(is_html_page("  <html>\n<head>"));
        assert!(!is_html_page("{\"error\":\"<html>\"}"));
    }

    /// `bare` trims each part once; it answers what trimming the whole,
    /// then the part after a prefix, then around the final `.`, answers.
    #[test]
    fn a_request_over_its_limit_is_read_from_the_numbers() {
        assert!(requested_exceeds_limit(
            "on tokens per minute (TPM): Limit 8000, Requested 8098, please reduce"
        ));
        assert!(!requested_exceeds_limit("Limit 8000, Requested 7000"));
        assert!(!requested_exceeds_limit("Rate limit reached. Requested 50"));
        assert!(requested_exceeds_limit("limit: 10 requested: 11"));
        assert!(!requested_exceeds_limit(
            "Limit 99999999999999999999, Requested 1"
        ));
    }

    #[test]
    fn bare_answers_as_when_every_part_was_trimmed_whole() {
        fn reference(message: &str) -> Option<Bare> {
            if message.len() > MAX_BARE_BYTES {
                return None;
            }
            let text = message.trim();
            let text = ["error:", "typeerror:"]
                .iter()
                .find(|p| {
                    text.len() >= p.len()
                        && text.as_bytes()[..p.len()].eq_ignore_ascii_case(p.as_bytes())
                })
                .map_or(text, |p| &text[p.len()..]);
            let text = text.trim();
            let text = text.strip_suffix('.').unwrap_or(text).trim_end();
            [
                ("an unknown error occurred", Bare::UnknownErrorOccurred),
                (
                    "unknown error (no error details in response)",
                    Bare::NoErrorDetails,
                ),
                ("request failed", Bare::TransportFailure),
                ("terminated", Bare::TransportFailure),
                ("stream_read_error", Bare::TransportFailure),
                ("load failed", Bare::TransportFailure),
                ("connection refused", Bare::RetryEvidence),
                ("other side closed", Bare::RetryEvidence),
                ("premature close", Bare::RetryEvidence),
            ]
            .into_iter()
            .find(|(phrase, _)| text.eq_ignore_ascii_case(phrase))
            .map(|(_, bare)| bare)
        }
        let spaces = ["", " ", "  ", "\t", "\u{a0}", "\u{3000}"];
        let prefixes = ["", "Error:", "TYPEERROR:", "error: error:", "Error"];
        let middles = [
            "Terminated",
            "load failed",
            "an unknown error occurred",
            "",
            ".",
            "x",
        ];
        let ends = ["", ".", "..", " .", ". ", "\u{a0}."];
        for lead in spaces {
            for prefix in prefixes {
                for gap in spaces {
                    for middle in middles {
                        for end in ends {
                            for tail in spaces {
                                let message = format!("{lead}{prefix}{gap}{middle}{end}{tail}");
                                assert_eq!(bare(&message), reference(&message), "{message:?}");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn bare_messages_are_whole_messages() {
        assert_eq!(
            bare("  An unknown error occurred  "),
            Some(Bare::UnknownErrorOccurred)
        );
        assert_eq!(
            bare("AN UNKNOWN ERROR OCCURRED."),
            Some(Bare::UnknownErrorOccurred)
        );
        assert_eq!(bare("Request failed"), Some(Bare::TransportFailure));
        assert_eq!(bare("TypeError: terminated"), Some(Bare::TransportFailure));
        assert_eq!(bare("  stream_read_error  "), Some(Bare::TransportFailure));
        assert_eq!(
            bare("Unknown error (no error details in response)"),
            Some(Bare::NoErrorDetails)
        );
        assert_eq!(bare("LLM request failed with an unknown error."), None);
        assert_eq!(bare("The user terminated the session manually."), None);
        assert_eq!(
            bare("user reported that an unknown error occurred during sync"),
            None
        );
    }

    #[test]
    fn insufficient_one_word_balance() {
        assert!(insufficient_word_balance(
            "Insufficient MBT balance. Top up."
        ));
        assert!(insufficient_word_balance("insufficient account balance"));
        assert!(!insufficient_word_balance(
            "The evidence is insufficient to reconcile the final balance"
        ));
        assert!(!insufficient_word_balance("insufficient balance"));
        assert!(!insufficient_word_balance("insufficient token balances"));
    }

    #[test]
    fn billing_heads() {
        assert!(billing_head("Billing error: please upgrade your plan"));
        assert!(billing_head("Payment required: buy credits"));
        assert!(!billing_head("Billing address updated"));
        assert!(!billing_head("Your plan: billing"));
    }

    #[test]
    fn the_402_wrapper_comes_off() {
        assert_eq!(
            without_402_wrapper("HTTP 402 Payment Required: rate limit exceeded"),
            "rate limit exceeded"
        );
        assert_eq!(without_402_wrapper("402 Payment Required"), "");
        assert_eq!(
            without_402_wrapper("Payment Required: insufficient credits"),
            "insufficient credits"
        );
        assert_eq!(
            without_402_wrapper("402 records processed"),
            "records processed"
        );
        assert_eq!(
            without_402_wrapper("Weekly usage limit exhausted."),
            "Weekly usage limit exhausted."
        );
    }
}
