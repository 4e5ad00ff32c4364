//! The gateway's async workers never wait on the state: a state lock held
//! elsewhere, or an OAuth token endpoint that takes its time, stalls only
//! the requests that need them — never `/healthz`, never other profiles.
//! The runtime has two workers, as the two-core machines the gateway runs
//! on do.

use crate::harness;

use std::time::Duration;

use failover::gateway::ClientKeys;
use failover::state::files::StateLock;
use harness::*;
use serde_json::{json, Value};

/// Long enough for anything that is not stuck.
const PATIENCE: Duration = Duration::from_secs(5);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_lock_held_elsewhere_stalls_only_the_requests_that_need_it() {
    let h = start("", ClientKeys::default()).await;
    let lock_path = h.store.paths().lock.clone();
    // Another process holds the agent's state lock (flock: another open
    // file is another holder, even in this process).
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        let _lock = StateLock::acquire(&lock_path).unwrap();
        held_tx.send(()).unwrap();
        let _ = release_rx.recv();
    });
    held_rx.recv().unwrap();
    // More requests than workers, each stuck on the lock.
    let mut stuck = Vec::new();
    for _ in 0..4 {
        stuck.push(h.spawn_chat("auto"));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    for _ in 0..3 {
        let health = tokio::time::timeout(PATIENCE, h.get("/healthz"))
            .await
            .expect("healthz answers while the state lock is held elsewhere");
        assert_eq!(health.status, 200);
    }
    release_tx.send(()).unwrap();
    holder.join().unwrap();
    for request in stuck {
        assert_eq!(request.await.unwrap().status, 200);
    }
    h.stop().await;
}

const ACME: &str =
    "acme: { baseUrl: \"BASE/acme/v1\", oauth: { tokenUrl: \"BASE/oauth/token\", clientId: \"cid\" } },";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oauth_refresh_holds_only_its_own_profile() {
    let h = start(ACME, ClientKeys::default()).await;
    let path = h.store.paths().profiles.clone();
    let mut document: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    document["profiles"]["acme:me"] = json!({"type": "oauth", "provider": "acme",
        "access": "stale-access", "refresh": "held-refresh", "expires": 1000});
    std::fs::write(&path, document.to_string()).unwrap();
    let first = h.spawn_chat("acme/m1");
    // Wait for the token request to be in flight (the endpoint holds it).
    tokio::time::timeout(PATIENCE, async {
        while !h.up.calls().iter().any(|c| c.path.contains("oauth")) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the refresh started");
    let second = h.spawn_chat("acme/m1");
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Meanwhile the shared state lock is free: another process writes…
    let store = h.store.clone();
    let written = tokio::time::timeout(
        PATIENCE,
        tokio::task::spawn_blocking(move || {
            store.update_usage(|usage| {
                usage.entry("openai:a".into()).or_default();
                Ok(())
            })
        }),
    )
    .await
    .expect("the state lock is not held across the token request");
    written.unwrap().unwrap();
    // …and other profiles' requests are served, failures recorded.
    h.up.then("claude-x", status(429, r#"{"error":{"message":"slow"}}"#));
    let other = tokio::time::timeout(PATIENCE, h.chat("auto", false, None))
        .await
        .expect("another profile's request is served during the refresh");
    assert_eq!(other.status, 200, "{}", other.text);
    h.up.release_token_endpoint();
    for request in [first, second] {
        let served = request.await.unwrap();
        assert_eq!(served.status, 200, "{}", served.text);
        assert!(served.text.contains("fresh-access"), "{}", served.text);
    }
    // One refresh for both: the second waited on the profile's lock and
    // found the new token.
    let refreshes =
        h.up.calls()
            .iter()
            .filter(|c| c.path.contains("oauth"))
            .count();
    assert_eq!(refreshes, 1);
    h.stop().await;
}
