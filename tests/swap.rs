//! Hot swap: the example policies (examples/policy-context-advances, the
//! SDK's examples and the Python one) built, gated and swapped into a
//! serving gateway — through the admin endpoint and under load — and a
//! trapping policy contained mid-serve.

use crate::harness;
use crate::support::guests;
use crate::upstream;

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use failover::gateway::admin::{self, Admin, AdminFiles};
use failover::gateway::ClientKeys;
use failover::policy::gate;
use failover::{Limits, Policy, PolicyEngine};
use harness::*;
use serde_json::Value;
use upstream::Behaviour;

fn engine() -> &'static PolicyEngine {
    static ENGINE: OnceLock<PolicyEngine> = OnceLock::new();
    ENGINE.get_or_init(|| PolicyEngine::new().unwrap())
}

fn example_bytes() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| guests::component("examples/policy-context-advances", &[]))
}

fn example() -> Arc<Policy> {
    let (policy, _) = gate::admit(engine(), example_bytes(), Limits::default())
        .expect("the example passes the gate");
    Arc::new(policy)
}

const OVERFLOW: &str = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 250000 tokens > 200000 maximum"}}"#;

/// The primary always overflows its context.
fn overflowing(h: &Harness) {
    for _ in 0..2000 {
        h.up.then(
            "claude-x",
            Behaviour::Status(400, Vec::new(), OVERFLOW.into()),
        );
    }
}

