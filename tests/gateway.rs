//! The gateway end to end: `failover serve`'s router in process, real HTTP
//! providers, and a fault-injecting upstream on loopback. Each test asserts
//! what the client receives, which upstream calls were made, and the
//! profile state that results.

use crate::harness;
use crate::upstream;

use std::time::Duration;

use failover::auth::RecordedReason;
use failover::config::Config;
use failover::gateway::{ClientKeys, Gateway, GatewayOptions};
use failover::state::StateDir;
use harness::*;
use serde_json::{json, Value};
use upstream::Behaviour;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_primary_answers_in_openai_shape() {
    let h = start("", ClientKeys::default()).await;
    let a = h.chat("auto", false, None).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.content(), "hello from claude-x with ant-a");
    assert_eq!(a.json()["object"], "chat.completion");
    assert_eq!(a.json()["usage"]["total_tokens"], 12);
    assert_eq!(a.header("x-failover-provider"), "anthropic");
    assert_eq!(a.header("x-failover-model"), PRIMARY);
    assert_eq!(a.header("x-failover-profile"), "anthropic:a");
    assert_eq!(a.header("content-length"), a.text.len().to_string());
    // The Anthropic request was translated: system on top, max_tokens set.
    let sent: Value = serde_json::from_str(&h.up.calls()[0].body).unwrap();
    assert_eq!(sent["system"], "be brief");
    assert_eq!(sent["max_tokens"], 4096);
    assert!(h.usage("anthropic:a").last_used.is_some());
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_without_retry_after_rotates_to_the_next_key() {
    let h = start("", ClientKeys::default()).await;
    h.up.then(
        "claude-x",
        status(
            429,
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
        ),
    );
    let a = h.chat("auto", false, None).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.header("x-failover-profile"), "anthropic:b");
    assert_eq!(
        h.up.chat_calls(),
        calls(&[("claude-x", "ant-a"), ("claude-x", "ant-b")])
    );
    let a_state = h.usage("anthropic:a");
    let cooldown = a_state.model_cooldowns.first().expect("a cooldown");
    assert_eq!(cooldown.reason, RecordedReason::RateLimit);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_retry_after_is_waited_on_when_nothing_else_remains() {
    let h = start("", ClientKeys::default()).await;
    let limited = Behaviour::Status(
        429,
        vec![("retry-after-ms", "300".into())],
        r#"{"error":{"message":"rate limit"}}"#.into(),
    );
    h.up.then("meta/llama-x", limited);
    // agent:ops is strict on openrouter with one profile: nothing else remains.
    let started = std::time::Instant::now();
    let a = h.chat("agent:ops", false, None).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(
        h.up.chat_calls(),
        calls(&[("meta/llama-x", "or-ops"), ("meta/llama-x", "or-ops")])
    );
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_over_the_cap_is_surfaced_at_once() {
    let h = start("", ClientKeys::default()).await;
    let limited = Behaviour::Status(
        429,
        vec![("retry-after", "120".into())],
        r#"{"error":{"message":"rate limit"}}"#.into(),
    );
    h.up.then("gpt-x", limited);
    let started = std::time::Instant::now();
    let a = h.chat(FALLBACK, false, None).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(a.status, 429, "{}", a.text);
    let retry_after: u64 = a.header("retry-after").parse().unwrap();
    assert!((110..=120).contains(&retry_after), "{retry_after}");
    assert_eq!(a.json()["error"]["code"], "rate_limited");
    assert_eq!(h.up.chat_calls(), calls(&[("gpt-x", "oai-a")]));
    // Strict selection (F-7.6): the anthropic chain was not touched.
    let state = h.usage("openai:a");
    let cooldown = state.model_cooldowns.first().expect("a cooldown");
    assert_eq!(cooldown.reason, RecordedReason::RateLimit);
    let floor = cooldown.until - state.last_failure_at.unwrap();
    assert_eq!(floor, 120_000, "Retry-After floors the cooldown (F-6.8a)");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overloaded_provider_falls_back_across_providers() {
    let h = start("", ClientKeys::default()).await;
    let overloaded =
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    h.up.then("claude-x", status(529, overloaded))
        .then("claude-x", status(529, overloaded));
    let a = h.chat("auto", false, Some("s1")).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.header("x-failover-model"), FALLBACK);
    assert_eq!(a.content(), "hello from gpt-x with oai-a");
    assert_eq!(
        h.up.chat_calls(),
        calls(&[
            ("claude-x", "ant-a"),
            ("claude-x", "ant-b"),
            ("gpt-x", "oai-a")
        ])
    );
    for id in ["anthropic:a", "anthropic:b"] {
        assert_eq!(
            h.usage(id).cooldown_reason,
            Some(RecordedReason::Overloaded),
            "{id}"
        );
    }
    // The session is on the fallback, and /status says so.
    let entry = h.sessions.get("s1").unwrap();
    assert_eq!(entry.model().as_deref(), Some(FALLBACK));
    let status = h.get("/status").await.json();
    assert_eq!(status["sessionsOnFallback"][0]["session"], "s1");
    // Reset puts the session back on the configured chain.
    let reset = h.post("/v1/sessions/s1/reset", "", None).await;
    assert_eq!(reset.status, 200, "{}", reset.text);
    assert_eq!(h.sessions.get("s1").unwrap().model(), None);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_credit_disables_the_profile_and_the_backup_key_carries_on() {
    let h = start("", ClientKeys::default()).await;
    h.up.then("claude-x", status(402, r#"{"type":"error","error":{"type":"billing_error","message":"Your credit balance is too low"}}"#));
    let a = h.chat("auto", false, None).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.header("x-failover-profile"), "anthropic:b");
    let state = h.usage("anthropic:a");
    assert_eq!(state.disabled_reason, Some(RecordedReason::Billing));
    assert!(state.disabled_until.unwrap() >= state.last_failure_at.unwrap() + 5 * 3_600_000);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_invalid_key_cools_the_profile_down_and_a_revoked_one_disables_it() {
    let h = start("", ClientKeys::default()).await;
    h.up.then("claude-x", status(401, r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#));
    let a = h.chat("auto", false, None).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.header("x-failover-profile"), "anthropic:b");
    // An invalid key may be a typo or a rotation in progress: a cooldown,
    // not a disable.
    let state = h.usage("anthropic:a");
    assert_eq!(state.cooldown_reason, Some(RecordedReason::Auth));
    assert_eq!(state.disabled_reason, None);
    h.up.then("claude-x", status(401, r#"{"type":"error","error":{"type":"authentication_error","message":"This API key has been revoked."}}"#));
    let b = h.chat("auto", false, None).await;
    assert_eq!(b.status, 200, "{}", b.text);
    assert_eq!(
        h.usage("anthropic:b").disabled_reason,
        Some(RecordedReason::AuthPermanent),
        "a revoked key is refused for good: the disable lane"
    );
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_openrouter_key_limit_is_billing_and_a_strict_run_fails_loudly() {
    let h = start("", ClientKeys::default()).await;
    h.up.then("meta/llama-x", status(403, r#"{"error":{"message":"Key limit exceeded (total limit). Manage it using https://openrouter.ai/settings/keys","code":403}}"#));
    let a = h.chat("openrouter/meta/llama-x", false, None).await;
    assert_eq!(a.status, 402, "{}", a.text);
    assert_eq!(a.json()["error"]["attempts"][0]["reason"], "billing");
    assert_eq!(
        h.up.chat_calls(),
        calls(&[("meta/llama-x", "or-a")]),
        "no unrelated fallback (F-7.6)"
    );
    assert_eq!(
        h.usage("openrouter:a").disabled_reason,
        Some(RecordedReason::Billing)
    );
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_503_html_page_is_a_server_error_that_moves_to_the_next_model() {
    let h = start("", ClientKeys::default()).await;
    let page = "<html><head><title>503 Service Unavailable</title></head><body>upstream down</body></html>";
    h.up.then("claude-x", status(503, page))
        .then("claude-x", status(503, page));
    let a = h.chat("auto", false, None).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.header("x-failover-model"), FALLBACK);
    // A CDN's 503 page is the endpoint's failure (F-12.7): another key of
    // the same endpoint would fail alike, so the run moves to the next
    // model, and the credential is not to blame (no cooldown).
    assert_eq!(
        h.up.chat_calls(),
        calls(&[("claude-x", "ant-a"), ("gpt-x", "oai-a")])
    );
    for profile in ["anthropic:a", "anthropic:b"] {
        let state = h.usage(profile);
        assert_eq!((state.cooldown_until, state.disabled_until), (None, None));
    }
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_upstream_past_the_attempt_deadline_times_out_and_falls_back() {
    let h = start("", ClientKeys::default()).await;
    // openai's timeoutSeconds is 5; the strict selection has nothing else.
    h.up.then("gpt-x", Behaviour::Slow(Duration::from_secs(8)));
    let started = std::time::Instant::now();
    let a = h.chat(FALLBACK, false, None).await;
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(5) && took < Duration::from_secs(8),
        "{took:?}"
    );
    assert_eq!(a.status, 502, "{}", a.text);
    assert_eq!(a.json()["error"]["attempts"][0]["reason"], "timeout");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_reset_tries_the_providers_next_key_before_the_next_model() {
    let h = start("", ClientKeys::default()).await;
    h.up.then("claude-x", Behaviour::Reset);
    let a = h.chat("auto", false, None).await;
    assert_eq!(a.status, 200, "{}", a.text);
    // F-12.1: a transient failure of one key rotates to the next key of the
    // same provider first; it answers, the model does not change.
    assert_eq!(a.header("x-failover-model"), PRIMARY);
    assert_eq!(a.header("x-failover-profile"), "anthropic:b");
    assert_eq!(
        h.up.chat_calls(),
        calls(&[("claude-x", "ant-a"), ("claude-x", "ant-b")])
    );
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transport_failures_are_captured_as_the_codes_the_classifier_knows() {
    let h = start(
        r#"bare: { baseUrl: "BASE/bare/v1" },"#,
        ClientKeys::default(),
    )
    .await;
    for (model, code, said) in [
        (
            "closed/m",
            "ECONNREFUSED",
            "closed/m is refusing connections",
        ),
        ("nowhere/m", "ENOTFOUND", "nowhere/m is not resolving (DNS"),
    ] {
        let a = h.chat(model, false, None).await;
        assert_eq!(a.status, 502, "{}", a.text);
        let attempt = &a.json()["error"]["attempts"][0];
        assert_eq!(attempt["reason"], "timeout", "{model}: {attempt}");
        assert!(
            attempt["summary"].as_str().unwrap().starts_with(code),
            "{model}: {attempt}"
        );
        // The message names the real cause, not "timing out".
        let message = a.json()["error"]["message"].as_str().unwrap().to_owned();
        assert!(message.starts_with(said), "{model}: {message}");
    }
    // A provider with no stored credential says so, and how to add one.
    let bare = h.chat("bare/m", false, None).await;
    let message = bare.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(
        message.starts_with("bare/m is missing credentials"),
        "{message}"
    );
    let summary = bare.json()["error"]["attempts"][0]["summary"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        summary.contains("failover profiles add bare:<name>"),
        "{summary}"
    );
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_are_translated_to_openai_chunks() {
    let h = start("", ClientKeys::default()).await;
    h.up.then(
        "claude-x",
        Behaviour::Stream {
            pieces: vec!["Hel", "lo"],
            cut: false,
        },
    );
    let a = h.chat("auto", true, None).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.header("content-type"), "text/event-stream");
    let (text, done, error) = read_sse(&a.text);
    assert_eq!(text, "Hello");
    assert!(done && error.is_none(), "{}", a.text);
    assert!(a.text.contains(r#""finish_reason":"stop""#), "{}", a.text);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_before_content_fails_over_and_after_content_ends_with_an_error() {
    let h = start("", ClientKeys::default()).await;
    // Before the first text: the attempt failed (a reset is
    // timeout-shaped), the next model serves.
    for _ in 0..2 {
        h.up.then(
            "claude-x",
            Behaviour::Stream {
                pieces: vec![],
                cut: true,
            },
        );
    }
    let a = h.chat("auto", true, None).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.header("x-failover-model"), FALLBACK);
    assert_eq!(read_sse(&a.text).0, "hello from gpt-x with oai-a");
    // After it: the client has the text, then an error event, no [DONE].
    h.up.then(
        "gpt-x",
        Behaviour::Stream {
            pieces: vec!["par", "tial"],
            cut: true,
        },
    );
    let b = h.chat(FALLBACK, true, None).await;
    assert_eq!(b.status, 200);
    let (text, done, error) = read_sse(&b.text);
    assert_eq!(text, "partial");
    assert!(!done, "{}", b.text);
    assert_eq!(error.unwrap()["code"], "stream_interrupted");
    h.stop().await;
}

/// (text, saw [DONE], error object) of an SSE body.
fn read_sse(body: &str) -> (String, bool, Option<Value>) {
    let streamed = read_stream(body);
    (streamed.text, streamed.done, streamed.error)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_band_errors_and_garbage_are_upstream_errors_not_crashes() {
    let h = start("", ClientKeys::default()).await;
    h.up.then(
        "gpt-x",
        Behaviour::Raw(
            "application/json",
            r#"{"error":{"message":"Overloaded","type":"overloaded_error"}}"#.into(),
        ),
    );
    h.up.then(
        "gpt-x",
        Behaviour::Raw("text/html", "<html>not json</html>".into()),
    );
    let a = h.chat(FALLBACK, false, None).await;
    assert_eq!(a.status, 503, "{}", a.text);
    assert_eq!(a.json()["error"]["attempts"][0]["reason"], "overloaded");
    let b = h.chat(FALLBACK, false, None).await;
    assert_eq!(b.status, 502, "{}", b.text);
    assert!(b.text.contains("not a chat completion"), "{}", b.text);
    // An empty stream is an empty response, not a reply. (Another
    // provider: openai's probe throttle would skip it now, F-8.3.)
    h.up.then(
        "meta/llama-x",
        Behaviour::Stream {
            pieces: vec![],
            cut: false,
        },
    );
    let c = h.chat("openrouter/meta/llama-x", true, None).await;
    assert_eq!(c.status, 502, "{}", c.text);
    assert_eq!(h.up.chat_calls().len(), 3);
    assert_eq!(h.get("/healthz").await.status, 200);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_openai_errors() {
    let h = start("", ClientKeys::default()).await;
    let a = h.post("/v1/chat/completions", "{not json", None).await;
    assert_eq!(a.status, 400);
    assert_eq!(a.json()["error"]["type"], "invalid_request_error");
    let b = h.chat("nobody/model", false, None).await;
    assert_eq!(b.status, 404, "{}", b.text);
    assert_eq!(b.json()["error"]["code"], "model_not_found");
    let c = h.chat("openrouter/not-listed", false, None).await;
    assert_eq!(c.status, 404, "{}", c.text);
    let d = h.chat("agent:nobody", false, None).await;
    assert_eq!(d.status, 404);
    let e = h.chat("auto", false, Some(&"x".repeat(300))).await;
    assert_eq!(e.status, 400, "{}", e.text);
    // A response format has no Anthropic counterpart, and the pinned model
    // is Anthropic's: a 400 naming the feature no candidate supports, no call.
    let tools = json!({"model": PRIMARY, "response_format": {"type": "json_object"},
                       "messages": [{"role": "user", "content": "hi"}]});
    let f = h
        .post("/v1/chat/completions", &tools.to_string(), None)
        .await;
    assert_eq!(f.status, 400, "{}", f.text);
    assert_eq!(
        f.json()["error"]["code"],
        "unsupported_feature",
        "{}",
        f.text
    );
    assert!(f.text.contains("response_format"), "{}", f.text);
    assert!(h.up.chat_calls().is_empty());
    assert_eq!(h.get("/nowhere").await.status, 404);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_keep_their_profile() {
    let h = start("", ClientKeys::default()).await;
    let first = h.chat("auto", false, Some("sticky")).await;
    let second = h.chat("auto", false, Some("sticky")).await;
    assert_eq!(
        first.header("x-failover-profile"),
        second.header("x-failover-profile")
    );
    assert_eq!(
        h.sessions
            .get("sticky")
            .unwrap()
            .profile_pin
            .profile
            .as_deref(),
        Some(first.header("x-failover-profile"))
    );
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_status_and_health() {
    let h = start("", ClientKeys::default()).await;
    let models = h.get("/v1/models").await.json();
    let ids: Vec<&str> = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    for id in [
        "auto",
        "agent:ops",
        PRIMARY,
        FALLBACK,
        "openrouter/meta/llama-x",
    ] {
        assert!(ids.contains(&id), "{id} in {ids:?}");
    }
    let status = h.get("/status").await;
    assert_eq!(status.status, 200);
    let json = status.json();
    assert_eq!(json["policy"]["sha256"].as_str().unwrap().len(), 64);
    assert!(json["providers"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["provider"] == "anthropic"));
    for (_, key) in PROFILES {
        assert!(!status.text.contains(key), "a secret in /status");
    }
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_keys_are_required_when_configured() {
    let mut keys = ClientKeys::default();
    keys.add("client-key-0123456789");
    let h = start("", keys).await;
    assert_eq!(h.chat("auto", false, None).await.status, 401);
    let response = h
        .client
        .post(format!("{}/v1/chat/completions", h.base))
        .bearer_auth("client-key-0123456789")
        .header("content-type", "application/json")
        .body(json!({"model": "auto", "messages": [{"role": "user", "content": "hi"}]}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    h.stop().await;
}

/// The chat routes are served outside the router's layers: what
/// those layers did — the key check, the policy header on every answer,
/// the Anthropic face's error shape, the router's 405 — they still get.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chat_routes_refuse_and_name_the_policy_as_the_other_routes_do() {
    let mut keys = ClientKeys::default();
    keys.add("client-key-0123456789");
    let h = start("", keys).await;
    let send = |method: reqwest::Method, path: &str, key: Option<&str>, body: &str| {
        let mut request = h
            .client
            .request(method, format!("{}{path}", h.base))
            .header("content-type", "application/json")
            .body(body.to_owned());
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        async move { answer(request.send().await.unwrap()).await }
    };
    let chat =
        json!({"model": "auto", "messages": [{"role": "user", "content": "hi"}]}).to_string();
    let served = send(
        reqwest::Method::POST,
        "/v1/chat/completions",
        Some("client-key-0123456789"),
        &chat,
    )
    .await;
    assert_eq!(served.status, 200, "{}", served.text);
    let hash = served.header("x-failover-policy").to_owned();
    assert_eq!(hash.len(), 64, "{hash:?}");

    let unkeyed = send(reqwest::Method::POST, "/v1/chat/completions", None, &chat).await;
    assert_eq!(unkeyed.status, 401);
    assert_eq!(unkeyed.json()["error"]["code"], "missing_api_key");
    assert_eq!(unkeyed.header("x-failover-policy"), hash);

    let wrong = send(
        reqwest::Method::POST,
        "/v1/messages",
        Some("not-the-key"),
        "{}",
    )
    .await;
    assert_eq!(wrong.status, 401);
    assert_eq!(wrong.json()["type"], "error", "{}", wrong.text);
    assert_eq!(wrong.json()["error"]["type"], "authentication_error");
    assert_eq!(wrong.header("x-failover-policy"), hash);

    let unparsable = send(
        reqwest::Method::POST,
        "/v1/chat/completions",
        Some("client-key-0123456789"),
        "{",
    )
    .await;
    assert_eq!(unparsable.status, 400);
    assert_eq!(unparsable.header("x-failover-policy"), hash);
    let unparsable = send(
        reqwest::Method::POST,
        "/v1/messages",
        Some("client-key-0123456789"),
        "{",
    )
    .await;
    assert_eq!(unparsable.status, 400);
    assert_eq!(
        unparsable.json()["error"]["type"],
        "invalid_request_error",
        "{}",
        unparsable.text
    );
    assert_eq!(unparsable.header("x-failover-policy"), hash);

    for path in ["/v1/chat/completions", "/v1/messages"] {
        let got = send(reqwest::Method::GET, path, None, "").await;
        assert_eq!(got.status, 405, "{path}");
        assert_eq!(got.header("allow"), "POST", "{path}");
        assert_eq!(got.header("x-failover-policy"), hash, "{path}");
    }
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_address_without_keys_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let gateway = Gateway::new(
        policy(),
        Config::default(),
        &StateDir::at(dir.path()),
        GatewayOptions {
            agent: "main".into(),
            client_keys: ClientKeys::default(),
            retry_wait_cap_ms: 0,
            recorder: None,
        },
    )
    .unwrap();
    assert!(gateway.check_listen("127.0.0.1:1".parse().unwrap()).is_ok());
    let error = gateway
        .check_listen("0.0.0.0:1".parse().unwrap())
        .unwrap_err()
        .to_string();
    assert!(error.contains("refusing"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_drains_requests_in_flight() {
    let h = start("", ClientKeys::default()).await;
    h.up.then("claude-x", Behaviour::Slow(Duration::from_millis(700)));
    let client = h.client.clone();
    let url = format!("{}/v1/chat/completions", h.base);
    let in_flight = tokio::spawn(async move {
        let body = json!({"model": "auto", "messages": [{"role": "user", "content": "hi"}]});
        client
            .post(url)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let base = h.base.clone();
    h.stop().await;
    let response = in_flight.await.unwrap().unwrap();
    assert_eq!(response.status(), 200, "the request in flight finished");
    assert!(
        reqwest::get(format!("{base}/healthz")).await.is_err(),
        "no longer accepting"
    );
}

/// Stores an OAuth profile `acme:<name>` whose access token expired.
fn put_expired_oauth(h: &Harness, name: &str, refresh: &str) {
    let path = h.store.paths().profiles.clone();
    let mut document: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    document["profiles"][format!("acme:{name}")] = json!({
        "type": "oauth", "provider": "acme", "access": "stale-access",
        "refresh": refresh, "expires": 1_000, "projectId": "kept"
    });
    std::fs::write(&path, document.to_string()).unwrap();
}

const ACME: &str = "acme: { baseUrl: \"BASE/acme/v1\", oauth: { tokenUrl: \"BASE/oauth/token\", clientId: \"cid\" } },";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_oauth_profile_is_refreshed_and_saved() {
    let h = start(ACME, ClientKeys::default()).await;
    put_expired_oauth(&h, "me", "good-refresh");
    let a = h.chat("acme/m1", false, None).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.content(), "hello from m1 with fresh-access");
    let token_call =
        h.up.calls()
            .into_iter()
            .find(|c| c.path.contains("oauth"))
            .unwrap();
    assert!(
        token_call.body.contains("grant_type=refresh_token"),
        "{}",
        token_call.body
    );
    assert!(
        token_call.body.contains("client_id=cid"),
        "{}",
        token_call.body
    );
    let path = h.store.paths().profiles.clone();
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let profile = &saved["profiles"]["acme:me"];
    assert_eq!(profile["access"], "fresh-access");
    assert_eq!(profile["refresh"], "fresh-refresh");
    assert!(profile["expires"].as_u64().unwrap() > failover::time::now_ms());
    assert_eq!(profile["projectId"], "kept", "other fields survive");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    // The next call uses the saved token without refreshing again.
    assert_eq!(h.chat("acme/m1", false, None).await.status, 200);
    assert_eq!(
        h.up.calls()
            .iter()
            .filter(|c| c.path.contains("oauth"))
            .count(),
        1
    );
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_refresh_disables_that_profile() {
    let h = start(ACME, ClientKeys::default()).await;
    put_expired_oauth(&h, "me", "revoked-refresh");
    let a = h.chat("acme/m1", false, None).await;
    assert_eq!(a.status, 502, "{}", a.text);
    assert!(h.up.chat_calls().is_empty(), "no call with a dead token");
    // The token endpoint said `invalid_grant`: the login is dead until a
    // person signs in again.
    assert_eq!(a.json()["error"]["attempts"][0]["reason"], "auth_permanent");
    assert!(!a.text.contains("revoked-refresh") && !a.text.contains("stale-access"));
    assert_eq!(
        h.usage("acme:me").disabled_reason,
        Some(RecordedReason::AuthPermanent)
    );
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_utf8_session_id_is_a_session_like_any_other() {
    let h = start("", ClientKeys::default()).await;
    let chat = |id: &[u8]| {
        h.client
            .post(format!("{}/v1/chat/completions", h.base))
            .header("content-type", "application/json")
            .header(
                "x-session-id",
                reqwest::header::HeaderValue::from_bytes(id).unwrap(),
            )
            .body(r#"{"model":"auto","messages":[{"role":"user","content":"hi"}]}"#)
            .send()
    };
    let served = answer(chat("café-über-会话".as_bytes()).await.unwrap()).await;
    assert_eq!(served.status, 200, "{}", served.text);
    let entry = h.sessions.get("café-über-会话").unwrap();
    assert_eq!(entry.profile_pin.profile.as_deref(), Some("anthropic:a"));
    // Bytes that are not UTF-8: refused, shown as they came.
    let refused = answer(chat(b"caf\xe9").await.unwrap()).await;
    assert_eq!(refused.status, 400);
    assert!(
        refused.text.contains("caf") && refused.text.contains("not UTF-8"),
        "{}",
        refused.text
    );
    h.stop().await;
}
