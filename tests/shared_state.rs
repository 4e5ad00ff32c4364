//! Gateway replicas sharing routing state and sessions through Redis
//! (`state.backend: "redis"`): real `failover serve` processes, each with
//! its own state directory and keys, one Redis, one fault-injecting
//! upstream.

use crate::support::binary;
use crate::support::redis::{self as test_redis, RedisServer};
use crate::upstream::Upstream;

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use failover::auth::CredentialKind;
use failover::state::{AuthStore, StateDir};
use serde_json::Value;

/// Keys every replica holds, by profile id (the same ids everywhere: the
/// state in Redis is matched by id).
const KEYS: [(&str, &str); 2] = [("openai:a", "oai-a"), ("openai:b", "oai-b")];

/// One `failover serve` on its own state directory.
struct Replica {
    child: Child,
    address: String,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The config every replica of a test shares: openai/gpt-x then
/// anthropic/claude-x, state in Redis under `prefix`. A timeout of a second:
/// these tests are about sharing, not about a slow Redis on a loaded machine.
fn config(upstream: &Upstream, redis_url: &str, prefix: &str, order: &str) -> String {
    format!(
        r#"{{ agents: {{ defaults: {{ model: {{ primary: "openai/gpt-x", fallbacks: ["anthropic/claude-x"] }} }} }},
             auth: {{ {order} }},
             models: {{ providers: {{
               openai: {{ baseUrl: "{base}/v1", api: "openai-chat" }},
               anthropic: {{ baseUrl: "{base}/anthropic", api: "anthropic-messages" }} }} }},
             state: {{ backend: "redis", redis: {{ url: "{redis_url}", prefix: "{prefix}", timeoutMs: 1000 }} }} }}"#,
        base = upstream.base
    )
}

impl Replica {
    async fn start(dir: &Path, name: &str, config: &str) -> Replica {
        let root = dir.join(name);
        let state = root.join("state");
        let store = AuthStore::open(StateDir::at(&state).agent("main").unwrap()).unwrap();
        store
            .update_profiles(|file| {
                for (id, key) in KEYS {
                    file.put_static(id, "openai", CredentialKind::ApiKey, key)?;
                }
                file.put_static("anthropic:a", "anthropic", CredentialKind::ApiKey, "ant-a")
            })
            .unwrap();
        let config_path = root.join("failover.json5");
        std::fs::write(&config_path, config).unwrap();
        let log = root.join("serve.log");
        let child = binary::failover()
            .arg("--state-dir")
            .arg(&state)
            .arg("--config")
            .arg(&config_path)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let address = binary::serving_address_in(&log)
            .await
            .unwrap_or_else(|| panic!("{name} did not start: {}", read(&log)));
        Replica { child, address }
    }

    /// A chat request, with a session when given: status, serving profile.
    async fn chat(&self, client: &reqwest::Client, session: Option<&str>) -> (u16, String) {
        chat(client, &self.address, session).await
    }

    async fn status(&self) -> Value {
        let text = reqwest::get(format!("http://{}/status", self.address))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        serde_json::from_str(&text).unwrap()
    }
}

