//! `failover run` and `failover serve` as real processes, against the
//! fault-injecting upstream.

use crate::support::binary;
use crate::support::guests;
use crate::upstream;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use failover::auth::CredentialKind;
use failover::state::{AuthStore, StateDir};
use upstream::{Behaviour, Upstream};

/// The binary on `state` and `config`, with `args`.
fn in_state(state: &str, config: &str, args: &[&str]) -> Command {
    let mut command = binary::failover();
    command
        .args(["--state-dir", state, "--config", config])
        .args(args);
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
    let command = in_state(&state, &config, &["run", "say", "hi"]);
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
    let command = in_state(&state, &config, &["run", "--stream"]);
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
    let command = in_state(&state, &config, &["run", "--model", "openai/gpt-x", "hi"]);
    let out = output(command, "").await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("openai/gpt-x"), "{stderr}");
    assert_eq!(
        up.chat_calls().len(),
        2,
        "no fallback from a strict model (F-7.6)"
    );
    let command = in_state(&state, &config, &["run", "--model", "nobody/x", "hi"]);
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
    let out = binary::failover()
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
    // A misspelt key is an error with its line and the key meant, not a
    // silently empty chain.
    std::fs::write(
        &config,
        "{\n  agents: { defaults: { model: {\n    primary: \"openai/gpt-4o\",\n    fallback: [\"anthropic/claude-x\"] } } },\n}",
    )
    .unwrap();
    let out = binary::failover()
        .args(["--state-dir", &dir.path().display().to_string()])
        .args(["--config", &config.display().to_string(), "run", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bad.json5")
            && stderr.contains("line 4")
            && stderr.contains("`agents.defaults.model.fallback` (did you mean `fallbacks`?)"),
        "{stderr}"
    );
}

#[test]
fn serve_refuses_an_open_address_without_client_keys() {
    let dir = tempfile::tempdir().unwrap();
    let out = binary::failover()
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
    let mut child = in_state(&state, &config, &["serve", "--listen", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let address = serving_address(&mut stderr);
    let response = reqwest::Client::new()
        .post(format!("http://{address}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(r#"{"model":"auto","messages":[{"role":"user","content":"hi"}]}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-failover-profile"], "anthropic:a");
    terminate(child).await;
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert!(rest.contains("stopped"), "{rest}");
}

/// Sends `child` SIGTERM and waits: it must stop cleanly.
async fn terminate(mut child: std::process::Child) {
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
}

/// `serve`'s first stderr line names its address; returns it.
fn serving_address(stderr: &mut impl BufRead) -> String {
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    line.split("http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_check_swap_rollback_and_show_against_a_running_gateway() {
    let up = Upstream::start().await;
    let dir = tempfile::tempdir().unwrap();
    let (state, config) = setup(dir.path(), &up);
    let module = dir.path().join("context-advances.wasm");
    std::fs::write(
        &module,
        guests::component("examples/policy-context-advances", &[]),
    )
    .unwrap();
    let module = module.display().to_string();
    let junk = dir.path().join("junk.wasm");
    std::fs::write(&junk, b"junk").unwrap();
    let junk = junk.display().to_string();
    let base = |args: &[&str]| in_state(&state, &config, args);

    check_modules_without_a_gateway(&state, &config, &module, &junk).await;

    let mut child = base(&["serve", "--listen", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let address = serving_address(&mut stderr);
    let token = std::fs::read_to_string(Path::new(&state).join("gateway/admin-token")).unwrap();
    assert_eq!(token.trim().len(), 64);
    #[cfg(unix)]
    assert_admin_token_is_private(&state);

    swap_and_roll_back(&state, &config, &module, &junk, &address).await;
    assert_a_closed_pipe_ends_quietly(&state, &config).await;

    terminate(child).await;
    assert!(
        !Path::new(&state).join("gateway/admin.json").exists(),
        "the admin files are withdrawn"
    );
}

/// `policy check` accepts `module` and refuses `junk`; `policy show`
/// without a running gateway says so.
async fn check_modules_without_a_gateway(state: &str, config: &str, module: &str, junk: &str) {
    let base = |args: &[&str]| in_state(state, config, args);
    let checked = output(base(&["policy", "check", module]), "").await;
    let report = String::from_utf8_lossy(&checked.stdout);
    assert!(checked.status.success(), "{report}");
    assert!(
        report.contains("failover-context-advances") && report.contains("verdict: accepted"),
        "{report}"
    );
    let refused = output(base(&["policy", "check", junk]), "").await;
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stdout).contains("verdict: refused"));

    let none = output(base(&["policy", "show"]), "").await;
    assert_eq!(none.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&none.stderr).contains("no running gateway"));
}

/// The running gateway's admin token under `state` is readable by its
/// owner only.
#[cfg(unix)]
fn assert_admin_token_is_private(state: &str) {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(Path::new(state).join("gateway/admin-token"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

/// Against the gateway serving on `address`: `module` swapped in (and
/// reported by `/status`), `junk` refused, a second swap, then rollbacks
/// one swap at a time down to the module the gateway started with.
async fn swap_and_roll_back(state: &str, config: &str, module: &str, junk: &str, address: &str) {
    let base = |args: &[&str]| in_state(state, config, args);
    let swapped = output(base(&["policy", "swap", module]), "").await;
    let text = String::from_utf8_lossy(&swapped.stdout);
    assert!(
        swapped.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&swapped.stderr)
    );
    assert!(text.contains("active: failover-context-advances"), "{text}");
    assert!(text.contains("previous: failover-default"), "{text}");
    let response = reqwest::Client::new()
        .get(format!("http://{address}/status"))
        .send()
        .await
        .unwrap();
    let status: serde_json::Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    assert_eq!(status["policy"]["name"], "failover-context-advances");
    assert_eq!(status["previousPolicy"]["name"], "failover-default");

    let junk_swap = output(base(&["policy", "swap", junk]), "").await;
    assert_eq!(junk_swap.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&junk_swap.stdout)
        .contains("still active: failover-context-advances"));

    // A second swap: rollbacks go back one swap at a time, down to the
    // module the gateway started with.
    let again = output(base(&["policy", "swap", module]), "").await;
    assert!(again.status.success());
    let shown = output(base(&["policy", "show"]), "").await;
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(
        text.contains("previous: failover-context-advances")
            && text.contains("rollbacks possible: 2"),
        "{text}"
    );
    let rolled = output(base(&["policy", "rollback"]), "").await;
    let text = String::from_utf8_lossy(&rolled.stdout);
    assert!(
        text.contains("active: failover-context-advances")
            && text.contains("previous: failover-default"),
        "{text}"
    );
    let rolled = output(base(&["policy", "rollback"]), "").await;
    let text = String::from_utf8_lossy(&rolled.stdout);
    assert!(
        text.contains("active: failover-default") && text.contains("previous: none"),
        "{text}"
    );
    let past_the_start = output(base(&["policy", "rollback"]), "").await;
    assert_eq!(past_the_start.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&past_the_start.stderr).contains("no previous policy"));
}

/// Output into a pipe whose reader has gone (`policy show | head -0`):
/// the command ends quietly, without a panic.
async fn assert_a_closed_pipe_ends_quietly(state: &str, config: &str) {
    let base = |args: &[&str]| in_state(state, config, args);
    let closed = tokio::task::spawn_blocking({
        let mut command = base(&["policy", "show"]);
        move || {
            let mut child = command
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            drop(child.stdout.take());
            child.wait_with_output().unwrap()
        }
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&closed.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_ne!(closed.status.code(), Some(101), "{stderr}");
}
