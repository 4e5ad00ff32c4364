//! No secret leaves: `failover serve` (recording, logging at debug) and
//! `failover run` are fed every path by which an upstream or a token
//! endpoint can echo a credential — an error body, a header, an SSE error
//! before and after the first text, a body whose key straddles the preview
//! cut, an OAuth refusal quoting the refresh token — and every output is
//! searched for the secrets and their heads: what clients received, the
//! gateway's log, `run`'s stdout and stderr, the recorded trace, and every
//! state file but the one that holds the secrets.

use crate::support::binary;
use crate::upstream;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use failover::auth::CredentialKind;
use failover::state::{AuthStore, StateDir};
use serde_json::{json, Value};
use upstream::{Behaviour, End, Upstream};

const ANTHROPIC_KEY: &str = "sk-ant-api03-Zq7XsecretA1b2C3d4E5f6G7h8";
const OPENAI_KEY: &str = "oai-proj-Yp8WsecretB9c8D7e6F5g4H3i2";
const STALE_ACCESS: &str = "stale-access-Vn5secretC1d2e3f4";
const REFRESH: &str = "rt-refresh-Uo4secretD5e6f7g8h9";

/// What must never appear: each secret's distinctive head (a cut that
/// leaks "all but the tail" leaks it).
const MARKERS: &[&str] = &[
    "Zq7Xsecret",
    "sk-ant-api03-Zq7X",
    "Yp8Wsecret",
    "oai-proj-Yp8W",
    "Vn5secret",
    "Uo4secret",
    "rt-refresh-Uo4",
];

/// The binary, logging at debug: what leaks at debug leaks.
fn failover() -> Command {
    let mut command = binary::failover();
    command.env("FAILOVER_LOG", "debug");
    command
}

/// State with the secrets, a config routing anthropic → openai and an
/// OAuth provider, all on `up`.
fn setup(dir: &Path, up: &Upstream) -> (PathBuf, PathBuf) {
    let state = dir.join("state");
    let store = AuthStore::open(StateDir::at(&state).agent("main").unwrap()).unwrap();
    store
        .update_profiles(|file| {
            file.put_static(
                "anthropic:a",
                "anthropic",
                CredentialKind::ApiKey,
                ANTHROPIC_KEY,
            )?;
            file.put_static("openai:a", "openai", CredentialKind::ApiKey, OPENAI_KEY)
        })
        .unwrap();
    let path = store.paths().profiles.clone();
    let mut document: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    document["profiles"]["acme:me"] = json!({"type": "oauth", "provider": "acme",
        "access": STALE_ACCESS, "refresh": REFRESH, "expires": 1000});
    std::fs::write(&path, document.to_string()).unwrap();
    let config = dir.join("failover.json5");
    std::fs::write(
        &config,
        format!(
            r#"{{ agents: {{ defaults: {{ model: {{ primary: "anthropic/claude-x", fallbacks: ["openai/gpt-x"] }} }} }},
                 models: {{ providers: {{
                   anthropic: {{ baseUrl: "{base}/anthropic", api: "anthropic-messages" }},
                   openai: {{ baseUrl: "{base}/v1", api: "openai-chat" }},
                   acme: {{ baseUrl: "{base}/acme/v1", oauth: {{ tokenUrl: "{base}/oauth/token" }} }} }} }} }}"#,
            base = up.base
        ),
    )
    .unwrap();
    (state, config)
}

/// Errors before any text, echoing the key: a status body on the primary,
/// a header on the fallback.
fn echo_in_body_and_header(up: &Upstream) {
    let echo_body =
        r#"{"error":{"type":"authentication_error","message":"Invalid API key: {KEY}"}}"#;
    up.then(
        "claude-x",
        Behaviour::Status(401, Vec::new(), echo_body.into()),
    );
    up.then(
        "gpt-x",
        Behaviour::Status(
            429,
            vec![("x-request-id", "req {KEY}".into())],
            r#"{"error":{"message":"slow down"}}"#.into(),
        ),
    );
}

/// The key straddling the cut of the 16 KiB preview on the primary; an SSE
/// error before any text on the fallback.
fn echo_across_the_cut_and_before_text(up: &Upstream) {
    let mut long = "x".repeat(16 * 1024 - 12);
    long.push_str("{KEY} and more text after it");
    up.then("claude-x", Behaviour::Status(500, Vec::new(), long));
    up.then(
        "gpt-x",
        Behaviour::Sse {
            pieces: vec![format!(
                "data: {}",
                json!({"error": {"message": "before text: {KEY}"}})
            )],
            end: End::Close,
        },
    );
}

/// An SSE error after the first text.
fn echo_after_text(up: &Upstream) {
    up.then(
        "claude-x",
        Behaviour::Sse {
            pieces: vec![
                format!(
                    "data: {}",
                    json!({"type": "content_block_delta", "index": 0,
                           "delta": {"type": "text_delta", "text": "partial "}})
                ),
                format!(
                    "event: error\ndata: {}",
                    json!({"type": "error", "error": {"type": "api_error", "message": "key {KEY} leaked"}})
                ),
            ],
            end: End::Close,
        },
    );
}

