//! A credential's header values, built directly and marked sensitive.
//!
//! `RequestBuilder::bearer_auth` formats `Bearer {secret}` through the
//! formatting machinery on every call (a third of its ~0.9k instructions a
//! request); this writes the same bytes into one buffer. A value is marked
//! sensitive so that it is never printed by a header map's `Debug` and
//! never indexed by HTTP/2's header compression. A secret with a byte a
//! header cannot carry gives `None`, and the caller lets reqwest report
//! the bad value as it always did.

use bytes::Bytes;
use reqwest::header::HeaderValue;

/// The scheme's prefix of an `Authorization: Bearer` value.
const BEARER: &[u8] = b"Bearer ";

/// `Bearer <secret>`, sensitive.
pub(super) fn bearer(secret: &str) -> Option<HeaderValue> {
    let mut value = Vec::with_capacity(BEARER.len() + secret.len());
    value.extend_from_slice(BEARER);
    value.extend_from_slice(secret.as_bytes());
    sensitive(Bytes::from(value))
}

/// `secret` as it stands (`x-api-key`), sensitive.
pub(super) fn api_key(secret: &str) -> Option<HeaderValue> {
    sensitive(Bytes::copy_from_slice(secret.as_bytes()))
}

fn sensitive(bytes: Bytes) -> Option<HeaderValue> {
    let mut value = HeaderValue::from_maybe_shared(bytes).ok()?;
    value.set_sensitive(true);
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_is_the_value_reqwest_writes() {
        let client = reqwest::Client::new();
        let theirs = client
            .post("http://127.0.0.1/")
            .bearer_auth("sk-test-123")
            .build()
            .unwrap();
        let ours = bearer("sk-test-123").unwrap();
        assert_eq!(theirs.headers()["authorization"], ours);
        assert!(ours.is_sensitive());
        assert!(!format!("{ours:?}").contains("sk-test"), "{ours:?}");
    }

    #[test]
    fn an_api_key_is_sent_as_it_stands_and_hidden_from_debug() {
        let value = api_key("sk-ant-abc").unwrap();
        assert_eq!(value.as_bytes(), b"sk-ant-abc");
        assert!(value.is_sensitive());
        assert!(!format!("{value:?}").contains("sk-ant"));
    }

    #[test]
    fn a_secret_a_header_cannot_carry_is_refused() {
        assert!(bearer("line\nbreak").is_none());
        assert!(api_key("nul\0").is_none());
        assert!(
            bearer("tab\tand obs-text \u{e9}").is_some(),
            "as http allows"
        );
    }
}
