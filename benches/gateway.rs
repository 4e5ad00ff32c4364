//! Gateway overhead: the same load — fixed concurrency, loopback, an
//! upstream that answers at once — sent straight to the upstream and
//! through `failover serve`'s router. Prints p50/p99 latency of both, the
//! latency the gateway adds, and the throughput ratio, from one run.
//!
//! `cargo bench --bench gateway [-- REQUESTS CONCURRENCY]`

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::routing::post;
use failover::auth::CredentialKind;
use failover::config::Config;
use failover::gateway::{self, ClientKeys, Gateway, GatewayOptions};
use failover::state::{AuthStore, StateDir};
use failover::{Policy, PolicyEngine};

/// What the upstream answers: a small, complete chat completion.
const REPLY: &str = r#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#;
const REQUEST: &str = r#"{"model":"auto","messages":[{"role":"user","content":"hi"}]}"#;

struct Run {
    latencies: Vec<Duration>,
    elapsed: Duration,
}

impl Run {
    fn percentile(&self, p: f64) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort();
        let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
        sorted[index]
    }
    fn throughput(&self) -> f64 {
        self.latencies.len() as f64 / self.elapsed.as_secs_f64()
    }
}

async fn load(url: String, requests: usize, concurrency: usize) -> Run {
    let client = reqwest::Client::new();
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (client, url, next) = (client.clone(), url.clone(), next.clone());
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < requests {
                let start = Instant::now();
                let response = client
                    .post(&url)
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
    Run {
        latencies,
        elapsed: started.elapsed(),
    }
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let requests = args.first().copied().unwrap_or(4000);
    let concurrency = args.get(1).copied().unwrap_or(16);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
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
                r#"{{ agents: {{ defaults: {{ model: {{ primary: "openai/gpt-x" }} }} }},
                     models: {{ providers: {{ openai: {{ baseUrl: "{upstream_url}/v1", api: "openai-chat" }} }} }} }}"#
            ),
        )
        .unwrap();
        let state = StateDir::at(dir.path().join("state"));
        AuthStore::open(state.agent("main").unwrap())
            .unwrap()
            .update_profiles(|f| f.put_static("openai:a", "openai", CredentialKind::ApiKey, "k"))
            .unwrap();
        let policy = Arc::new(Policy::default_policy(&PolicyEngine::new().unwrap()).unwrap());
        let gateway = Gateway::new(
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
        .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let gateway_url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(gateway::serve(listener, Arc::new(gateway), std::future::pending()));

        // Warm both paths (connections, the policy's instance pool).
        load(format!("{upstream_url}/v1/chat/completions"), 200, concurrency).await;
        load(format!("{gateway_url}/v1/chat/completions"), 200, concurrency).await;

        let direct = load(format!("{upstream_url}/v1/chat/completions"), requests, concurrency).await;
        let through = load(format!("{gateway_url}/v1/chat/completions"), requests, concurrency).await;
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        println!("{requests} requests, concurrency {concurrency}, loopback, one run");
        println!("| path | p50 | p99 | requests/s |");
        println!("|---|---:|---:|---:|");
        for (name, run) in [("direct", &direct), ("through failover serve", &through)] {
            println!(
                "| {name} | {:.2} ms | {:.2} ms | {:.0} |",
                ms(run.percentile(0.5)),
                ms(run.percentile(0.99)),
                run.throughput()
            );
        }
        println!(
            "added latency: p50 {:.2} ms, p99 {:.2} ms; throughput ratio (through / direct) {:.2}",
            ms(through.percentile(0.5)) - ms(direct.percentile(0.5)),
            ms(through.percentile(0.99)) - ms(direct.percentile(0.99)),
            through.throughput() / direct.throughput()
        );
    });
}