/// Forgets every cooldown, so that the next request calls both models.
fn forget_cooldowns(state: &Path) {
    let usage = StateDir::at(state).agent("main").unwrap().usage;
    let _ = std::fs::remove_file(usage);
}

fn grep(name: &str, text: &str) {
    for marker in MARKERS {
        assert!(!text.contains(marker), "{name} shows {marker}:\n{text}");
    }
}

/// Every file under `dir` but the profiles file, concatenated.
fn files_under(dir: &Path, skip: &Path) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_under(&path, skip));
        } else if path != skip {
            let bytes = std::fs::read(&path).unwrap_or_default();
            found.push((path, String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_output_channel_carries_a_secret_an_upstream_echoed() {
    let up = Upstream::start().await;
    let dir = tempfile::tempdir().unwrap();
    let (state, config) = setup(dir.path(), &up);
    let traces = dir.path().join("traces");
    let log_path = dir.path().join("serve.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut serve = failover()
        .arg("--state-dir")
        .arg(&state)
        .arg("--config")
        .arg(&config)
        .args(["serve", "--listen", "127.0.0.1:0", "--record"])
        .arg(&traces)
        .stderr(Stdio::from(log))
        .spawn()
        .unwrap();
    let address = binary::serving_address_in(&log_path)
        .await
        .expect("serve listens");
    assert_clients_receive_no_secret(&up, &state, &address).await;
    assert_run_shows_no_secret(&up, &state, &config).await;

    assert!(Command::new("kill")
        .args(["-TERM", &serve.id().to_string()])
        .status()
        .unwrap()
        .success());
    tokio::task::spawn_blocking(move || serve.wait().unwrap())
        .await
        .unwrap();
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(log.contains("stream ended early"), "{log}");
    grep("the gateway's log", &log);
    let trace = files_under(&traces, Path::new(""));
    assert!(!trace.is_empty());
    for (path, text) in trace {
        assert!(text.contains("[redacted]"), "{}", path.display());
        grep(&path.display().to_string(), &text);
    }
    let profiles = StateDir::at(&state).agent("main").unwrap().profiles;
    for (path, text) in files_under(&state, &profiles) {
        grep(&path.display().to_string(), &text);
    }
}

/// Through the gateway on `address`: each echo scenario of `up` (on a
/// fresh routing state under `state`) and the OAuth refusal reach the
/// client redacted, no secret in any answer.
async fn assert_clients_receive_no_secret(up: &Upstream, state: &Path, address: &str) {
    let client = reqwest::Client::new();
    let chat = |model: &str, stream: bool| {
        let body = json!({"model": model, "stream": stream,
                          "messages": [{"role": "user", "content": "hi"}]});
        client
            .post(format!("http://{address}/v1/chat/completions"))
            .header("content-type", "application/json")
            .body(body.to_string())
    };
    let mut received = String::new();
    for (stream, scenario) in [
        (false, echo_in_body_and_header as fn(&Upstream)),
        (true, echo_across_the_cut_and_before_text),
        (true, echo_after_text),
    ] {
        forget_cooldowns(state);
        scenario(up);
        let answer = chat("auto", stream).send().await.unwrap();
        received.push_str(&answer.text().await.unwrap());
    }
    // The OAuth token endpoint refuses and quotes the refresh token.
    let answer = chat("acme/m1", false).send().await.unwrap();
    let refused = answer.text().await.unwrap();
    assert!(refused.contains("auth_permanent"), "{refused}");
    received.push_str(&refused);
    assert!(
        received.contains("[redacted]"),
        "the echoes arrived, redacted: {received}"
    );
    grep("the client's answers", &received);
}

/// `run` and `run --stream` on the same state, with the same echoes:
/// their output is redacted, no secret in it.
async fn assert_run_shows_no_secret(up: &Upstream, state: &Path, config: &Path) {
    forget_cooldowns(state);
    echo_in_body_and_header(up);
    let run = run_cli(state, config, &["run", "hi"]).await;
    assert!(run.contains("[redacted]"), "{run}");
    grep("run's output", &run);
    forget_cooldowns(state);
    echo_after_text(up);
    let run = run_cli(state, config, &["run", "--stream", "hi"]).await;
    assert!(
        run.contains("partial") && run.contains("[redacted]"),
        "{run}"
    );
    grep("run --stream's output", &run);
}

async fn run_cli(state: &Path, config: &Path, args: &[&str]) -> String {
    let mut command = failover();
    command
        .arg("--state-dir")
        .arg(state)
        .arg("--config")
        .arg(config)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let output = tokio::task::spawn_blocking(move || {
        let mut child = command.spawn().unwrap();
        let _ = child.stdin.take().unwrap().write_all(b"");
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}
