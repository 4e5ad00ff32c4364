//! The one choke point for what comes back from a provider or a token
//! endpoint: every error the HTTP provider returns — status bodies,
//! headers, transport failures, stream errors at any point of a stream,
//! OAuth refusals — passes through a [`Redactor`] before a client, a log,
//! stderr, a trace or the state can see it.
//!
//! Two layers:
//! - the exact secrets the call used or learned (the profile's key or
//!   access token, its refresh token, the tokens a refresh returned);
//! - shapes that are secrets whoever they belong to: a `Bearer …` value,
//!   token fields of JSON and form bodies (`"refresh_token": "…"`,
//!   `access_token=…`), and API keys by their well-known prefixes.
//!
//! Redaction happens before any cut: [`Redactor::error`] redacts a message
//! in full and only then cuts it to [`PREVIEW_BYTES`], and capture reads
//! [`CAPTURE_BYTES`] so that a secret starting before the cut is whole in
//! what was read.

use std::borrow::Cow;

use failover_policy::ProviderError;

/// What a secret is replaced with.
pub(crate) const MASK: &str = "[redacted]";

/// How much of an error body is kept: the classifier reads at most 16 KiB
/// of a JSON body (the policy's `MAX_JSON_BODY_BYTES`), and an HTML error
/// page says all it says in its first few KiB.
pub(crate) const PREVIEW_BYTES: usize = 16 * 1024;

/// The longest secret this redacts whole across the cut: OAuth access
/// tokens (JWTs) run to a few KiB; 16 KiB is far past any.
pub(crate) const MAX_SECRET_BYTES: usize = 16 * 1024;

/// How much of an error body capture reads: the preview plus room for a
/// secret that starts just before the cut.
pub(crate) const CAPTURE_BYTES: usize = PREVIEW_BYTES + MAX_SECRET_BYTES;

/// Shorter strings are not treated as secrets: replacing them would
/// mangle ordinary words, and no provider issues keys that short.
const MIN_SECRET_BYTES: usize = 8;

/// Field names whose values are credentials, in JSON bodies (`"name": "v"`)
/// and form bodies (`name=v`). Compared without case.
const SECRET_FIELDS: &[&str] = &[
    "access_token",
    "refresh_token",
    "id_token",
    "client_secret",
    "api_key",
    "apikey",
    "x-api-key",
    "password",
];

/// Prefixes of provider API keys (OpenAI `sk-`, `sk-proj-`; Anthropic
/// `sk-ant-`; OpenRouter `sk-or-`; xAI `xai-`; Groq `gsk_`; Google `AIza`;
/// GitHub tokens `ghp_`/`gho_`/`ghu_`), redacted when at least
/// [`MIN_KEY_TAIL`] key characters follow.
const KEY_PREFIXES: &[&str] = &[
    "sk-",
    "xai-",
    "gsk_",
    "AIza",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "github_pat_",
];

/// A prefix followed by fewer key characters is a word, not a key
/// (`sk-learn`, `AIzaSy…` masked as `AIza****`).
const MIN_KEY_TAIL: usize = 16;

/// The secrets of one call.
#[derive(Debug, Clone, Default)]
pub(crate) struct Redactor {
    secrets: Vec<String>,
}

impl Redactor {
    /// Redacts `secret` from now on (ignored when too short to be one).
    pub fn add(&mut self, secret: &str) {
        let secret = secret.trim();
        if secret.len() >= MIN_SECRET_BYTES && !self.secrets.iter().any(|s| s == secret) {
            self.secrets.push(secret.to_owned());
            // Longest first: a secret that contains another is replaced whole.
            self.secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
    }

    /// `text` without the known secrets and secret-shaped values.
    pub fn text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = Cow::Owned(out.replace(secret.as_str(), MASK));
            }
        }
        match mask_shapes(&out) {
            Some(masked) => Cow::Owned(masked),
            None => out,
        }
    }

    /// `error` with every level's message and headers redacted, messages
    /// then cut to [`PREVIEW_BYTES`].
    pub fn error(&self, mut error: ProviderError) -> ProviderError {
        if let Cow::Owned(clean) = self.text(&error.message) {
            error.message = clean;
        }
        cut(&mut error.message, PREVIEW_BYTES);
        for (_, value) in &mut error.headers {
            if let Cow::Owned(clean) = self.text(value) {
                *value = clean;
            }
        }
        if let Some(code) = &error.code {
            if let Cow::Owned(clean) = self.text(code) {
                error.code = Some(clean);
            }
        }
        error.error = error.error.map(|e| Box::new(self.error(*e)));
        error.cause = error.cause.map(|e| Box::new(self.error(*e)));
        error
    }
}

/// Cuts `text` to at most `max` bytes on a character boundary.
fn cut(text: &mut String, max: usize) {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
}

/// Characters a key or token is made of (base64url, JWT dots, the `~`
/// and `+`/`/` of some token formats).
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'+' | b'/' | b'=')
}

/// Masks `Bearer` values, secret fields and prefixed keys; `None` when
/// there is nothing to mask.
fn mask_shapes(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    // Byte ranges to mask, found in one pass.
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if let Some(range) = bearer_at(bytes, i)
            .or_else(|| field_at(bytes, i))
            .or_else(|| key_at(bytes, i))
        {
            i = range.1.max(i + 1);
            ranges.push(range);
        } else {
            i += 1;
        }
    }
    if ranges.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end) in ranges {
        out.push_str(&text[at..start]);
        out.push_str(MASK);
        at = end;
    }
    out.push_str(&text[at..]);
    Some(out)
}

/// Whether `bytes[i..]` starts with `word`, ignoring ASCII case, at a word
/// start.
fn word_at(bytes: &[u8], i: usize, word: &str) -> bool {
    let starts_word = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
    starts_word
        && bytes.len() >= i + word.len()
        && bytes[i..i + word.len()].eq_ignore_ascii_case(word.as_bytes())
}

