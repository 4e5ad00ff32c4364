//! The gateway against the floor of its own design, each in its own
//! process: an upstream that answers every chat completion at once, a
//! pass-through proxy built from the same stack as `failover serve` (an
//! axum server and the same reqwest client, no policy, no state), and
//! `failover serve` itself — with this process as the closed-loop load
//! generator. For each concurrency, the same load goes straight to the
//! upstream, through the floor proxy and through the gateway; the table
//! gives p50/p99 latency, requests/s, and the CPU time the proxy process
//! spent per request (its process CPU clock: all its threads, user and
//! system, to the nanosecond).
//!
//! The machine is shared and its speed drifts from one second to the
//! next, so the paths are not measured one after the other: each row's
//! requests are split into [`ROUNDS`] rounds, and every round runs each
//! path in turn (in a rotating order). A drift then falls on every path
//! alike. The table adds the rounds up; the ratio lines also give the
//! spread of the per-round ratios and their median.
//!
//! A second `failover serve` measures the one-fallback path: its primary's
//! provider answers every call 429, so after the first request the primary
//! sits in cooldown and every request is served by the fallback — one
//! upstream call, as through the floor, with the policy's passing over of
//! the cooled primary on top.
//!
//! `cargo bench --bench processes [-- REQUESTS]` (default 10,000 per row);
//! `FAILOVER_BENCH_GATEWAY_BIN=path/to/failover` measures another build's
//! gateway. The binary re-runs itself as the upstream (`--role upstream`)
//! and the floor (`--role floor URL`).

#[path = "support/loopback.rs"]
mod loopback;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use axum::routing::post;
use loopback::REPLY;

/// Concurrencies measured: one client, a busy service, a crowd.
const CONCURRENCY: [usize; 3] = [1, 16, 64];

/// Rounds a row's requests are split into (see the module docs): enough
/// for a median, few enough that a round at c=64 still lasts ~0.1 s.
const ROUNDS: usize = 5;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().position(|a| a == "--role") {
        Some(at) => role(&args[at + 1..]),
        None => measure(args.iter().find_map(|a| a.parse().ok()).unwrap_or(10_000)),
    }
}

/// A child role: serve on a free loopback port and print it.
fn role(args: &[String]) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let app = match args.first().map(String::as_str) {
            Some("upstream") => axum::Router::new()
                .route(
                    "/v1/chat/completions",
                    post(|| async { ([("content-type", "application/json")], REPLY) }),
                )
                // The one-fallback gateway's primary: always rate limited.
                .route(
                    "/down/v1/chat/completions",
                    post(|| async {
                        (
                            axum::http::StatusCode::TOO_MANY_REQUESTS,
                            [("content-type", "application/json")],
                            RATE_LIMITED,
                        )
                    }),
                ),
            Some("floor") => floor(args[1].clone()),
            other => panic!("unknown role {other:?}"),
        };
        println!("listening on {}", listener.local_addr().unwrap());
        axum::serve(listener, app).await.unwrap();
    });
}

/// The floor: every request's body forwarded to the upstream with the
/// gateway's HTTP client settings, the reply's body returned.
fn floor(upstream: String) -> axum::Router {
    let client = reqwest::Client::builder()
        .user_agent("failover-floor")
        .connect_timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let url = reqwest::Url::parse(&format!("{upstream}/v1/chat/completions")).unwrap();
    axum::Router::new().route(
        "/v1/chat/completions",
        post(move |body: axum::body::Bytes| {
            let (client, url) = (client.clone(), url.clone());
            async move {
                let reply = client
                    .post(url)
                    .bearer_auth("k")
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .await
                    .unwrap();
                let bytes = reply.bytes().await.unwrap();
                ([("content-type", "application/json")], bytes)
            }
        }),
    )
}

/// What the one-fallback gateway's primary answers.
const RATE_LIMITED: &str = r#"{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}"#;

/// A child serving on the address it prints.
struct Server {
    child: Child,
    address: String,
}

