//! What the gateway benchmarks share: an upstream on loopback that answers
//! every chat completion at once, and `failover serve`'s router in front of
//! it with one API-key profile and a one-model chain.

// Each benchmark uses what it needs.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use axum::routing::post;
use failover::auth::CredentialKind;
use failover::config::Config;
use failover::gateway::{self, ClientKeys, Gateway, GatewayOptions};
use failover::state::{AuthStore, StateDir};
use failover::Decider;

/// What the upstream answers: a small, complete chat completion.
pub const REPLY: &str = r#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#;
/// What the load sends.
pub const REQUEST: &str = r#"{"model":"auto","messages":[{"role":"user","content":"hi"}]}"#;

/// The running pair.
pub struct Loopback {
    /// `POST` here to reach the upstream directly.
    pub upstream_chat_url: String,
    /// `POST` here to go through the gateway.
    pub gateway_chat_url: String,
    pub gateway: Arc<Gateway>,
    _state: tempfile::TempDir,
}

/// Starts the upstream and a gateway deciding with `policy`.
pub async fn start(policy: Arc<dyn Decider>) -> Loopback {
    start_with_state(policy, "").await
}

/// [`start`], with `state` as the config's `state` section (`""`: files).
pub async fn start_with_state(policy: Arc<dyn Decider>, state: &str) -> Loopback {
    let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream_url = format!("http://{}", upstream.local_addr().unwrap());
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        post(|| async { ([("content-type", "application/json")], REPLY) }),
    );
    tokio::spawn(async move { axum::serve(upstream, app).await });

    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("failover.json5");
    std::fs::write(
        &config_path,
        format!(
            r#"{{ agents: {{ defaults: {{ model: {{ primary: "openai/gpt-x" }} }} }}, {state}
                 models: {{ providers: {{ openai: {{ baseUrl: "{upstream_url}/v1", api: "openai-chat" }} }} }} }}"#
        ),
    )
    .unwrap();
    let state = StateDir::at(dir.path().join("state"));
    AuthStore::open(state.agent("main").unwrap())
        .unwrap()
        .update_profiles(|f| f.put_static("openai:a", "openai", CredentialKind::ApiKey, "k"))
        .unwrap();
    let gateway = Arc::new(
        Gateway::new(
            policy,
            Config::load(&config_path).unwrap(),
            &state,
            GatewayOptions {
                agent: "main".into(),
                client_keys: ClientKeys::default(),
                retry_wait_cap_ms: 0,
                recorder: None,
            },
        )
        .unwrap(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let gateway_url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(gateway::serve(
        listener,
        gateway.clone(),
        std::future::pending(),
    ));
    Loopback {
        upstream_chat_url: format!("{upstream_url}/v1/chat/completions"),
        gateway_chat_url: format!("{gateway_url}/v1/chat/completions"),
        gateway,
        _state: dir,
    }
}

/// `requests` chat requests to `url` from `concurrency` closed-loop
/// clients: each request's latency, and the time the whole load took.
pub async fn closed_loop(
    url: &str,
    requests: usize,
    concurrency: usize,
) -> (Vec<Duration>, Duration) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let client = reqwest::Client::new();
    // Parsed once: the load's own URL parsing is not the gateway's cost.
    let url = reqwest::Url::parse(url).expect("url");
    let next = Arc::new(AtomicUsize::new(0));
    let started = std::time::Instant::now();
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (client, url, next) = (client.clone(), url.clone(), next.clone());
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < requests {
                let start = std::time::Instant::now();
                let response = client
                    .post(url.clone())
                    .header("content-type", "application/json")
                    .body(REQUEST)
                    .send()
                    .await
                    .expect("request");
                assert_eq!(response.status(), 200);
                response.bytes().await.expect("body");
                latencies.push(start.elapsed());
            }
            latencies
        }));
    }
    let mut latencies = Vec::new();
    for worker in workers {
        latencies.extend(worker.await.expect("worker"));
    }
    (latencies, started.elapsed())
}

/// The `p` quantile of `latencies` (sorted here).
pub fn percentile(latencies: &mut [Duration], p: f64) -> Duration {
    latencies.sort_unstable();
    latencies[((latencies.len() as f64 - 1.0) * p).round() as usize]
}

/// Milliseconds, for printing.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
