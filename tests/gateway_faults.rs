//! Faults after a request started, against the fault-injecting upstream: a
//! provider that goes silent is the provider's fault, not its key's.

use std::time::Duration;

use crate::harness;
use crate::upstream;

use failover::auth::CredentialKind;
use harness::*;
use serde_json::json;
use upstream::Behaviour;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_provider_moves_to_the_next_model_not_its_next_key() {
    let h = start_setup(Setup {
        providers: r#"slow: { baseUrl: "BASE/slow/v1", timeoutSeconds: 1 },"#,
        ..Setup::default()
    })
    .await;
    h.store
        .update_profiles(|file| {
            file.put_static("slow:a", "slow", CredentialKind::ApiKey, "slow-a")?;
            file.put_static("slow:b", "slow", CredentialKind::ApiKey, "slow-b")
        })
        .unwrap();
    // Either key would be answered as late: past the attempt's deadline.
    for _ in 0..2 {
        h.up.then("m", Behaviour::Slow(Duration::from_secs(5)));
    }
    let body = json!({"model": "slow/m", "models": [FALLBACK],
                      "messages": [{"role": "user", "content": "hi"}]});
    let a = h
        .post("/v1/chat/completions", &body.to_string(), None)
        .await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.header("x-failover-model"), FALLBACK);
    let silent: Vec<_> = (h.up.chat_calls().into_iter())
        .filter(|(model, _)| model == "m")
        .collect();
    assert_eq!(silent.len(), 1, "one deadline, not one per key: {silent:?}");
    // The key is not blamed (F-6.1).
    let usage = h.usage(&format!("slow:{}", &silent[0].1[5..]));
    assert_eq!(usage.blocked_until(None, u64::MAX / 2), None, "{usage:?}");
    h.stop().await;
}