impl Server {
    fn start(mut command: Command, marker: &str) -> Server {
        // `failover serve` says where it listens on stderr, the roles on
        // stdout; the other stream goes to this process's stderr, so that
        // a child's panic shows and can never fill an unread pipe.
        let gateway = marker == "serving on http://";
        if gateway {
            command.stdout(Stdio::null()).stderr(Stdio::piped());
        } else {
            command.stdout(Stdio::piped()).stderr(Stdio::inherit());
        }
        let mut child = command.spawn().expect("spawn");
        let out: Box<dyn std::io::Read + Send> = if gateway {
            Box::new(child.stderr.take().unwrap())
        } else {
            Box::new(child.stdout.take().unwrap())
        };
        let mut lines = BufReader::new(out).lines();
        let address = lines
            .find_map(|line| {
                let line = line.ok()?;
                let rest = line.split(marker).nth(1)?;
                Some(rest.split_whitespace().next()?.to_owned())
            })
            .expect("the child said where it listens");
        // Keep draining what it writes, so it never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Server { child, address }
    }

    /// CPU time of the whole process so far: user and system, all its
    /// threads, those that have ended too (the kernel's process CPU clock,
    /// in nanoseconds; `/proc/<pid>/stat` counts 10 ms ticks, too coarse
    /// for a round).
    fn cpu(&self) -> Duration {
        let pid = libc::pid_t::try_from(self.child.id()).expect("a pid");
        let mut clock: libc::clockid_t = 0;
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: both pointers are to live locals of the right types.
        let read = unsafe {
            libc::clock_getcpuclockid(pid, &mut clock) == 0
                && libc::clock_gettime(clock, &mut now) == 0
        };
        assert!(read, "cannot read the CPU clock of process {pid}");
        Duration::new(
            u64::try_from(now.tv_sec).expect("a time"),
            u32::try_from(now.tv_nsec).expect("nanoseconds"),
        )
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Default)]
struct Run {
    latencies: Vec<Duration>,
    elapsed: Duration,
    cpu: Option<Duration>,
}

fn measure(requests: usize) {
    let me = std::env::current_exe().unwrap();
    let role = |args: &[&str]| {
        let mut command = Command::new(&me);
        command.arg("--role").args(args);
        command
    };
    let upstream = Server::start(role(&["upstream"]), "listening on ");
    let upstream_base = format!("http://{}", upstream.address);
    let floor = Server::start(role(&["floor", &upstream_base]), "listening on ");
    let dir = tempfile::tempdir().unwrap();
    let gateway = start_gateway(&dir.path().join("success"), &upstream_base, Chain::OneModel);
    let fallback = start_gateway(
        &dir.path().join("fallback"),
        &upstream_base,
        Chain::Fallback,
    );

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    println!("{requests} requests per row, loopback; upstream, floor proxy, gateway and load generator in four processes");
    println!("| concurrency | path | p50 | p99 | requests/s | proxy CPU µs/request |");
    println!("|---:|---|---:|---:|---:|---:|");
    runtime.block_on(async {
        for concurrency in CONCURRENCY {
            let paths = [
                ("direct", &upstream),
                ("floor proxy", &floor),
                ("failover serve", &gateway),
                ("failover serve, one fallback", &fallback),
            ];
            let urls = paths.map(|(_, server)| format!("http://{}/v1/chat/completions", server.address));
            for url in &urls {
                load(url, 500, concurrency, None).await;
            }
            let mut rows: Vec<Run> = paths.iter().map(|_| Run::default()).collect();
            // Each round's CPU µs a request, per path.
            let mut rounds = [[0.0; 4]; ROUNDS];
            for (round, per_path) in rounds.iter_mut().enumerate() {
                for turn in 0..paths.len() {
                    let path = (turn + round) % paths.len();
                    let measured = (path > 0).then_some(paths[path].1);
                    let run = load(&urls[path], (requests / ROUNDS).max(1), concurrency, measured).await;
                    per_path[path] = run.cpu_per_request();
                    rows[path].add(run);
                }
            }
            for ((name, _), run) in paths.iter().zip(&rows) {
                print_row(concurrency, name, run);
            }
            for (i, label) in [(2, "gateway / floor"), (3, "one fallback / floor")] {
                let mut ratios: Vec<f64> = rounds.iter().map(|r| r[i] / r[1]).collect();
                ratios.sort_by(f64::total_cmp);
                println!(
                    "| {concurrency} | {label} | | | {:.2}× | {:.2}× (rounds {:.2}–{:.2}×, median {:.2}×) |",
                    rows[i].throughput() / rows[1].throughput(),
                    rows[i].cpu_per_request() / rows[1].cpu_per_request(),
                    ratios[0],
                    ratios[ratios.len() - 1],
                    ratios[ratios.len() / 2],
                );
            }
        }
    });
}

