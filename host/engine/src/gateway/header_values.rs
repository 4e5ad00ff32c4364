//! Header values the gateway sets on every answer — who served it, which
//! policy decided — kept per thread for the text they were made from.
//! Made afresh, each would be checked byte by byte and copied into a new
//! allocation, twice for nothing on the usual run where the same profile
//! and the same module answer request after request (~1k instructions a
//! request, docs/performance.md). A kept value is handed out as a
//! clone, which shares its bytes.

use std::cell::RefCell;
use std::thread::LocalKey;

use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderName, HeaderValue};

use axum::response::Response;

use super::reply::{MODEL_HEADER, PROFILE_HEADER, PROVIDER_HEADER};
use super::Gateway;

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

/// The text a whole answer's headers were made from: who served it and
/// which module decided.
#[derive(PartialEq, Eq)]
struct ServedBy {
    provider: String,
    model: String,
    profile: String,
    policy: String,
}

thread_local! {
    /// The headers of the last whole JSON answer, for the text they were
    /// made from.
    static SERVED_JSON: RefCell<Option<(ServedBy, HeaderMap)>> = const { RefCell::new(None) };
}

/// The headers of a whole JSON answer of `length` bytes (`None`: not
/// known): its type and length, who served it (`x-failover-provider`,
/// `-model`, `-profile`) and the deciding module's hash
/// (`x-failover-policy`), each of the last four left out when its text
/// cannot be a header value. Kept per thread for the next answer by the
/// same profile and module: a clone of the kept map shares its values,
/// where inserting five headers hashed each name again (~1.2k instructions
/// a request, docs/performance.md). The kept map holds
/// a `content-length` to overwrite: a clone's entries have no room to
/// spare, so the router adding one grew them (~0.6k instructions).
pub(super) fn served_json(
    provider: &str,
    model: &str,
    profile: &str,
    policy: &str,
    length: Option<u64>,
) -> HeaderMap {
    let mut headers = kept_served_json(provider, model, profile, policy);
    match length {
        Some(length) => {
            if let Some(value) = headers.get_mut(CONTENT_LENGTH) {
                *value = HeaderValue::from(length);
            }
        }
        None => {
            headers.remove(CONTENT_LENGTH);
        }
    }
    headers
}

/// [`served_json`]'s map with its kept `content-length` placeholder.
fn kept_served_json(provider: &str, model: &str, profile: &str, policy: &str) -> HeaderMap {
    SERVED_JSON.with(|kept| {
        if let Some((made_from, headers)) = &*kept.borrow() {
            let same = made_from.provider == provider
                && made_from.model == model
                && made_from.profile == profile
                && made_from.policy == policy;
            if same {
                return headers.clone();
            }
        }
        let mut headers = HeaderMap::with_capacity(6);
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(CONTENT_LENGTH, HeaderValue::from_static("0"));
        for (name, text) in [
            (&PROVIDER_NAME, provider),
            (&MODEL_NAME, model),
            (&PROFILE_NAME, profile),
            (&POLICY_NAME, policy),
        ] {
            if let Ok(value) = HeaderValue::from_str(text) {
                headers.insert(name.clone(), value);
            }
        }
        let made_from = ServedBy {
            provider: provider.to_owned(),
            model: model.to_owned(),
            profile: profile.to_owned(),
            policy: policy.to_owned(),
        };
        *kept.borrow_mut() = Some((made_from, headers.clone()));
        headers
    })
}

// Checked once: a name from a `&str` is parsed byte by byte on every use,
// and a static one's clone copies no bytes.
static PROVIDER_NAME: HeaderName = HeaderName::from_static(PROVIDER_HEADER);
static MODEL_NAME: HeaderName = HeaderName::from_static(MODEL_HEADER);
static PROFILE_NAME: HeaderName = HeaderName::from_static(PROFILE_HEADER);
static POLICY_NAME: HeaderName = HeaderName::from_static(POLICY_HEADER);

