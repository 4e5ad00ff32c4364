//! `/metrics` scraped and parsed as Prometheus would, the counters moving
//! as the requests did; `/readyz` following the default chain's state.

use crate::harness;

use failover::gateway::ClientKeys;
use harness::*;
use serde_json::json;

/// The scraped samples.
struct Scrape(Vec<prometheus_parse::Sample>);

impl Scrape {
    async fn of(h: &Harness) -> Scrape {
        let answer = h.get("/metrics").await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        assert!(answer
            .header("content-type")
            .starts_with("text/plain; version=0.0.4"));
        let lines = answer.text.lines().map(|l| Ok(l.to_owned()));
        let scrape = prometheus_parse::Scrape::parse(lines).expect("Prometheus text format");
        Scrape(scrape.samples)
    }

    /// The value of `metric` with exactly these labels (0 when absent).
    fn value(&self, metric: &str, labels: &[(&str, &str)]) -> f64 {
        let found: Vec<f64> = self
            .0
            .iter()
            .filter(|s| s.metric == metric)
            .filter(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
            .map(|s| match &s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => *v,
                prometheus_parse::Value::Histogram(buckets) => {
                    buckets.last().map_or(0.0, |b| b.count)
                }
                prometheus_parse::Value::Summary(_) => f64::NAN,
            })
            .collect();
        assert!(found.len() <= 1, "{metric} {labels:?}: {found:?}");
        found.first().copied().unwrap_or(0.0)
    }
}

