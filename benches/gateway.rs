//! Gateway overhead: the same load — fixed concurrency, loopback, an
//! upstream that answers at once — sent straight to the upstream and
//! through `failover serve`'s router. Prints p50/p99 latency of both, the
//! latency the gateway adds, and the throughput ratio, from one run.
//!
//! `cargo bench --bench gateway [-- REQUESTS CONCURRENCY]`

#[path = "support/loopback.rs"]
mod loopback;

use std::sync::Arc;
use std::time::{Duration, Instant};

use failover::{Policy, PolicyEngine};
use loopback::REQUEST;

struct Run {
    latencies: Vec<Duration>,
    elapsed: Duration,
}

impl Run {
    fn percentile(&self, p: f64) -> Duration {
        loopback::percentile(&mut self.latencies.clone(), p)
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
        let policy = Arc::new(Policy::default_policy(&PolicyEngine::new().unwrap()).unwrap());
        let pair = loopback::start(policy).await;
        let (upstream_url, gateway_url) = (
            pair.upstream_chat_url.clone(),
            pair.gateway_chat_url.clone(),
        );

        // Warm both paths (connections, the policy's instance pool).
        load(upstream_url.clone(), 200, concurrency).await;
        load(gateway_url.clone(), 200, concurrency).await;

        let direct = load(upstream_url, requests, concurrency).await;
        let through = load(gateway_url, requests, concurrency).await;
        let ms = loopback::ms;
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