/// A chat request to `address`: status and serving profile.
async fn chat(client: &reqwest::Client, address: &str, session: Option<&str>) -> (u16, String) {
    let mut request = client
        .post(format!("http://{address}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(r#"{"model":"auto","messages":[{"role":"user","content":"hi"}]}"#);
    if let Some(session) = session {
        request = request.header("x-session-id", session);
    }
    let response = request.send().await.unwrap();
    let profile = response
        .headers()
        .get("x-failover-profile")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (response.status().as_u16(), profile)
}

/// Replicas `a` and `b` on `config`, in a directory that lives as long as
/// the first value.
async fn two_replicas(config: &str) -> (tempfile::TempDir, Replica, Replica) {
    let dir = tempfile::tempdir().unwrap();
    let a = Replica::start(dir.path(), "a", config).await;
    let b = Replica::start(dir.path(), "b", config).await;
    (dir, a, b)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The routing state Redis holds for a profile.
fn usage_in_redis(url: &str, prefix: &str, profile: &str) -> Option<Value> {
    test_redis::get(url, &format!("{prefix}:main:usage:{profile}"))
        .map(|raw| serde_json::from_str(&raw).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limit_one_replica_met_is_skipped_by_the_other_on_its_next_request() {
    let upstream = Upstream::start().await;
    upstream.fail_key("oai-a", 429, 1);
    let redis = test_redis::shared();
    let (url, prefix) = (redis.url.clone(), test_redis::unique_prefix("skip"));
    let config = config(
        &upstream,
        &url,
        &prefix,
        r#"order: { openai: ["openai:a", "openai:b"] }"#,
    );
    let (_dir, a, b) = two_replicas(&config).await;
    let client = reqwest::Client::new();

    // A value this build cannot read (a newer build's, a hand edit) is
    // treated as absent, never a failed request, and the next change
    // replaces it.
    let _: () = redis::cmd("SET")
        .arg(format!("{prefix}:main:usage:openai:b"))
        .arg(r#"{"errorCount": "many", "#)
        .query(&mut test_redis::client(&url))
        .unwrap();

    assert_eq!(a.chat(&client, None).await, (200, "openai:b".into()));
    assert_eq!(upstream.calls_with_key("oai-a"), 1);
    let replaced = usage_in_redis(&url, &prefix, "openai:b").unwrap();
    assert!(replaced["lastUsed"].is_u64(), "{replaced}");
    let usage = usage_in_redis(&url, &prefix, "openai:a").expect("A recorded the cooldown");
    assert_eq!(usage["modelCooldowns"][0]["reason"], "rate_limit");
    assert_eq!(usage["errorCount"], 1);
    // No secret in Redis: only routing state, keyed by profile id.
    assert!(!usage.to_string().contains("oai-"), "{usage}");

    // B has never met the 429 itself, and goes straight to the other key.
    assert_eq!(b.chat(&client, None).await, (200, "openai:b".into()));
    assert_eq!(
        upstream.calls_with_key("oai-a"),
        1,
        "B called the cooling key"
    );
    let status = b.status().await;
    assert_eq!(status["state"]["backend"], "redis");
    assert_eq!(status["state"]["healthy"], true);
    let order = &status["providers"][1]["order"];
    assert_eq!(order[0]["id"], "openai:b", "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_pinned_through_one_replica_is_honoured_by_the_other() {
    let upstream = Upstream::start().await;
    let redis = test_redis::shared();
    let (url, prefix) = (redis.url.clone(), test_redis::unique_prefix("pin"));
    // Round-robin: the least recently used key first.
    let config = config(&upstream, &url, &prefix, "");
    let (_dir, a, b) = two_replicas(&config).await;
    let client = reqwest::Client::new();

    let (status, pinned) = a.chat(&client, Some("chat-7")).await;
    assert_eq!(status, 200);
    let session = test_redis::get(&url, &format!("{prefix}:main:session:chat-7"))
        .expect("A wrote the session to Redis");
    assert!(session.contains(&pinned), "{session}");
    // The pinned key is now the most recently used: round-robin alone
    // would send B's next request to the other one.
    assert!(usage_in_redis(&url, &prefix, &pinned).unwrap()["lastUsed"].is_u64());
    let other = if pinned == "openai:a" {
        "openai:b"
    } else {
        "openai:a"
    };

    assert_eq!(b.chat(&client, Some("chat-7")).await, (200, pinned.clone()));
    assert_eq!(b.chat(&client, None).await, (200, other.to_owned()));
    assert_eq!(a.chat(&client, Some("chat-7")).await, (200, pinned));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_replicas_record_four_hundred_concurrent_failures_exactly() {
    const REPLICAS: usize = 4;
    const PER_REPLICA: usize = 100;
    let upstream = Upstream::start().await;
    // Every call with key a fails, and is held until all of them arrived:
    // 400 failures recorded at once on one profile by four processes.
    upstream.fail_key("oai-a", 429, REPLICAS * PER_REPLICA);
    let redis = test_redis::shared();
    let (url, prefix) = (redis.url.clone(), test_redis::unique_prefix("count"));
    let config = config(
        &upstream,
        &url,
        &prefix,
        r#"order: { openai: ["openai:a"] }"#,
    );
    let dir = tempfile::tempdir().unwrap();
    let mut replicas = Vec::new();
    for n in 0..REPLICAS {
        replicas.push(Replica::start(dir.path(), &format!("r{n}"), &config).await);
    }
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let mut requests = tokio::task::JoinSet::new();
    for replica in &replicas {
        for _ in 0..PER_REPLICA {
            let (client, address) = (client.clone(), replica.address.clone());
            requests.spawn(async move { chat(&client, &address, None).await });
        }
    }
    let mut served = 0;
    while let Some(answer) = requests.join_next().await {
        let (status, profile) = answer.unwrap();
        assert_eq!((status, profile.as_str()), (200, "anthropic:a"));
        served += 1;
    }
    assert_eq!(served, REPLICAS * PER_REPLICA);
    let calls = upstream.calls_with_key("oai-a");
    assert_eq!(calls, REPLICAS * PER_REPLICA, "every request met the fault");
    let usage = usage_in_redis(&url, &prefix, "openai:a").unwrap();
    assert_eq!(usage["errorCount"], calls, "{usage}");
    assert_eq!(usage["failureCounts"]["rate_limit"], calls, "{usage}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_killed_under_load_fails_no_request_and_is_reconciled_when_back() {
    let upstream = Upstream::start().await;
    let mut server = RedisServer::start();
    let prefix = test_redis::unique_prefix("outage");
    let config = config(
        &upstream,
        &server.url,
        &prefix,
        r#"order: { openai: ["openai:a", "openai:b"] }"#,
    );
    let (_dir, a, b) = two_replicas(&config).await;
    let client = reqwest::Client::new();

    assert_an_idle_connection_killed_is_replaced(&a, &client, &server.url).await;

    // A disable every replica knows of before the outage: a Redis that
    // comes back empty must get it back from them.
    let disabled_until = 4_000_000_000_000u64;
    let _: () = redis::cmd("SET")
        .arg(format!("{prefix}:main:usage:anthropic:a"))
        .arg(format!(
            r#"{{"disabledUntil":{disabled_until},"disabledReason":"billing","errorCount":1}}"#
        ))
        .arg("PX")
        .arg(3_600_000)
        .query(&mut test_redis::client(&server.url))
        .unwrap();

    // Load from both replicas, all through the outage and after it.
    let load = tokio::sync::watch::Sender::new(true);
    let workers = start_load([&a, &b], &client, &load);
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.kill();
    tokio::time::sleep(Duration::from_millis(300)).await;

    // During the outage key a starts failing: each replica records that
    // in its local copy, and a session is pinned through A.
    upstream.fail_key("oai-a", 429, 1);
    let (status, served) = a.chat(&client, Some("through-outage")).await;
    assert_eq!((status, served.as_str()), (200, "openai:b"));
    assert_eq!(b.chat(&client, None).await, (200, "openai:b".into()));
    let during = a.status().await;
    assert_eq!(during["state"]["healthy"], false, "{during}");
    assert!(
        during["state"]["pendingChanges"].as_u64().unwrap() >= 2,
        "{during}"
    );
    assert!(!during["state"]["url"].as_str().unwrap().is_empty());
    tokio::time::sleep(Duration::from_millis(300)).await;

    // Back, empty (no persistence): the replicas' local changes return.
    server.restart();
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    load.send(false).unwrap();
    assert_the_load_never_failed(workers).await;
    assert_reconciled([&a, &b], &client, &server.url, &prefix, disabled_until).await;
}

/// A connection that died idle (a server's timeout, a load balancer) is
/// replaced, not taken for an outage: with every client of the Redis at
/// `url` killed, `a` still serves and stays healthy.
async fn assert_an_idle_connection_killed_is_replaced(
    a: &Replica,
    client: &reqwest::Client,
    url: &str,
) {
    assert_eq!(a.chat(client, None).await.0, 200);
    let killed: i64 = redis::cmd("CLIENT")
        .arg(&["KILL", "TYPE", "normal", "SKIPME", "yes"][..])
        .query(&mut test_redis::client(url))
        .unwrap();
    assert!(killed >= 1);
    assert_eq!(a.chat(client, None).await.0, 200);
    assert_eq!(a.status().await["state"]["healthy"], true);
}

/// Three workers on each of `replicas`, sending chat requests until `load`
/// turns false; each returns the statuses it got (0 for no answer).
fn start_load(
    replicas: [&Replica; 2],
    client: &reqwest::Client,
    load: &tokio::sync::watch::Sender<bool>,
) -> tokio::task::JoinSet<Vec<u16>> {
    let mut workers = tokio::task::JoinSet::new();
    for replica in replicas {
        for _ in 0..3 {
            let address = replica.address.clone();
            let (client, running) = (client.clone(), load.subscribe());
            workers.spawn(async move {
                let mut answers = Vec::new();
                while *running.borrow() {
                    let response = client
                        .post(format!("http://{address}/v1/chat/completions"))
                        .header("content-type", "application/json")
                        .body(r#"{"model":"auto","messages":[{"role":"user","content":"hi"}]}"#)
                        .send()
                        .await;
                    answers.push(response.map(|r| r.status().as_u16()).unwrap_or(0));
                }
                answers
            });
        }
    }
    workers
}

/// Every request of the `workers` of [`start_load`] was served, and there
/// were enough of them to mean anything.
async fn assert_the_load_never_failed(mut workers: tokio::task::JoinSet<Vec<u16>>) {
    let mut answered = 0;
    while let Some(answers) = workers.join_next().await {
        let answers = answers.unwrap();
        assert!(
            answers.iter().all(|s| *s == 200),
            "failed requests: {answers:?}"
        );
        answered += answers.len();
    }
    assert!(
        answered > 20,
        "too little load to mean anything: {answered}"
    );
}

/// After the outage: both `replicas` healthy with nothing pending, and the
/// Redis back at `url` holds key a's cooldown, the session pinned during
/// the outage, and the disable (until `disabled_until`) known before it.
async fn assert_reconciled(
    replicas: [&Replica; 2],
    client: &reqwest::Client,
    url: &str,
    prefix: &str,
    disabled_until: u64,
) {
    for replica in replicas {
        // A request lets a replica that had no traffic since find Redis.
        replica.chat(client, None).await;
        let after = replica.status().await;
        assert_eq!(after["state"]["healthy"], true, "{after}");
        assert_eq!(after["state"]["pendingChanges"], 0, "{after}");
    }
    let usage = usage_in_redis(url, prefix, "openai:a").expect("reconciled");
    assert_eq!(
        usage["modelCooldowns"][0]["reason"], "rate_limit",
        "{usage}"
    );
    assert!(usage["errorCount"].as_u64().unwrap() >= 1, "{usage}");
    let session = test_redis::get(url, &format!("{prefix}:main:session:through-outage"))
        .expect("the session pinned during the outage reached Redis");
    let restored = usage_in_redis(url, prefix, "anthropic:a").expect("restored");
    assert_eq!(restored["disabledUntil"], disabled_until, "{restored}");
    assert_eq!(restored["disabledReason"], "billing", "{restored}");
    let session: Value = serde_json::from_str(&session).unwrap();
    assert_eq!(
        session["entry"]["authProfileOverrideSource"], "auto",
        "{session}"
    );
    assert!(session["at"].is_u64(), "{session}");
}

/// The binary on `state` with `config`.
fn cli(state: &Path, config: &Path, args: &[&str]) -> std::process::Output {
    binary::failover()
        .arg("--state-dir")
        .arg(state)
        .arg("--config")
        .arg(config)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn state_migrate_moves_routing_state_and_sessions_both_ways() {
    use failover::state::{SessionStore, StateDir};
    let redis = test_redis::shared();
    let (url, prefix) = (redis.url.clone(), test_redis::unique_prefix("migrate"));
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let paths = StateDir::at(&state).agent("main").unwrap();
    let store = AuthStore::open(paths.clone()).unwrap();
    store
        .update_profiles(|file| {
            file.put_static("openai:a", "openai", CredentialKind::ApiKey, "oai-a")
        })
        .unwrap();
    let far = 4_000_000_000_000u64;
    store
        .update_profile_usage("openai:a", |u| {
            Ok::<_, ()>(failover::auth::Usage {
                disabled_until: Some(far),
                disabled_reason: Some(failover::auth::RecordedReason::Billing),
                error_count: 3,
                ..u.clone()
            })
        })
        .unwrap();
    let sessions = SessionStore::for_agent(&paths.dir);
    sessions
        .update("chat-1", |e| e.model_override.model = Some("gpt-x".into()))
        .unwrap();
    let write_config = |backend: &str, url: &str| {
        let path = dir.path().join(format!("{backend}.json5"));
        std::fs::write(
            &path,
            format!(r#"{{ state: {{ backend: "{backend}", redis: {{ url: "{url}", prefix: "{prefix}" }} }} }}"#),
        )
        .unwrap();
        path
    };
    let on_files = write_config("files", &url);
    let on_redis = write_config("redis", &url);

    migrate_to_redis_and_check(&state, &on_files, &on_redis, &url, &prefix, far);

    // And back: files emptied first, then filled from Redis.
    std::fs::remove_file(&paths.usage).unwrap();
    std::fs::remove_file(sessions.path()).unwrap();
    let out = cli(&state, &on_redis, &["state", "migrate", "--to", "files"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(store.usage().unwrap()["openai:a"].disabled_until, Some(far));
    assert_eq!(
        sessions
            .get("chat-1")
            .unwrap()
            .model_override
            .model
            .as_deref(),
        Some("gpt-x")
    );
}

/// `state migrate --to redis` with the files config `on_files` moves the
/// profile (disabled until `far`) and the session to the Redis at `url`
/// under `prefix`, where the Redis config `on_redis` then finds them.
fn migrate_to_redis_and_check(
    state: &Path,
    on_files: &Path,
    on_redis: &Path,
    url: &str,
    prefix: &str,
    far: u64,
) {
    let out = cli(state, on_files, &["state", "migrate", "--to", "redis"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("1 profile(s) and 1 session(s)"), "{said}");
    assert!(said.contains(r#"set state.backend to "redis""#), "{said}");
    let usage = usage_in_redis(url, prefix, "openai:a").unwrap();
    assert_eq!(usage["disabledUntil"], far);

    // The Redis backend now reports it, healthy.
    let out = cli(state, on_redis, &["status", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["state"]["backend"], "redis");
    assert_eq!(status["state"]["healthy"], true);
    assert_eq!(
        status["providers"][0]["order"][0]["disabledReason"],
        "billing"
    );
    let out = cli(
        state,
        on_redis,
        &["session", "show", "--session", "chat-1", "--json"],
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("gpt-x"));
}

#[test]
fn an_unreachable_redis_is_a_clear_error_for_a_migration_and_a_degraded_status() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let config = dir.path().join("failover.json5");
    // Port 1 on loopback: nothing listens. The password must never show.
    std::fs::write(
        &config,
        r#"{ state: { backend: "redis", redis: { url: "redis://:sekret-pw@127.0.0.1:1/0" } } }"#,
    )
    .unwrap();
    let out = cli(&state, &config, &["state", "migrate", "--to", "files"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(said.contains("redis://:***@127.0.0.1:1/0"), "{said}");
    assert!(!said.contains("sekret-pw"), "{said}");

    // Reading goes on from the (empty) local copy, and says so.
    let out = cli(&state, &config, &["status"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("UNREACHABLE"), "{said}");
    assert!(!said.contains("sekret-pw"), "{said}");

    // A backend of redis with no server named is a config error.
    std::fs::write(
        &config,
        r#"{ state: { backend: "redis", redis: { prefx: "x" } } }"#,
    )
    .unwrap();
    let out = cli(&state, &config, &["status"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("state.redis.prefx") && said.contains("prefix"),
        "{said}"
    );
}