/// The header naming the module that decided a response.
pub(crate) const POLICY_HEADER: &str = "x-failover-policy";

pub(super) fn set_policy_header(response: &mut Response, policy: &dyn failover_policy::Decider) {
    set_policy_hash(response, &policy.version().sha256);
}

/// [`set_policy_header`] of the module whose hash is `policy_hash`.
pub(super) fn set_policy_hash(response: &mut Response, policy_hash: &str) {
    if let Some(value) = value_of(&POLICY, policy_hash) {
        response.headers_mut().insert(POLICY_NAME.clone(), value);
    }
}

/// `response`, given the active module's hash when no policy ran for it.
pub(super) fn with_policy_header(gateway: &Gateway, mut response: Response) -> Response {
    if !response.headers().contains_key(&POLICY_NAME) {
        set_policy_header(&mut response, gateway.active_policy().as_ref());
    }
    response
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

    #[test]
    fn served_headers_are_made_for_their_own_text_only() {
        let names = |headers: &HeaderMap| {
            let mut pairs: Vec<(String, String)> = headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
                .collect();
            pairs.sort();
            pairs
        };
        let pair = |n: &str, v: &str| (n.to_owned(), v.to_owned());
        let first = served_json("openai", "openai/gpt-x", "openai:a", "ab12", Some(42));
        let expected = vec![
            pair("content-length", "42"),
            pair("content-type", "application/json"),
            pair("x-failover-model", "openai/gpt-x"),
            pair("x-failover-policy", "ab12"),
            pair("x-failover-profile", "openai:a"),
            pair("x-failover-provider", "openai"),
        ];
        assert_eq!(names(&first), expected);
        // Kept, and handed out again for the same text.
        assert_eq!(
            names(&served_json(
                "openai",
                "openai/gpt-x",
                "openai:a",
                "ab12",
                Some(42)
            )),
            expected
        );
        // Any one text changed makes new headers.
        let changed = [
            served_json("other", "openai/gpt-x", "openai:a", "ab12", Some(42)),
            served_json("openai", "openai/gpt-y", "openai:a", "ab12", Some(42)),
            served_json("openai", "openai/gpt-x", "openai:b", "ab12", Some(42)),
            served_json("openai", "openai/gpt-x", "openai:a", "cd34", Some(42)),
        ];
        for (headers, (name, value)) in changed.iter().zip([
            ("x-failover-provider", "other"),
            ("x-failover-model", "openai/gpt-y"),
            ("x-failover-profile", "openai:b"),
            ("x-failover-policy", "cd34"),
        ]) {
            assert_eq!(headers.get(name).unwrap(), value);
            assert_eq!(headers.len(), 6);
        }
        // What cannot be a header value is left out; the rest stay.
        let odd = served_json("openai", "bad\nmodel", "openai:a", "ab12", Some(42));
        assert!(odd.get("x-failover-model").is_none());
        assert_eq!(odd.get("x-failover-profile").unwrap(), "openai:a");
        assert_eq!(odd.len(), 5);
    }

    #[test]
    fn a_kept_map_carries_each_answers_own_length() {
        let served = |length| served_json("p", "p/m", "p:a", "ef56", length);
        assert_eq!(served(Some(1234)).get(CONTENT_LENGTH).unwrap(), "1234");
        // The kept map is handed out again, with this answer's length.
        assert_eq!(served(Some(7)).get(CONTENT_LENGTH).unwrap(), "7");
        assert_eq!(served(Some(0)).get(CONTENT_LENGTH).unwrap(), "0");
        // Not known: none, and the router adds nothing wrong.
        let unknown = served(None);
        assert!(unknown.get(CONTENT_LENGTH).is_none());
        assert_eq!(unknown.get("x-failover-profile").unwrap(), "p:a");
        assert_eq!(served(Some(99)).get(CONTENT_LENGTH).unwrap(), "99");
    }
}