/// The token run starting at `start`, if it is at least `min` long (a
/// trailing `.` ends the sentence, not the token).
fn token_run(bytes: &[u8], start: usize, min: usize) -> Option<(usize, usize)> {
    let mut end = start
        + bytes[start..]
            .iter()
            .take_while(|b| is_token_byte(**b))
            .count();
    while end > start && bytes[end - 1] == b'.' {
        end -= 1;
    }
    (end - start >= min).then_some((start, end))
}

/// `Bearer <token>`: the token's range.
fn bearer_at(bytes: &[u8], i: usize) -> Option<(usize, usize)> {
    const WORD: &str = "bearer ";
    if !word_at(bytes, i, WORD) {
        return None;
    }
    let start = i
        + WORD.len()
        + bytes[i + WORD.len()..]
            .iter()
            .take_while(|b| **b == b' ')
            .count();
    if bytes.get(start..start + MASK.len()) == Some(MASK.as_bytes()) {
        return None;
    }
    token_run(bytes, start, MIN_SECRET_BYTES)
}

/// `"field": "value"`, `field=value`, `field: value` for a secret field:
/// the value's range.
fn field_at(bytes: &[u8], i: usize) -> Option<(usize, usize)> {
    let name = SECRET_FIELDS.iter().find(|f| word_at(bytes, i, f))?;
    let mut j = i + name.len();
    if bytes
        .get(j)
        .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
    {
        return None;
    }
    let skip = |j: &mut usize, set: &[u8]| {
        while bytes.get(*j).is_some_and(|b| set.contains(b)) {
            *j += 1;
        }
    };
    skip(&mut j, b"\"'\\ ");
    if !matches!(bytes.get(j), Some(b':' | b'=')) {
        return None;
    }
    j += 1;
    skip(&mut j, b"\"'\\ ");
    if bytes.get(j..j + MASK.len()) == Some(MASK.as_bytes()) {
        return None;
    }
    token_run(bytes, j, MIN_SECRET_BYTES)
}

/// A provider key by its prefix: the whole key's range.
fn key_at(bytes: &[u8], i: usize) -> Option<(usize, usize)> {
    if i > 0 && is_token_byte(bytes[i - 1]) {
        return None;
    }
    let prefix = KEY_PREFIXES
        .iter()
        .find(|p| bytes[i..].starts_with(p.as_bytes()))?;
    let (_, end) = token_run(bytes, i, prefix.len() + MIN_KEY_TAIL)?;
    // A key is not only dashes and letters of an ordinary word: it has a
    // digit, or mixed case, somewhere in its tail.
    let tail = &bytes[i + prefix.len()..end];
    let digits = tail.iter().any(u8::is_ascii_digit);
    let upper = tail.iter().any(u8::is_ascii_uppercase);
    let lower = tail.iter().any(u8::is_ascii_lowercase);
    (digits || (upper && lower)).then_some((i, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redactor(secrets: &[&str]) -> Redactor {
        let mut r = Redactor::default();
        for s in secrets {
            r.add(s);
        }
        r
    }

    #[test]
    fn known_secrets_go_wherever_they_are() {
        let r = redactor(&["key-0123456789", "short", "refresh-abcdefgh"]);
        assert_eq!(
            r.text("Incorrect API key provided: key-0123456789."),
            "Incorrect API key provided: [redacted]."
        );
        // Too short to be a secret: left alone.
        assert_eq!(r.text("a short text"), "a short text");
        assert_eq!(
            r.text("grant refresh-abcdefgh is revoked"),
            "grant [redacted] is revoked"
        );
    }

    #[test]
    fn secret_shapes_go_whoever_owns_them() {
        let r = Redactor::default();
        for (text, kept) in [
            (
                r#"{"error":"invalid_grant","refresh_token":"rt-9f8e7d6c5b"}"#,
                r#"{"error":"invalid_grant","refresh_token":"[redacted]"}"#,
            ),
            (
                "grant_type=refresh_token&refresh_token=abc123def456&client_id=x",
                "grant_type=refresh_token&refresh_token=[redacted]&client_id=x",
            ),
            (
                "Authorization: Bearer eyJhbGciOi.eyJzdWIi.sig-part",
                "Authorization: Bearer [redacted]",
            ),
            (
                "Incorrect API key provided: sk-proj-AbCdEf0123456789xyz. You can",
                "Incorrect API key provided: [redacted]. You can",
            ),
            ("key AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOp", "key [redacted]"),
        ] {
            assert_eq!(r.text(text), kept, "{text}");
        }
        for harmless in [
            "the sk-learn library",
            "use a bearer token",
            "refresh_token is required",
            "sk-ant-api03-**** is invalid",
            "Your access_token expired",
        ] {
            assert_eq!(r.text(harmless), harmless);
        }
    }

    #[test]
    fn errors_are_redacted_at_every_level_before_the_cut() {
        let secret = "sk-live-0123456789abcdefXYZ";
        let r = redactor(&[secret]);
        // The secret straddles the preview's end.
        let mut body = "x".repeat(PREVIEW_BYTES - 10);
        body.push_str(secret);
        let error = ProviderError::message(body)
            .with_header("x-request-id", format!("req {secret}"))
            .with_cause(ProviderError::message(format!("echo {secret}")));
        let clean = r.error(error);
        assert!(clean.message.len() <= PREVIEW_BYTES);
        assert!(!clean.message.contains("sk-live"), "no head of the key");
        assert_eq!(clean.headers[0].1, "req [redacted]");
        assert_eq!(clean.cause.unwrap().message, "echo [redacted]");
    }
}
