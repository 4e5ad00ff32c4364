//! Hot-swap and sandbox costs, printed from one run:
//!
//! 1. swap latency — module bytes to active: compile, import and contract
//!    checks, the conformance corpus, the swap;
//! 2. the pause swaps cause — request latency through the gateway with no
//!    swaps, with swaps of already-checked modules every 20 ms, and with
//!    full swaps (gate included) every 500 ms;
//! 3. the sandbox's per-call cost — fuel metering and the epoch deadline on
//!    versus off, on a classification and a runner decision.
//!
//! `cargo bench --bench policy_swap`
//!
//! With `FAILOVER_BENCH_MODULES=a.wasm,b.wasm,...` it does only one thing:
//! compiles and checks each of those policy components in turn, round after
//! round, and prints each one's median and fastest load next to the first
//! one's. Two builds of a module loaded alternately in one process see the
//! same machine, which separate runs of the whole benchmark do not.

#[path = "../tests/support/guests.rs"]
mod guests;
#[path = "support/loopback.rs"]
mod loopback;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use failover::auth::RecordedReason;
use failover::policy::{gate, DEFAULT_POLICY};
use failover::runner::{FailedAttempt, RotationConfig};
use failover::{Decider, Limits, Policy, PolicyEngine, ProviderError};
use loopback::{ms, percentile, REQUEST};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn swap_latency(engine: &PolicyEngine, example: &[u8]) {
    println!("## swap latency (module bytes to active), median of 5\n");
    println!("| module | size | compile + contract | conformance corpus | whole gate + swap |");
    println!("|---|---:|---:|---:|---:|");
    let slot = std::sync::RwLock::new(Arc::new(Policy::default_policy(engine).unwrap()));
    for (name, bytes) in [
        ("default", DEFAULT_POLICY),
        ("context-advances (no LTO)", example),
    ] {
        let (mut load, mut whole) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            let started = Instant::now();
            Policy::load(engine, bytes, Limits::default()).unwrap();
            load.push(started.elapsed());
            let started = Instant::now();
            let (policy, _) = gate::admit(engine, bytes, Limits::default()).unwrap();
            *slot.write().unwrap() = Arc::new(policy);
            whole.push(started.elapsed());
        }
        let (load, whole) = (median(load), median(whole));
        println!(
            "| {name} | {} KiB | {:.1} ms | {:.1} ms | {:.1} ms |",
            bytes.len() / 1024,
            ms(load),
            ms(whole.saturating_sub(load)),
            ms(whole)
        );
    }
    println!();
}

fn sandbox_cost() {
    println!("## sandbox cost per call (fuel + epoch on vs off)\n");
    let metered = Policy::default_policy(&PolicyEngine::new().unwrap()).unwrap();
    let unmetered = Policy::default_policy(&PolicyEngine::unmetered().unwrap()).unwrap();
    let error = ProviderError::message("Rate limit reached for gpt-4o")
        .with_status(429)
        .with_provider("openai")
        .with_header("retry-after", "20");
    let attempt = FailedAttempt {
        reason: RecordedReason::RateLimit,
        retry_after_ms: None,
        aborted: false,
        hung: false,
        live_switch_to: None,
        user_pinned_profile: false,
        rotations: 0,
        profiles_left: 1,
        chain: vec!["a/x".into(), "b/y".into(), "c/z".into()],
        position: 0,
        overflow_to: None,
    };
    let rotation = RotationConfig {
        rate_limited_profile_rotations: 1,
        overloaded_profile_rotations: 1,
        overloaded_backoff_ms: 0,
        wait_cap_ms: 60_000,
    };
    const CALLS: u32 = 200_000;
    println!("| call | metered | unmetered | overhead |");
    println!("|---|---:|---:|---:|");
    type Call<'a> = Box<dyn Fn(&Policy) + 'a>;
    let calls: [(&str, Call); 2] = [
        (
            "classify (typical 429)",
            Box::new(|p: &Policy| {
                p.classify(&error, 0).unwrap();
            }),
        ),
        (
            "next-step",
            Box::new(|p: &Policy| {
                p.next_step(&attempt, &rotation).unwrap();
            }),
        ),
    ];
    for (name, call) in calls {
        let mut per_call = [0.0f64; 2];
        for _round in 0..2 {
            for (slot, policy) in [&metered, &unmetered].into_iter().enumerate() {
                for _ in 0..10_000 {
                    call(policy);
                }
                let started = Instant::now();
                for _ in 0..CALLS {
                    call(policy);
                }
                per_call[slot] = started.elapsed().as_secs_f64() * 1e9 / f64::from(CALLS);
            }
        }
        println!(
            "| {name} | {:.0} ns | {:.0} ns | {:+.0}% |",
            per_call[0],
            per_call[1],
            (per_call[0] / per_call[1] - 1.0) * 100.0
        );
    }
    println!();
}

async fn load(url: &str, concurrency: usize, duration: Duration) -> Vec<Duration> {
    let client = reqwest::Client::new();
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (client, url, stop, count) =
            (client.clone(), url.to_owned(), stop.clone(), count.clone());
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let started = Instant::now();
                let response = client
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(REQUEST)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(response.status(), 200);
                response.bytes().await.unwrap();
                latencies.push(started.elapsed());
                count.fetch_add(1, Ordering::Relaxed);
            }
            latencies
        }));
    }
    tokio::time::sleep(duration).await;
    stop.store(true, Ordering::Relaxed);
    let mut all = Vec::new();
    for worker in workers {
        all.extend(worker.await.unwrap());
    }
    all
}