fn print_row(concurrency: usize, name: &str, run: &Run) {
    let cpu = run.cpu.map_or("—".to_owned(), |_| {
        format!("{:.0}", run.cpu_per_request())
    });
    println!(
        "| {concurrency} | {name} | {:.3} ms | {:.3} ms | {:.0} | {cpu} |",
        loopback::ms(run.percentile(0.5)),
        loopback::ms(run.percentile(0.99)),
        run.throughput()
    );
}

impl Run {
    fn percentile(&self, p: f64) -> Duration {
        loopback::percentile(&mut self.latencies.clone(), p)
    }

    fn throughput(&self) -> f64 {
        self.latencies.len() as f64 / self.elapsed.as_secs_f64()
    }

    /// The measured process's CPU µs a request (NaN when not measured).
    fn cpu_per_request(&self) -> f64 {
        self.cpu.map_or(f64::NAN, |cpu| {
            cpu.as_secs_f64() * 1e6 / self.latencies.len() as f64
        })
    }

    /// `other` added to this run, as if one.
    fn add(&mut self, other: Run) {
        self.latencies.extend(other.latencies);
        self.elapsed += other.elapsed;
        self.cpu = match (self.cpu, other.cpu) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
    }
}

/// The chain a gateway serves.
#[derive(Clone, Copy, PartialEq)]
enum Chain {
    /// `openai/gpt-x` alone.
    OneModel,
    /// `down/gpt-x` (always rate limited), then `openai/gpt-x`.
    Fallback,
}

/// `failover serve` on its own state directory, one API key per provider,
/// `chain` to the upstream.
fn start_gateway(dir: &std::path::Path, upstream: &str, chain: Chain) -> Server {
    let state = dir.join("state");
    let store = failover::state::AuthStore::open(
        failover::state::StateDir::at(&state).agent("main").unwrap(),
    )
    .unwrap();
    store
        .update_profiles(|f| {
            for provider in ["openai", "down"] {
                f.put_static(
                    &format!("{provider}:a"),
                    provider,
                    failover::auth::CredentialKind::ApiKey,
                    "k",
                )?;
            }
            Ok(())
        })
        .unwrap();
    let model = match chain {
        Chain::OneModel => r#"primary: "openai/gpt-x""#,
        Chain::Fallback => r#"primary: "down/gpt-x", fallbacks: ["openai/gpt-x"]"#,
    };
    let config = dir.join("failover.json5");
    std::fs::write(
        &config,
        format!(
            r#"{{ agents: {{ defaults: {{ model: {{ {model} }} }} }},
                 models: {{ providers: {{
                   openai: {{ baseUrl: "{upstream}/v1", api: "openai-chat" }},
                   down: {{ baseUrl: "{upstream}/down/v1", api: "openai-chat" }} }} }} }}"#
        ),
    )
    .unwrap();
    // Another build's binary can stand in, to compare two versions.
    let binary = std::env::var_os("FAILOVER_BENCH_GATEWAY_BIN")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_failover").into());
    let mut command = Command::new(binary);
    command
        .arg("--state-dir")
        .arg(&state)
        .arg("--config")
        .arg(&config)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("FAILOVER_LOG", "warn");
    Server::start(command, "serving on http://")
}

/// `requests` requests from `concurrency` closed-loop clients; with
/// `server`, the CPU time it spent meanwhile.
async fn load(url: &str, requests: usize, concurrency: usize, server: Option<&Server>) -> Run {
    let cpu_before = server.map(Server::cpu);
    let (latencies, elapsed) = loopback::closed_loop(url, requests, concurrency).await;
    let cpu = server.zip(cpu_before).map(|(s, before)| s.cpu() - before);
    Run {
        latencies,
        elapsed,
        cpu,
    }
}
