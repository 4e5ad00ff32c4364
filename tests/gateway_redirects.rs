//! Redirects from a provider's endpoint: followed within its origin, never
//! to another (the credential would go along in `x-api-key` and the like),
//! and a redirect not followed is told by where it points.

use crate::harness;
use crate::upstream;

use failover::auth::RecordedReason;
use failover::gateway::ClientKeys;
use harness::*;
use upstream::{Behaviour, Upstream};

/// A redirect answer with `location`.
fn redirect(code: u16, location: &str) -> Behaviour {
    Behaviour::Status(code, vec![("location", location.to_owned())], String::new())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_within_the_endpoints_origin_is_followed() {
    let h = start("", ClientKeys::default()).await;
    h.up.then("claude-x", redirect(307, "/anthropic/moved/v1/messages"));
    let a = h.chat("auto", false, None).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.content(), "hello from claude-x with ant-a");
    let calls = h.up.calls();
    let paths: Vec<&str> = calls.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(
        paths,
        ["/anthropic/v1/messages", "/anthropic/moved/v1/messages"]
    );
    // A 307 repeats the request whole, with its key.
    assert_eq!(calls[1].key, "ant-a");
    assert!(calls[1].body.contains("claude-x"), "{}", calls[1].body);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_to_another_origin_is_not_followed_and_says_where() {
    let h = start("", ClientKeys::default()).await;
    let elsewhere = Upstream::start().await;
    let location = format!("{}/v1/messages?sig=hidden-token", elsewhere.base);
    h.up.then("claude-x", redirect(307, &location));
    // Pinned: no other model may answer, so the redirect's error is the
    // answer.
    let a = h.chat(PRIMARY, false, None).await;
    assert_ne!(a.status, 200, "{}", a.text);
    // The other origin was never called: the key did not go there.
    assert!(elsewhere.calls().is_empty(), "{:?}", elsewhere.calls());
    assert!(
        a.text
            .contains(&format!("a redirect to {}/v1/messages", elsewhere.base)),
        "{}",
        a.text
    );
    assert!(a.text.contains("another origin"), "{}", a.text);
    assert!(!a.text.contains("hidden-token"), "{}", a.text);
    // The advice is in the attempt's summary, which is cut to length.
    assert!(a.text.contains("set baseUrl to it"), "{}", a.text);
    // An unknown failure's short cooldown, not an auth failure's: the key
    // was never refused (before, a redirect from http to https dropped the
    // bearer key and the 401 that followed was blamed on it).
    let usage = h.usage("anthropic:a");
    assert_eq!(
        usage.cooldown_reason,
        Some(RecordedReason::Unknown),
        "{usage:?}"
    );
    assert!(usage.disabled_until.is_none(), "{usage:?}");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_loop_within_the_origin_ends_after_five_hops() {
    let h = start("", ClientKeys::default()).await;
    for _ in 0..6 {
        h.up.then("claude-x", redirect(308, "/anthropic/v1/messages"));
    }
    // Pinned: no other model may answer, so the redirect's error is the
    // answer.
    let a = h.chat(PRIMARY, false, None).await;
    assert_ne!(a.status, 200, "{}", a.text);
    // The first call and five followed redirects; the sixth answer stands.
    assert_eq!(h.up.calls().len(), 6, "{:?}", h.up.calls());
    assert!(
        a.text.contains("after 5 redirects within its origin"),
        "{}",
        a.text
    );
    h.stop().await;
}
