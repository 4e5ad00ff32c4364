//! Header values the gateway sets on every answer — who served it, which
//! policy decided — kept per thread for the text they were made from.
//! Made afresh, each was checked byte by byte and copied into a new
//! allocation, twice for nothing on the usual run where the same profile
//! and the same module answer request after request (~1k instructions a
//! request, BENCHMARKS.md, issue 16). A kept value is handed out as a
//! clone, which shares its bytes.

use std::cell::RefCell;
use std::thread::LocalKey;

use axum::http::HeaderValue;

/// The last text a slot made a value of, and that value.
pub(super) type Slot = RefCell<Option<(String, HeaderValue)>>;

thread_local! {
    /// `x-failover-provider`.
    pub(super) static PROVIDER: Slot = const { RefCell::new(None) };
    /// `x-failover-model`.
    pub(super) static MODEL: Slot = const { RefCell::new(None) };
    /// `x-failover-profile`.
    pub(super) static PROFILE: Slot = const { RefCell::new(None) };
    /// The policy module's hash.
    pub(super) static POLICY: Slot = const { RefCell::new(None) };
}

/// `text` as a header value, `None` when it cannot be one; kept in `slot`
/// for the next ask with the same text.
pub(super) fn value_of(slot: &'static LocalKey<Slot>, text: &str) -> Option<HeaderValue> {
    slot.with(|kept| {
        if let Some((made_from, value)) = &*kept.borrow() {
            if made_from == text {
                return Some(value.clone());
            }
        }
        let value = HeaderValue::from_str(text).ok()?;
        *kept.borrow_mut() = Some((text.to_owned(), value.clone()));
        Some(value)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_value_is_for_its_own_text_only() {
        assert_eq!(value_of(&MODEL, "openai/gpt-x").unwrap(), "openai/gpt-x");
        assert_eq!(value_of(&MODEL, "openai/gpt-x").unwrap(), "openai/gpt-x");
        assert_eq!(value_of(&MODEL, "anthropic/c").unwrap(), "anthropic/c");
        // What cannot be a header value is refused, and the kept one stays.
        assert!(value_of(&MODEL, "bad\nvalue").is_none());
        assert_eq!(value_of(&MODEL, "anthropic/c").unwrap(), "anthropic/c");
        assert_eq!(value_of(&PROFILE, "openai:a").unwrap(), "openai:a");
    }
}