async fn swap_pause(engine: &PolicyEngine, example: Vec<u8>) {
    let default: Arc<dyn Decider> = Arc::new(Policy::default_policy(engine).unwrap());
    let pair = loopback::start(default.clone()).await;
    let (gateway, url) = (pair.gateway.clone(), pair.gateway_chat_url.clone());
    let checked = Arc::new(gate::admit(engine, &example, Limits::default()).unwrap().0);
    load(&url, 8, Duration::from_millis(500)).await; // warm up

    const RUN: Duration = Duration::from_secs(3);
    println!(
        "## the pause swaps cause (gateway, concurrency 8, {} s each)\n",
        RUN.as_secs()
    );
    println!("| while | requests | p50 | p99 | max | swaps |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (name, every, full_gate) in [
        ("no swaps", None, false),
        (
            "a checked module swapped every 20 ms",
            Some(Duration::from_millis(20)),
            false,
        ),
        (
            "a full swap (gate included) every 500 ms",
            Some(Duration::from_millis(500)),
            true,
        ),
    ] {
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicUsize::new(0));
        let swapper = every.map(|every| {
            let (gateway, stop, swaps) = (gateway.clone(), stop.clone(), swaps.clone());
            let (default, checked, example, engine) = (
                default.clone(),
                checked.clone(),
                example.clone(),
                engine.clone(),
            );
            tokio::spawn(async move {
                let mut flip = false;
                while !stop.load(Ordering::Relaxed) {
                    tokio::time::sleep(every).await;
                    flip = !flip;
                    let next = if !flip {
                        default.clone()
                    } else if full_gate {
                        let (engine, bytes) = (engine.clone(), example.clone());
                        let policy = tokio::task::spawn_blocking(move || {
                            gate::admit(&engine, &bytes, Limits::default()).unwrap().0
                        })
                        .await
                        .unwrap();
                        Arc::new(policy)
                    } else {
                        checked.clone()
                    };
                    gateway.swap_policy(next);
                    swaps.fetch_add(1, Ordering::Relaxed);
                }
            })
        });
        let mut latencies = load(&url, 8, RUN).await;
        stop.store(true, Ordering::Relaxed);
        if let Some(swapper) = swapper {
            swapper.await.unwrap();
        }
        let n = latencies.len();
        let p50 = percentile(&mut latencies, 0.5);
        let p99 = percentile(&mut latencies, 0.99);
        let max = *latencies.last().unwrap();
        println!(
            "| {name} | {n} | {:.2} ms | {:.2} ms | {:.1} ms | {} |",
            ms(p50),
            ms(p99),
            ms(max),
            swaps.load(Ordering::Relaxed)
        );
    }
    println!();
}

/// Comma-separated paths of policy components to compare by load time.
const MODULES_VAR: &str = "FAILOVER_BENCH_MODULES";

/// Rounds of the module comparison: every module is loaded once a round.
/// Twenty-five loads of a ~200 ms compile keep a comparison of two modules
/// near twenty seconds, enough for the median to settle on this machine.
const COMPARE_ROUNDS: usize = 25;

/// Loads each module of `paths` once a round, in a rotating order so none
/// always follows the same one, and prints medians, fastest loads and the
/// ratio of each median to the first module's.
fn compare_modules(engine: &PolicyEngine, paths: &str) {
    let modules: Vec<(String, Vec<u8>)> = paths
        .split(',')
        .map(|path| {
            let bytes = std::fs::read(path)
                .unwrap_or_else(|e| panic!("{MODULES_VAR}: cannot read {path}: {e}"));
            (path.to_owned(), bytes)
        })
        .collect();
    let mut loads = vec![Vec::new(); modules.len()];
    for round in 0..COMPARE_ROUNDS {
        for turn in 0..modules.len() {
            let which = (round + turn) % modules.len();
            let started = Instant::now();
            Policy::load(engine, &modules[which].1, Limits::default())
                .unwrap_or_else(|e| panic!("{}: {e}", modules[which].0));
            loads[which].push(started.elapsed());
        }
    }
    println!("## compile + contract, {COMPARE_ROUNDS} rounds\n");
    println!("| module | size | median | fastest | median / first |");
    println!("|---|---:|---:|---:|---:|");
    let first = median(loads[0].clone());
    for ((path, bytes), times) in modules.iter().zip(loads) {
        let fastest = *times.iter().min().expect("one load a round");
        let middle = median(times);
        println!(
            "| {path} | {} KiB | {:.1} ms | {:.1} ms | {:.3} |",
            bytes.len() / 1024,
            ms(middle),
            ms(fastest),
            middle.as_secs_f64() / first.as_secs_f64()
        );
    }
}

fn main() {
    let engine = PolicyEngine::new().unwrap();
    if let Some(paths) = std::env::var_os(MODULES_VAR) {
        compare_modules(&engine, &paths.to_string_lossy());
        return;
    }
    let example = guests::component("examples/policy-context-advances", &[]);
    swap_latency(&engine, &example);
    sandbox_cost();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(swap_pause(&engine, example));
}
