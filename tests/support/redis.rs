//! Redis servers for the shared-state tests: the one `tests/redis/with-redis.sh`
//! started for the run (`FAILOVER_TEST_REDIS_URL`), or private ones a test
//! can kill and restart.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A server for one test: the run's shared one, or (without one) a
/// private one stopped when this is dropped.
pub struct TestRedis {
    pub url: String,
    _own: Option<RedisServer>,
}

/// The run's shared server (`FAILOVER_TEST_REDIS_URL`); without one, a
/// private server for the calling test.
pub fn shared() -> TestRedis {
    match std::env::var("FAILOVER_TEST_REDIS_URL") {
        Ok(url) if !url.is_empty() => TestRedis { url, _own: None },
        _ => {
            let own = RedisServer::start();
            TestRedis {
                url: own.url.clone(),
                _own: Some(own),
            }
        }
    }
}

/// A key prefix no other test uses, so tests can share one server.
pub fn unique_prefix(test: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("t{}-{test}-{nanos}", std::process::id())
}

/// A connection for reading what the replicas wrote.
pub fn client(url: &str) -> redis::Connection {
    redis::Client::open(url)
        .unwrap()
        .get_connection_with_timeout(Duration::from_secs(5))
        .unwrap()
}

/// A value, or `None`.
pub fn get(url: &str, key: &str) -> Option<String> {
    redis::cmd("GET").arg(key).query(&mut client(url)).unwrap()
}

/// A redis-server of this test's own, on a loopback port, without
/// persistence: killed, it comes back empty.
pub struct RedisServer {
    pub url: String,
    port: u16,
    dir: tempfile::TempDir,
    child: Option<Child>,
}

/// The server binary: `FAILOVER_REDIS_SERVER`, else `redis-server` on the
/// path.
fn binary() -> PathBuf {
    std::env::var_os("FAILOVER_REDIS_SERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("redis-server"))
}

impl RedisServer {
    /// Starts one on a free port.
    pub fn start() -> RedisServer {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut server = RedisServer {
            url: format!("redis://127.0.0.1:{port}"),
            port,
            dir: tempfile::tempdir().unwrap(),
            child: None,
        };
        server.spawn();
        server
    }

    fn spawn(&mut self) {
        let child = Command::new(binary())
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start {}: {e}; run the tests through tests/redis/with-redis.sh \
                     (the README's test command), which installs it",
                    binary().display()
                )
            });
        self.child = Some(child);
        for _ in 0..200 {
            let answered = redis::Client::open(self.url.as_str())
                .and_then(|c| c.get_connection_with_timeout(Duration::from_millis(100)))
                .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c))
                .is_ok();
            if answered {
                // Still ours: the port, free a moment ago, was not taken
                // by another server that answered instead.
                let running = self
                    .child
                    .as_mut()
                    .is_some_and(|child| matches!(child.try_wait(), Ok(None)));
                assert!(running, "redis-server could not bind port {}", self.port);
                return;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("redis-server on port {} did not answer", self.port);
    }

    /// Kills it at once (SIGKILL): nothing is saved.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port, empty.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}