fn prompt(text: &str) -> String {
    json!({"model": "auto", "messages": [{"role": "user", "content": text}]}).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_what_the_requests_did() {
    let h = start("", ClientKeys::default()).await;
    let before = Scrape::of(&h).await;
    assert_eq!(
        before.value("failover_requests_total", &[("outcome", "served")]),
        0.0
    );
    assert_eq!(
        before.value(
            "failover_profiles",
            &[("provider", "anthropic"), ("state", "ok")]
        ),
        2.0
    );
    assert!(before.value("failover_policy_module", &[("counter", "calls")]) >= 0.0);

    assert_eq!(h.chat("auto", false, None).await.status, 200);
    assert_eq!(h.chat("gpt", false, None).await.status, 200);
    // The primary down on both profiles: a fallback step to OpenAI.
    let served = h
        .post("/v1/chat/completions", &prompt("hi down:claude-x"), None)
        .await;
    assert_eq!(served.header("x-failover-model"), FALLBACK);
    let refused = h.chat("made-up", false, None).await;
    assert_eq!(refused.status, 404);
    // Names the config does not give are one label, however many there are.
    for made_up in ["openai/made-up-1", "openai/made-up-2"] {
        assert_eq!(h.chat(made_up, false, None).await.status, 200);
    }

    let after = Scrape::of(&h).await;
    assert_counted_after_the_requests(&h, &before, &after).await;
    assert_everything_down_is_counted(&h).await;
    h.stop().await;
}

/// The counters `after` the requests of
/// [`metrics_count_what_the_requests_did`], against those `before`:
/// requests by route, model and outcome, upstream calls and their
/// latency, the fallback step, the profiles cooling, the policy's calls.
async fn assert_counted_after_the_requests(h: &Harness, before: &Scrape, after: &Scrape) {
    let requests = |model, outcome| {
        after.value(
            "failover_requests_total",
            &[
                ("route", "chat_completions"),
                ("model", model),
                ("outcome", outcome),
            ],
        )
    };
    assert_eq!(requests("auto", "served"), 2.0);
    assert_eq!(requests("gpt", "served"), 1.0);
    assert_eq!(requests("-", "404"), 1.0);
    let calls = |provider, model, result| {
        after.value(
            "failover_upstream_calls_total",
            &[("provider", provider), ("model", model), ("result", result)],
        )
    };
    assert_eq!(calls("anthropic", PRIMARY, "ok"), 1.0);
    assert_eq!(calls("anthropic", PRIMARY, "overloaded"), 2.0);
    assert_eq!(calls("openai", FALLBACK, "ok"), 2.0);
    assert_eq!(calls("openai", "other", "ok"), 2.0);
    assert_eq!(requests("other", "served"), 2.0);
    assert!(!h.get("/metrics").await.text.contains("made-up"));
    assert_eq!(
        after.value(
            "failover_upstream_latency_seconds_count",
            &[("provider", "openai"), ("model", FALLBACK)]
        ),
        2.0
    );
    assert_eq!(
        after.value(
            "failover_fallback_steps_total",
            &[
                ("from_model", PRIMARY),
                ("reason", "overloaded"),
                ("outcome", "succeeded")
            ]
        ),
        1.0,
        "{}",
        h.get("/metrics").await.text
    );
    assert_eq!(
        after.value(
            "failover_profiles",
            &[("provider", "anthropic"), ("state", "cooldown")]
        ),
        2.0
    );
    assert!(
        after.value("failover_policy_module", &[("counter", "calls")])
            > before.value("failover_policy_module", &[("counter", "calls")])
    );
}

/// Everything down: the first request probes the cooling primary (F-8.3)
/// and fails; the probe throttle then passes the primary over. Both
/// failures are counted, and the skip.
async fn assert_everything_down_is_counted(h: &Harness) {
    for _ in 0..2 {
        let failed = h
            .post(
                "/v1/chat/completions",
                &prompt("down:claude-x down:gpt-x"),
                None,
            )
            .await;
        assert_eq!(failed.status, 503, "{}", failed.text);
    }
    let last = Scrape::of(h).await;
    assert_eq!(
        last.value(
            "failover_candidates_skipped_total",
            &[
                ("provider", "anthropic"),
                ("model", PRIMARY),
                ("reason", "overloaded")
            ]
        ),
        1.0,
        "{}",
        h.get("/metrics").await.text
    );
    assert_eq!(
        last.value(
            "failover_requests_total",
            &[("model", "auto"), ("outcome", "503")]
        ),
        2.0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_says_whether_the_default_chain_can_serve_now() {
    let h = start("", ClientKeys::default()).await;
    let ready = h.get("/readyz").await;
    assert_eq!(ready.status, 200, "{}", ready.text);
    assert_eq!(ready.json()["serving"], PRIMARY);
    let _ = h
        .post("/v1/chat/completions", &prompt("hi down:claude-x"), None)
        .await;
    let fallback = h.get("/readyz").await;
    assert_eq!(fallback.status, 200, "{}", fallback.text);
    assert_eq!(fallback.json()["serving"], FALLBACK);
    assert_eq!(fallback.json()["candidates"][0]["ready"], false);
    let why = fallback.json()["candidates"][0]["why"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        why.contains("every credential of anthropic is cooling down"),
        "{why}"
    );
    let _ = h
        .post(
            "/v1/chat/completions",
            &prompt("down:claude-x down:gpt-x"),
            None,
        )
        .await;
    let down = h.get("/readyz").await;
    assert_eq!(down.status, 503, "{}", down.text);
    assert_eq!(down.json()["ready"], false);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_counts_only_credentials_a_run_could_use() {
    let h = start("", ClientKeys::default()).await;
    // OpenAI's only credential: a token that expired and cannot be refreshed.
    let path = h.store.paths().profiles.clone();
    let mut document: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    document["profiles"]["openai:a"] = json!({"type": "token", "provider": "openai", "token": "expired-token-0123", "expires": 1_000});
    std::fs::write(&path, document.to_string()).unwrap();
    let ready = h.get("/readyz").await;
    let openai = &ready.json()["candidates"][1];
    assert_eq!(openai["model"], FALLBACK, "{}", ready.text);
    assert_eq!(openai["ready"], false, "{}", ready.text);
    let why = openai["why"].as_str().unwrap();
    assert!(why.contains("stored but none is usable"), "{why}");
    h.stop().await;
}
