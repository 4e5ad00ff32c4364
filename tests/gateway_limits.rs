//! The limits `failover serve` keeps as a server: header-read and idle
//! timeouts, the connection cap, keys checked before bodies are read,
//! per-route body limits — and a bounded soak of the real binary: hundreds
//! of idle connections while `/healthz` answers, and keyless large bodies
//! that leave its memory flat.

use crate::harness;
use crate::support::binary;
use crate::upstream;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use failover::gateway::ClientKeys;
use harness::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A generous bound for "the server acted": every limit under test is
/// configured well below it.
const PATIENCE: Duration = Duration::from_secs(5);

const CLIENT_KEY: &str = "client-key-0123456789abcdef";

fn address(h: &Harness) -> String {
    h.base.trim_start_matches("http://").to_owned()
}

/// What arrives within `PATIENCE` until `enough` says so or the server
/// closes the connection; `None` when neither happened in time.
async fn read_until(socket: &mut TcpStream, enough: fn(&[u8]) -> bool) -> Option<String> {
    let mut received = Vec::new();
    let read = tokio::time::timeout(PATIENCE, async {
        let mut buf = [0u8; 4096];
        while !enough(&received) {
            match socket.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => received.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    read.ok()
        .map(|()| String::from_utf8_lossy(&received).into_owned())
}

/// A response's head.
async fn read_head(socket: &mut TcpStream) -> Option<String> {
    read_until(socket, |received| {
        received.windows(4).any(|w| w == b"\r\n\r\n")
    })
    .await
}

/// Everything until the server closes the connection.
async fn read_to_close(socket: &mut TcpStream) -> Option<String> {
    read_until(socket, |_| false).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_heads_and_idle_keep_alives_are_closed() {
    let h = start_setup(Setup {
        top: "gateway: { headerReadTimeoutSeconds: 0.3, idleTimeoutSeconds: 0.6 },",
        ..Setup::default()
    })
    .await;
    // A head that never completes (slowloris).
    let mut slow = TcpStream::connect(address(&h)).await.unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n")
        .await
        .unwrap();
    assert!(
        read_to_close(&mut slow).await.is_some(),
        "a slow head is cut"
    );
    // A connection that says nothing at all.
    let mut silent = TcpStream::connect(address(&h)).await.unwrap();
    assert!(read_to_close(&mut silent).await.is_some());
    // A kept-alive connection: answered, then closed once idle.
    let mut kept = TcpStream::connect(address(&h)).await.unwrap();
    kept.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let started = Instant::now();
    let answer = read_to_close(&mut kept).await.expect("closed when idle");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        started.elapsed() >= Duration::from_millis(500),
        "kept alive for the idle timeout, not closed at once"
    );
    h.stop().await;
}

/// A server task dropped before its shutdown (aborted) still closes the
/// idle connections it kept alive, instead of leaving them served until
/// their idle timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aborted_server_closes_its_idle_connections() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let router = axum::Router::new().route("/", axum::routing::get(|| async { "up" }));
    let limits = failover::config::gateway::ServerLimits {
        idle_timeout: Duration::from_secs(3600),
        ..Default::default()
    };
    let server = tokio::spawn(failover::gateway::serve_router(
        listener,
        router,
        limits,
        std::future::pending(),
    ));
    let mut kept = TcpStream::connect(address).await.unwrap();
    kept.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let head = read_head(&mut kept).await.expect("answered");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    server.abort();
    assert!(
        read_to_close(&mut kept).await.is_some(),
        "the kept-alive connection was not closed when its server was dropped"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_connection_cap_idle_connections_make_room() {
    let h = start_setup(Setup {
        top: "gateway: { maxConnections: 8 },",
        ..Setup::default()
    })
    .await;
    let mut idle = Vec::new();
    for _ in 0..20 {
        idle.push(TcpStream::connect(address(&h)).await.unwrap());
    }
    // Each check on a new connection, as a prober makes them: a kept-alive
    // one would itself be idle between checks, and fair game for eviction.
    let prober = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    for _ in 0..3 {
        let check = prober.get(format!("{}/healthz", h.base)).send();
        let health = tokio::time::timeout(PATIENCE, check)
            .await
            .expect("a health check gets in at the cap")
            .expect("the health check is answered");
        assert_eq!(health.status(), 200);
    }
    // A busy connection is never the one closed: a request in flight on
    // one of the few slots completes.
    h.up.then(
        "gpt-x",
        upstream::Behaviour::Slow(Duration::from_millis(300)),
    );
    let slow = h.spawn_chat("openai/gpt-x");
    tokio::time::sleep(Duration::from_millis(50)).await;
    for _ in 0..10 {
        idle.push(TcpStream::connect(address(&h)).await.unwrap());
    }
    assert_eq!(slow.await.unwrap().status, 200);
    h.stop().await;
}

/// A request head declaring `length` bytes of body, none of which is sent.
fn head_only(path: &str, length: usize, auth: Option<&str>) -> String {
    let auth = auth.map_or(String::new(), |a| format!("authorization: Bearer {a}\r\n"));
    format!(
        "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n{auth}content-length: {length}\r\n\r\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_are_checked_before_a_body_is_read_and_bodies_are_bounded_per_route() {
    let mut keys = ClientKeys::default();
    keys.add(CLIENT_KEY);
    let h = start_setup(Setup {
        top: "gateway: { maxRequestBytes: 4096 },",
        keys,
        ..Setup::default()
    })
    .await;
    // Without a key: refused at once, though the 16 MiB body never comes.
    let mut keyless = TcpStream::connect(address(&h)).await.unwrap();
    keyless
        .write_all(head_only("/v1/chat/completions", 16 << 20, None).as_bytes())
        .await
        .unwrap();
    let answer = read_head(&mut keyless)
        .await
        .expect("answered without the body");
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    // A client that waits for `100 Continue` gets the refusal instead.
    let mut waiting = TcpStream::connect(address(&h)).await.unwrap();
    let head = head_only("/v1/chat/completions", 16 << 20, None)
        .replace("\r\n\r\n", "\r\nexpect: 100-continue\r\n\r\n");
    waiting.write_all(head.as_bytes()).await.unwrap();
    let answer = read_head(&mut waiting).await.expect("answered at once");
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    // With a key, a declared length past the limit: 413, unread.
    let mut large = TcpStream::connect(address(&h)).await.unwrap();
    large
        .write_all(head_only("/v1/chat/completions", 8192, Some(CLIENT_KEY)).as_bytes())
        .await
        .unwrap();
    let answer = read_head(&mut large).await.expect("answered");
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    // A route that takes no real body takes a small one at most.
    let reset = h
        .client
        .post(format!("{}/v1/sessions/s1/reset", h.base))
        .bearer_auth(CLIENT_KEY)
        .body(vec![b'x'; 100 << 10])
        .send()
        .await
        .unwrap();
    assert_eq!(reset.status(), 413);
    // A body within the limit, with the key, is served.
    let ok = h
        .client
        .post(format!("{}/v1/chat/completions", h.base))
        .bearer_auth(CLIENT_KEY)
        .body(r#"{"model":"auto","messages":[{"role":"user","content":"hi"}]}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    h.stop().await;
}

// ---------------------------------------------------------------- the soak, on the binary

/// The resident memory of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

/// Starts `failover serve` with client keys; returns it and its address.
async fn serve_binary(dir: &Path) -> (std::process::Child, String) {
    let keys = dir.join("keys");
    std::fs::write(&keys, format!("{CLIENT_KEY}\n")).unwrap();
    let log = dir.join("serve.log");
    let mut child = binary::failover()
        .arg("--state-dir")
        .arg(dir.join("state"))
        .args(["serve", "--listen", "127.0.0.1:0", "--client-keys-file"])
        .arg(&keys)
        .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
        .spawn()
        .unwrap();
    match binary::serving_address_in(&log).await {
        Some(address) => (child, address),
        None => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("serve never listened");
        }
    }
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soak_idle_connections_and_keyless_bodies() {
    const IDLE: usize = 300;
    const BODIES: usize = 40;
    const BODY_BYTES: usize = 16 << 20;
    let dir = tempfile::tempdir().unwrap();
    let (mut serve, address) = serve_binary(dir.path()).await;
    let client = reqwest::Client::new();
    let healthz = format!("http://{address}/healthz");
    assert_eq!(client.get(&healthz).send().await.unwrap().status(), 200);

    // Hundreds of idle sockets: /healthz still answers at once.
    let mut idle = Vec::with_capacity(IDLE);
    for _ in 0..IDLE {
        idle.push(TcpStream::connect(&address).await.unwrap());
    }
    let mut latencies = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let fresh = reqwest::Client::new();
        let status = tokio::time::timeout(PATIENCE, fresh.get(&healthz).send())
            .await
            .expect("healthz answers with idle sockets open")
            .unwrap()
            .status();
        assert_eq!(status, 200);
        latencies.push(started.elapsed());
    }
    latencies.sort();
    assert!(
        latencies[2] < Duration::from_millis(100),
        "healthz with {IDLE} idle connections: {latencies:?}"
    );
    drop(idle);

    // Keyless bodies of 16 MiB are refused before they are read; the client
    // still gets its 401 (the refused body is read and thrown away, not
    // kept): memory stays flat.
    let before = rss_kib(serve.id());
    let body = vec![b'x'; 1 << 20];
    for _ in 0..BODIES {
        let mut socket = TcpStream::connect(&address).await.unwrap();
        socket
            .write_all(head_only("/v1/chat/completions", BODY_BYTES, None).as_bytes())
            .await
            .unwrap();
        for _ in 0..(BODY_BYTES / body.len()) {
            socket
                .write_all(&body)
                .await
                .expect("the refused body is taken, not cut off");
        }
        let answer = read_head(&mut socket).await.unwrap_or_default();
        assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    }
    let after = rss_kib(serve.id());
    assert!(
        after.saturating_sub(before) < 32 * 1024,
        "{BODIES} keyless 16 MiB bodies grew the gateway from {before} KiB to {after} KiB"
    );
    let _ = serve.kill();
    let _ = serve.wait();
}
