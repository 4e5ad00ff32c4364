//! Gateway overhead: the same load — fixed concurrency, loopback, an
//! upstream that answers at once — sent straight to the upstream and
//! through `failover serve`'s router. Prints p50/p99 latency of both, the
//! latency the gateway adds, and the throughput ratio, from one run.
//!
//! `cargo bench --bench gateway [-- REQUESTS CONCURRENCY]`
//!
//! With `FAILOVER_BENCH_REDIS_URL` set (`tests/redis/with-redis.sh` sets
//! `FAILOVER_TEST_REDIS_URL`, which is used too), a second gateway keeps its
//! routing state and sessions in that Redis; the files and Redis gateways
//! are measured alternately, three rounds, and the median of each reported.

#[path = "support/loopback.rs"]
mod loopback;

use std::sync::Arc;
use std::time::Duration;

use failover::{Policy, PolicyEngine};

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
    let (latencies, elapsed) = loopback::closed_loop(&url, requests, concurrency).await;
    Run { latencies, elapsed }
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
    let redis_url = ["FAILOVER_BENCH_REDIS_URL", "FAILOVER_TEST_REDIS_URL"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|url| !url.is_empty()));
    runtime.block_on(async move {
        let policy = Arc::new(Policy::default_policy(&PolicyEngine::new().unwrap()).unwrap());
        let pair = loopback::start(policy.clone()).await;
        let upstream_url = pair.upstream_chat_url.clone();
        let mut gateways = vec![(
            "through failover serve (files)",
            pair.gateway_chat_url.clone(),
        )];
        let mut _redis_pair = None;
        if let Some(url) = &redis_url {
            let prefix = format!("bench-{}", std::process::id());
            let state = format!(
                r#"state: {{ backend: "redis", redis: {{ url: "{url}", prefix: "{prefix}" }} }},"#
            );
            let redis_pair = loopback::start_with_state(policy, &state).await;
            gateways.push((
                "through failover serve (redis)",
                redis_pair.gateway_chat_url.clone(),
            ));
            _redis_pair = Some(redis_pair);
        }

        // Warm every path (connections, the policy's instance pool).
        load(upstream_url.clone(), 200, concurrency).await;
        for (_, url) in &gateways {
            load(url.clone(), 200, concurrency).await;
        }

        let direct = load(upstream_url, requests, concurrency).await;
        // Alternate the gateways so that machine noise falls on all alike.
        let rounds = if gateways.len() > 1 { 3 } else { 1 };
        let mut runs: Vec<Vec<Run>> = gateways.iter().map(|_| Vec::new()).collect();
        for _ in 0..rounds {
            for (index, (_, url)) in gateways.iter().enumerate() {
                runs[index].push(load(url.clone(), requests, concurrency).await);
            }
        }
        let through: Vec<Run> = runs.into_iter().map(median_run).collect();
        report(requests, concurrency, &gateways, &direct, &through);
    });
}

/// Prints the table of `direct` and each of the `gateways` (its runs in
/// `through`, in order), the latency the first gateway adds and, with a
/// second, how it compares with the first.
fn report(
    requests: usize,
    concurrency: usize,
    gateways: &[(&str, String)],
    direct: &Run,
    through: &[Run],
) {
    let ms = loopback::ms;
    println!("{requests} requests, concurrency {concurrency}, loopback, one run");
    println!("| path | p50 | p99 | requests/s |");
    println!("|---|---:|---:|---:|");
    let mut rows = vec![("direct", direct)];
    rows.extend(gateways.iter().map(|(name, _)| *name).zip(through));
    for (name, run) in rows {
        println!(
            "| {name} | {:.2} ms | {:.2} ms | {:.0} |",
            ms(run.percentile(0.5)),
            ms(run.percentile(0.99)),
            run.throughput()
        );
    }
    let files = &through[0];
    println!(
        "added latency: p50 {:.2} ms, p99 {:.2} ms; throughput ratio (through / direct) {:.2}",
        ms(files.percentile(0.5)) - ms(direct.percentile(0.5)),
        ms(files.percentile(0.99)) - ms(direct.percentile(0.99)),
        files.throughput() / direct.throughput()
    );
    if let Some(redis) = through.get(1) {
        println!(
            "redis against files: throughput ratio {:.2}, p50 {:+.3} ms, p99 {:+.3} ms",
            redis.throughput() / files.throughput(),
            ms(redis.percentile(0.5)) - ms(files.percentile(0.5)),
            ms(redis.percentile(0.99)) - ms(files.percentile(0.99)),
        );
    }
}

/// The run of median throughput among `runs`.
fn median_run(mut runs: Vec<Run>) -> Run {
    runs.sort_by(|a, b| a.throughput().total_cmp(&b.throughput()));
    runs.swap_remove(runs.len() / 2)
}