/// Serves the admin routes of `h`'s gateway on loopback; its address and token.
async fn admin_endpoint(h: &Harness) -> (String, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let token = AdminFiles::of(&h.state).publish(address).unwrap();
    let admin = Arc::new(Admin {
        gateway: h.gateway.clone(),
        loader: Arc::new(failover::policy::Loader {
            engine: engine().clone(),
            limits: Limits::default(),
        }),
        token: token.clone(),
    });
    tokio::spawn(async move { axum::serve(listener, admin::router(admin)).await });
    (format!("http://{address}"), token)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_policy_changes_one_decision_and_swaps_in_through_the_admin_endpoint() {
    let h = start("", ClientKeys::default()).await;
    overflowing(&h);
    let default_hash = h.gateway.active_policy().version().sha256.clone();
    // The default keeps a context overflow with the caller (F-5.9).
    let before = h.chat("auto", false, None).await;
    assert_eq!(before.status, 400, "{}", before.text);
    assert_eq!(before.json()["error"]["code"], "context_length_exceeded");
    assert_eq!(before.header("x-failover-policy"), default_hash);

    let (admin, token) = admin_endpoint(&h).await;
    let client = reqwest::Client::new();
    let denied = client
        .post(format!("{admin}/admin/policy/swap"))
        .body(example_bytes().to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(denied.status(), 401, "no token, no swap");
    let swapped = client
        .post(format!("{admin}/admin/policy/swap"))
        .bearer_auth(&token)
        .body(example_bytes().to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(swapped.status(), 200);
    let body: Value = serde_json::from_str(&swapped.text().await.unwrap()).unwrap();
    assert_eq!(body["active"]["name"], "failover-context-advances");
    assert_eq!(body["previous"]["sha256"], default_hash.as_str());
    let example_hash = body["active"]["sha256"].as_str().unwrap().to_owned();

    // The example lets the chain carry it: the fallback answers.
    let after = h.chat("auto", false, None).await;
    assert_eq!(after.status, 200, "{}", after.text);
    assert_eq!(after.header("x-failover-model"), FALLBACK);
    assert_eq!(after.header("x-failover-policy"), example_hash);
    let status = h.get("/status").await;
    assert_eq!(status.header("x-failover-policy"), example_hash);
    assert_eq!(
        status.json()["previousPolicy"]["sha256"],
        default_hash.as_str()
    );

    // A module the gate refuses never serves; the current one stays.
    let refused = client
        .post(format!("{admin}/admin/policy/swap"))
        .bearer_auth(&token)
        .body(b"not a component".to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 422);
    assert_eq!(h.gateway.active_policy().version().sha256, example_hash);

    let rolled = client
        .post(format!("{admin}/admin/policy/rollback"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(rolled.status(), 200);
    let again = h.chat("auto", false, None).await;
    assert_eq!(again.status, 400);
    assert_eq!(again.header("x-failover-policy"), default_hash);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_swaps_under_load_fail_no_request() {
    let h = Arc::new(start("", ClientKeys::default()).await);
    overflowing(&h);
    let default = h.gateway.active_policy();
    let example = example();
    let (default_hash, example_hash) = (
        default.version().sha256.clone(),
        example.version().sha256.clone(),
    );
    // (instant, hash) of every activation, in order.
    let swaps = Arc::new(Mutex::new(vec![(Instant::now(), default_hash.clone())]));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));

    let mut load = Vec::new();
    for _ in 0..3 {
        let (h, done) = (h.clone(), done.clone());
        load.push(tokio::spawn(async move {
            let mut seen = Vec::new();
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let started = Instant::now();
                let answer = h.chat("auto", false, None).await;
                seen.push((started, Instant::now(), answer));
            }
            seen
        }));
    }
    for i in 0..100 {
        let next = if i % 2 == 0 {
            example.clone()
        } else {
            default.clone()
        };
        let hash = next.version().sha256.clone();
        {
            let mut log = swaps.lock().unwrap();
            h.gateway.swap_policy(next);
            log.push((Instant::now(), hash));
        }
        tokio::time::sleep(Duration::from_millis(15)).await;
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut answers = Vec::new();
    for worker in load {
        answers.extend(worker.await.unwrap());
    }
    let log = swaps.lock().unwrap().clone();
    assert_each_answer_is_its_modules(&answers, &log, &default_hash, &example_hash);
    Arc::try_unwrap(h)
        .ok()
        .expect("no other owner")
        .stop()
        .await;
}

/// Each of the `answers` (with when its request started and ended)
/// carries the hash of a module active while it ran, by the activation
/// `log`, and has that module's decision; both modules served.
fn assert_each_answer_is_its_modules(
    answers: &[(Instant, Instant, Answer)],
    log: &[(Instant, String)],
    default_hash: &str,
    example_hash: &str,
) {
    assert!(answers.len() >= 100, "only {} requests", answers.len());
    for (started, ended, answer) in answers {
        let hash = answer.header("x-failover-policy");
        // Active when the request started, or activated while it ran.
        let at_start = log
            .iter()
            .rev()
            .find(|(at, _)| at <= started)
            .map(|(_, h)| h.as_str());
        let during = log
            .iter()
            .filter(|(at, _)| at > started && at < ended)
            .map(|(_, h)| h.as_str());
        assert!(
            at_start == Some(hash) || during.clone().any(|h| h == hash),
            "a request carried {hash}, not the module active when it started"
        );
        // The decision is that module's: the default stops on the
        // overflow, the example falls back.
        if hash == default_hash {
            assert_eq!(answer.status, 400, "{}", answer.text);
            assert_eq!(answer.json()["error"]["code"], "context_length_exceeded");
        } else {
            assert_eq!(hash, example_hash);
            assert_eq!(answer.status, 200, "{}", answer.text);
            assert_eq!(answer.header("x-failover-model"), FALLBACK);
        }
    }
    let by_example = answers
        .iter()
        .filter(|(_, _, a)| a.header("x-failover-policy") == example_hash)
        .count();
    assert!(
        by_example > 0 && by_example < answers.len(),
        "both modules served"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_that_traps_mid_serve_fails_that_request_and_the_gateway_stays_up() {
    let extra = r#""hostile-loop": { baseUrl: "BASE/v1" },"#;
    let h = start(extra, ClientKeys::default()).await;
    h.store
        .update_profiles(|f| {
            f.put_static(
                "hostile-loop:a",
                "hostile-loop",
                failover::auth::CredentialKind::ApiKey,
                "hl-a",
            )
        })
        .unwrap();
    let hostile = guests::component("tests/fixtures/hostile-policy", &[]);
    let (policy, _) = gate::admit(engine(), &hostile, Limits::default()).unwrap();
    h.gateway.swap_policy(Arc::new(policy));
    // The upstream fails; classifying that failure loops until out of fuel.
    h.up.then("x", Behaviour::Status(500, Vec::new(), "{}".into()));
    let trapped = h.chat("hostile-loop/x", false, None).await;
    assert_eq!(trapped.status, 500, "{}", trapped.text);
    assert_eq!(trapped.json()["error"]["code"], "policy_error");
    assert!(trapped.text.contains("ran out of fuel"), "{}", trapped.text);
    let fine = h.chat("auto", false, None).await;
    assert_eq!(fine.status, 200, "{}", fine.text);
    h.stop().await;
}

/// What a gateway answers for `auto` while the primary is overloaded on
/// both its profiles: the model that answered, or the error's status.
async fn under_overload(h: &Harness) -> (u16, String, String) {
    let overloaded =
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    for _ in 0..2 {
        h.up.then(
            "claude-x",
            Behaviour::Status(529, Vec::new(), overloaded.into()),
        );
    }
    let answer = h.chat("auto", false, None).await;
    (
        answer.status,
        answer.header("x-failover-model").to_owned(),
        answer.header("x-failover-policy").to_owned(),
    )
}

/// Swaps `bytes` into `h`'s gateway through the admin endpoint; the
/// module's sha256.
async fn swap_in(h: &Harness, bytes: &[u8], name: &str) -> String {
    let (admin, token) = admin_endpoint(h).await;
    let swapped = reqwest::Client::new()
        .post(format!("{admin}/admin/policy/swap"))
        .bearer_auth(&token)
        .body(bytes.to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(swapped.status(), 200, "{name}");
    let body: Value = serde_json::from_str(&swapped.text().await.unwrap()).unwrap();
    assert_eq!(body["active"]["name"], name);
    assert_eq!(body["active"]["contract"], "failover:policy@1.0.0");
    body["active"]["sha256"].as_str().unwrap().to_owned()
}

/// The SDK's examples and the Python policy pass the gate, swap into a
/// serving gateway and decide their own way there: the status-only
/// policies still fall back on an overload, the same-provider policy never
/// leaves the provider.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdk_examples_and_the_python_policy_swap_in_and_decide_their_way() {
    let examples: [(&str, Vec<u8>, bool); 3] = [
        (
            "status-only",
            guests::component("examples/policies/status-only", &[]),
            true,
        ),
        (
            "same-provider",
            guests::component("examples/policies/same-provider", &[]),
            false,
        ),
        (
            "status-only-py",
            crate::policy::python::python_policy().to_vec(),
            true,
        ),
    ];
    for (name, bytes, falls_back) in examples {
        let h = start("", ClientKeys::default()).await;
        let (status, model, _) = under_overload(&h).await;
        assert_eq!(
            (status, model.as_str()),
            (200, FALLBACK),
            "the default falls back"
        );
        let hash = swap_in(&h, &bytes, name).await;
        let (status, model, policy) = under_overload(&h).await;
        if falls_back {
            assert_eq!((status, model.as_str()), (200, FALLBACK), "{name}");
            assert_eq!(policy, hash, "{name}");
        } else {
            assert_ne!(status, 200, "{name} answered from {model}");
        }
        h.stop().await;
    }
}
