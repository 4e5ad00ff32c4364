//! `failover run` and `failover serve` as real processes, against the
//! fault-injecting upstream.

#[path = "gateway/upstream.rs"]
#[allow(dead_code)]
mod upstream;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use failover::auth::CredentialKind;
use failover::state::{AuthStore, StateDir};
use upstream::{Behaviour, Upstream};

fn failover() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_failover"));
    command
        .env_remove("FAILOVER_CONFIG")
        .env_remove("FAILOVER_STATE_DIR");
    command
}

/// A state directory with two anthropic keys and one openai key, and a
/// config routing anthropic/claude-x → openai/gpt-x through `upstream`.
fn setup(dir: &Path, upstream: &Upstream) -> (String, String) {
    let state = dir.join("state");
    let store = AuthStore::open(StateDir::at(&state).agent("main").unwrap()).unwrap();
    store
        .update_profiles(|file| {
            file.put_static("anthropic:a", "anthropic", CredentialKind::ApiKey, "ant-a")?;
            file.put_static("openai:a", "openai", CredentialKind::ApiKey, "oai-a")
        })
        .unwrap();
    let config = dir.join("failover.json5");
    std::fs::write(
        &config,
        format!(
            r#"{{ agents: {{ defaults: {{ model: {{ primary: "anthropic/claude-x", fallbacks: ["openai/gpt-x"] }} }} }},
                 models: {{ providers: {{
                   anthropic: {{ baseUrl: "{base}/anthropic", api: "anthropic-messages" }},
                   openai: {{ baseUrl: "{base}/v1", api: "openai-chat" }} }} }} }}"#,
            base = upstream.base
        ),
    )
    .unwrap();
    (state.display().to_string(), config.display().to_string())
}

async fn output(mut command: Command, stdin: &'static str) -> Output {
    tokio::task::spawn_blocking(move || {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_prints_the_reply_and_who_served_it() {
    let up = Upstream::start().await;
    let dir = tempfile::tempdir().unwrap();
    let (state, config) = setup(dir.path(), &up);
    let overloaded =
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    up.then(
        "claude-x",
        Behaviour::Status(529, Vec::new(), overloaded.into()),
    );
    let mut command = failover();
    command.args([
        "--state-dir",
        &state,
        "--config",
        &config,
        "run",
        "say",
        "hi",
    ]);
    let out = output(command, "").await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout.trim(), "hello from gpt-x with oai-a");
    assert!(
        stderr.contains("anthropic/claude-x via anthropic:a: overloaded"),
        "{stderr}"
    );
    assert!(
        stderr.contains("served by openai/gpt-x (profile openai:a) after 1 failed attempt"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("ant-a") && !stderr.contains("oai-a"),
        "no secret: {stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_reads_the_prompt_from_stdin_streams_and_fails_loudly_on_a_strict_model() {
    let up = Upstream::start().await;
    let dir = tempfile::tempdir().unwrap();
    let (state, config) = setup(dir.path(), &up);
    let mut command = failover();
    command.args([
        "--state-dir",
        &state,
        "--config",
        &config,
        "run",
        "--stream",
    ]);
    let out = output(command, "hi from stdin").await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "hello from claude-x with ant-a"
    );
    let sent = &up.calls()[0].body;
    assert!(sent.contains("hi from stdin"), "{sent}");

    up.then(
        "gpt-x",
        Behaviour::Status(
            401,
            Vec::new(),
            r#"{"error":{"message":"Incorrect API key provided"}}"#.into(),
        ),
    );
    let mut command = failover();
    command.args([
        "--state-dir",
        &state,
        "--config",
        &config,
        "run",
        "--model",
        "openai/gpt-x",
        "hi",
    ]);
    let out = output(command, "").await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("openai/gpt-x"), "{stderr}");
    assert_eq!(
        up.chat_calls().len(),
        2,
        "no fallback from a strict model (F-7.6)"
    );
    let mut command = failover();
    command.args([
        "--state-dir",
        &state,
        "--config",
        &config,
        "run",
        "--model",
        "nobody/x",
        "hi",
    ]);
    let out = output(command, "").await;
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown model"));
}

#[test]
fn config_errors_name_the_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("bad.json5");
    std::fs::write(
        &config,
        r#"{ models: { providers: { acme: { baseUrl: "http://x", api: "soap" } } } }"#,
    )
    .unwrap();
    let out = failover()
        .args([
            "--state-dir",
            &dir.path().display().to_string(),
            "--config",
            &config.display().to_string(),
            "run",
            "hi",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bad.json5") && stderr.contains("models.providers.acme.api"),
        "{stderr}"
    );
}

#[test]
fn serve_refuses_an_open_address_without_client_keys() {
    let dir = tempfile::tempdir().unwrap();
    let out = failover()
        .args([
            "--state-dir",
            &dir.path().display().to_string(),
            "serve",
            "--listen",
            "0.0.0.0:0",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("refusing to listen on 0.0.0.0:0"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_answers_and_stops_cleanly_on_sigterm() {
    let up = Upstream::start().await;
    let dir = tempfile::tempdir().unwrap();
    let (state, config) = setup(dir.path(), &up);
    let mut child = failover()
        .args([
            "--state-dir",
            &state,
            "--config",
            &config,
            "serve",
            "--listen",
            "127.0.0.1:0",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let address = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    let response = reqwest::Client::new()
        .post(format!("http://{address}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(r#"{"model":"auto","messages":[{"role":"user","content":"hi"}]}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-failover-profile"], "anthropic:a");
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    assert!(status.success(), "{status:?}");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert!(rest.contains("stopped"), "{rest}");
}
