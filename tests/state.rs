//! Profiles and their state on disk, exercised the way operators and
//! concurrent gateways do: real files, real locks, real processes.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use failover::auth::{FailureEvent, ModelCooldown, RecordedReason, Usage};
use failover::config::Config;
use failover::state::{AuthStore, StateDir};
use failover::{Policy, PolicyEngine};

/// Names the job of a worker process (this test binary run again).
const WORKER_ENV: &str = "FAILOVER_TEST_WORKER";

// ---------------------------------------------------------------- helpers

fn failover(state: &Path) -> Command {
    let mut command = crate::support::binary::failover();
    command
        .env("FAILOVER_STATE_DIR", state)
        .env_remove("FAILOVER_AGENT");
    command
}

fn run(state: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = failover(state)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The command may exit before reading its input (a refused id, say).
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    child.wait_with_output().unwrap()
}

fn run_ok(state: &Path, args: &[&str], stdin: &str) -> String {
    let output = run(state, args, stdin);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{args:?} failed: {stderr}");
    format!("{}{}", String::from_utf8_lossy(&output.stdout), stderr)
}

fn agent_dir(state: &Path) -> PathBuf {
    state.join("agents/main/agent")
}

fn store(state: &Path) -> AuthStore {
    AuthStore::open(StateDir::at(state).agent("main").unwrap()).unwrap()
}

fn spawn_worker(job: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "state::worker_process",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(WORKER_ENV, job)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

// ---------------------------------------------------------------- workers

/// Not a test of its own: the body of the worker processes that other tests
/// start (this binary run again with `FAILOVER_TEST_WORKER` set). Run
/// without it, it does nothing.
#[test]
#[ignore = "helper run as a separate process by other tests"]
fn worker_process() {
    let Ok(job) = std::env::var(WORKER_ENV) else {
        return;
    };
    let parts: Vec<&str> = job.split('|').collect();
    let state = Path::new(parts[1]);
    match parts[0] {
        // Record `count` rate-limit failures against `profile`.
        "failures" => {
            let count: usize = parts[2].parse().unwrap();
            let profile = parts[3];
            let engine = PolicyEngine::new().unwrap();
            let policy = Policy::default_policy(&engine).unwrap();
            let cooldowns = Config::default().cooldown_config();
            let store = store(state);
            for i in 0..count {
                store
                    .update_usage(|usage| {
                        let before = usage.get(profile).cloned().unwrap_or_default();
                        let event = FailureEvent {
                            provider: "openai".into(),
                            reason: RecordedReason::RateLimit,
                            model: Some("openai/gpt-4o".into()),
                            retry_after_ms: None,
                            reset_at_ms: None,
                            now_ms: 1_700_000_000_000 + i as u64,
                        };
                        let after = policy.record_failure(&before, &event, &cooldowns).unwrap();
                        usage.insert(profile.to_owned(), after);
                        Ok(())
                    })
                    .unwrap();
            }
        }
        // Rewrite a large state file forever (until killed).
        "churn" => {
            let store = store(state);
            for round in 0u64.. {
                store
                    .update_usage(|usage| {
                        for i in 0..300 {
                            usage.insert(
                                format!("openai:key-{i}"),
                                Usage {
                                    error_count: (round % 7) as u32,
                                    model_cooldowns: vec![ModelCooldown {
                                        model: format!(
                                            "openai/model-{round}-{i}-{}",
                                            "x".repeat((round % 50) as usize)
                                        ),
                                        until: round * 1000 + i,
                                        reason: RecordedReason::RateLimit,
                                    }],
                                    ..Usage::default()
                                },
                            );
                        }
                        Ok(())
                    })
                    .unwrap();
            }
        }
        other => panic!("unknown worker job {other}"),
    }
}

// ---------------------------------------------------------------- concurrency and crashes

#[test]
fn concurrent_processes_lose_no_update() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    const WORKERS: usize = 4;
    const EACH: usize = 60;
    let workers: Vec<Child> = (0..WORKERS)
        .map(|_| {
            spawn_worker(&format!(
                "failures|{}|{EACH}|openai:shared",
                state.display()
            ))
        })
        .collect();
    for worker in workers {
        let output = worker.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let usage = store(state).usage().unwrap();
    let shared = &usage["openai:shared"];
    let total = (WORKERS * EACH) as u32;
    assert_eq!(
        shared.error_count, total,
        "every failure of every process counted"
    );
    assert_eq!(shared.failure_counts[&RecordedReason::RateLimit], total);
}

#[test]
fn a_writer_killed_mid_write_never_leaves_a_torn_file() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let path = agent_dir(state).join("auth-state.json");
    for round in 0..15u64 {
        let mut worker = spawn_worker(&format!("churn|{}", state.display()));
        // Let it get into its loop of writes, at a different point each time.
        std::thread::sleep(Duration::from_millis(150 + (round * 37) % 200));
        worker.kill().unwrap(); // SIGKILL
        worker.wait().unwrap();
        if path.exists() {
            let text = std::fs::read_to_string(&path).unwrap();
            let parsed: serde_json::Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("round {round}: torn file ({e}): {} bytes", text.len()));
            assert_eq!(
                parsed["usageStats"].as_object().unwrap().len(),
                300,
                "round {round}"
            );
        }
    }
    assert!(path.exists(), "the writer never wrote in 15 rounds");
    // Temporary files of killed writers do not accumulate as state.
    let stray: Vec<_> = std::fs::read_dir(agent_dir(state))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| {
            !name.starts_with(".tmp-") && !name.starts_with('.') && name != "auth-state.json"
        })
        .collect();
    assert!(stray.is_empty(), "{stray:?}");
}

// ---------------------------------------------------------------- profiles from the command line

#[test]
fn add_list_mark_status_remove() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    run_ok(state, &["profiles", "add", "openai:work"], "sk-work-key\n");
    run_ok(
        state,
        &[
            "profiles",
            "add",
            "openai-codex:me@example.com",
            "--type",
            "token",
        ],
        "tok\n",
    );
    let list = run_ok(state, &["profiles", "list", "--json"], "");
    let list: serde_json::Value = serde_json::from_str(
        list.lines()
            .take_while(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
            .as_str(),
    )
    .unwrap();
    let profiles = list["profiles"].as_array().unwrap();
    assert_eq!(profiles.len(), 2);
    // The provider defaults to the id's prefix, openai-codex meaning openai.
    assert!(
        profiles.iter().all(|p| p["provider"] == "openai"),
        "{profiles:?}"
    );

    let marked = run_ok(
        state,
        &[
            "profiles",
            "mark",
            "openai:work",
            "--failure",
            "rate_limit",
            "--model",
            "openai/gpt-4o",
            "--now",
            "1000000",
        ],
        "",
    );
    assert!(
        marked.contains("cooldown until") && marked.contains("rate_limit"),
        "{marked}"
    );

    let status = run_ok(state, &["status", "--json", "--now", "1000000"], "");
    let status: serde_json::Value =
        serde_json::from_str(&status[..status.rfind('}').unwrap() + 1]).unwrap();
    let order = status["providers"][0]["order"].as_array().unwrap();
    // The cooled-down profile moved behind the available one.
    assert_eq!(order[0]["id"], "openai-codex:me@example.com");
    assert_eq!(order[1]["id"], "openai:work");
    assert_eq!(order[1]["state"], "cooldown");
    assert_eq!(order[1]["cooldownUntil"], serde_json::Value::Null);
    let cooldowns = order[1]["modelCooldowns"].as_array().unwrap();
    assert_eq!(cooldowns.len(), 1, "{cooldowns:?}");
    assert_eq!(cooldowns[0]["model"], "openai/gpt-4o");
    assert_eq!(cooldowns[0]["until"], 1_000_000 + 60_000);
    assert_eq!(order[1]["errorCount"], 1);

    let table = run_ok(state, &["status", "--now", "1000000"], "");
    assert!(table.contains("in 1m"), "{table}");
    assert!(table.contains("errors 1"), "{table}");

    run_ok(state, &["profiles", "remove", "openai:work"], "");
    let usage = store(state).usage().unwrap();
    assert!(
        !usage.contains_key("openai:work"),
        "its routing state went with it"
    );
    let output = run(state, &["profiles", "remove", "openai:work"], "");
    assert_eq!(output.status.code(), Some(2));
}

/// A disable that outlives its cause (a top-up, a fixed key) is cleared by
/// hand, counts and all; an unknown profile is refused by name.
#[test]
fn profiles_clear_lifts_a_disable_and_its_counters() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    run_ok(state, &["profiles", "add", "groq:a"], "key\n");
    for _ in 0..2 {
        run_ok(
            state,
            &["profiles", "mark", "groq:a", "--failure", "billing"],
            "",
        );
    }
    let usage = store(state).usage().unwrap()["groq:a"].clone();
    assert!(usage.disabled_until.is_some() && usage.error_count == 2);
    let said = run_ok(state, &["profiles", "clear", "groq:a"], "");
    assert!(said.contains("groq:a"), "{said}");
    let usage = store(state).usage().unwrap()["groq:a"].clone();
    assert_eq!(
        (
            usage.disabled_until,
            usage.disabled_reason,
            usage.error_count
        ),
        (None, None, 0)
    );
    assert!(usage.failure_counts.is_empty());
    let output = run(state, &["profiles", "clear", "groq:b"], "");
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("no profile groq:b"));
}

#[test]
fn add_refuses_to_replace_silently_and_reads_a_named_variable() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    run_ok(state, &["profiles", "add", "groq:a"], "first\n");
    let output = run(state, &["profiles", "add", "groq:a"], "second\n");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--replace"));
    let before = store(state).summaries().unwrap()[0].fingerprint.clone();
    // The old key was revoked: disabled for good.
    run_ok(
        state,
        &["profiles", "mark", "groq:a", "--failure", "auth_permanent"],
        "",
    );
    assert!(store(state).usage().unwrap()["groq:a"]
        .disabled_until
        .is_some());

    let output = failover(state)
        .args([
            "profiles",
            "add",
            "groq:a",
            "--replace",
            "--key-env",
            "MY_GROQ_KEY",
        ])
        .env("MY_GROQ_KEY", "third")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_ne!(store(state).summaries().unwrap()[0].fingerprint, before);
    // The new key starts afresh.
    assert!(String::from_utf8_lossy(&output.stderr).contains("routing state was reset"));
    assert!(!store(state).usage().unwrap().contains_key("groq:a"));

    for (args, stdin, needle) in [
        (&["profiles", "add", "groq:b"][..], "\n", "no key given"),
        (&["profiles", "add", "no-colon"][..], "k\n", "provider:name"),
        (
            &[
                "profiles",
                "add",
                "groq:c",
                "--key-env",
                "UNSET_VARIABLE_XYZ",
            ][..],
            "",
            "UNSET_VARIABLE_XYZ",
        ),
        (
            &["profiles", "add", "groq:d"][..],
            "two\nlines\n",
            "several lines",
        ),
    ] {
        let output = run(state, args, stdin);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
}

#[test]
fn files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    run_ok(state, &["profiles", "add", "openai:a"], "k\n");
    run_ok(state, &["profiles", "mark", "openai:a", "--success"], "");
    for name in ["auth-profiles.json", "auth-state.json"] {
        let mode = std::fs::metadata(agent_dir(state).join(name))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{name}");
    }
}

// ---------------------------------------------------------------- legacy layouts

#[test]
fn legacy_profiles_and_oauth_file_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    std::fs::create_dir_all(state.join("agent")).unwrap();
    std::fs::write(
        state.join("agent/auth-profiles.json"),
        r#"{"profiles":{"anthropic:old":{"type":"api_key","provider":"anthropic","key":"k"}},
            "usageStats":{"anthropic:old":{"errorCount":2,"cooldownUntil":99999999999999}}}"#,
    )
    .unwrap();
    let summaries = store(state).summaries().unwrap();
    assert_eq!(summaries[0].id, "anthropic:old");
    assert_eq!(
        store(state).usage().unwrap()["anthropic:old"].error_count,
        2
    );

    let other = tempfile::tempdir().unwrap();
    let state = other.path();
    std::fs::create_dir_all(state.join("credentials")).unwrap();
    let oauth = r#"{"anthropic":{"access":"a","refresh":"r","expires":1,"email":"me@example.com"},
                    "google":{"access":"g","refresh":"r2","expires":2}}"#;
    std::fs::write(state.join("credentials/oauth.json"), oauth).unwrap();
    let ids: Vec<String> = store(state)
        .summaries()
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(ids, ["anthropic:me@example.com", "google:default"]);
    // Imported into the agent's file; the legacy file is never written.
    assert!(agent_dir(state).join("auth-profiles.json").exists());
    assert_eq!(
        std::fs::read_to_string(state.join("credentials/oauth.json")).unwrap(),
        oauth
    );
}

// ---------------------------------------------------------------- bad files

/// Runs `args`, expects a setup error naming `file` and `position`, and the
/// file left byte for byte as it was.
fn assert_refused(state: &Path, args: &[&str], file: &Path, position: &str) {
    let before = std::fs::read(file).unwrap();
    let output = run(state, args, "new-key\n");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(
        stderr.contains(&file.display().to_string()),
        "{args:?}: {stderr}"
    );
    assert!(stderr.contains(position), "{args:?}: {stderr}");
    assert_eq!(
        std::fs::read(file).unwrap(),
        before,
        "{args:?} changed the bad file"
    );
}

#[test]
fn a_malformed_profiles_file_is_reported_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    std::fs::create_dir_all(agent_dir(state)).unwrap();
    let file = agent_dir(state).join("auth-profiles.json");
    std::fs::write(
        &file,
        "{\n  \"profiles\": {\n    \"openai:a\": {\"type\": \"api_key\",,}\n  }\n}\n",
    )
    .unwrap();
    for args in [
        &["profiles", "list"][..],
        &["profiles", "add", "openai:b"],
        &["status"],
        &["profiles", "remove", "openai:a"],
    ] {
        assert_refused(state, args, &file, "line 3 column");
    }
    std::fs::write(
        &file,
        r#"{"profiles": {"openai:a": {"type": "api_key", "provider": "openai", "key": 7}}}"#,
    )
    .unwrap();
    assert_refused(state, &["profiles", "list"], &file, "openai:a");
}

#[test]
fn a_malformed_state_file_is_reported_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    run_ok(state, &["profiles", "add", "openai:a"], "k\n");
    let file = agent_dir(state).join("auth-state.json");
    std::fs::write(
        &file,
        "{\"usageStats\": {\n  \"openai:a\": {\"errorCount\": -3}\n}}",
    )
    .unwrap();
    for args in [
        &["status"][..],
        &["profiles", "mark", "openai:a", "--success"],
    ] {
        assert_refused(state, args, &file, "line 2 column");
    }
}

#[test]
fn a_malformed_config_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let config = state.join("failover.json5");
    std::fs::write(
        &config,
        "{\n  auth: { cooldowns: { billingMaxHours: 'a day' } },\n}\n",
    )
    .unwrap();
    let config_arg = config.display().to_string();
    assert_refused(
        state,
        &["--config", &config_arg, "status"],
        &config,
        "line 2",
    );
    std::fs::write(&config, "{ auth: { order: { openai: 'not a list' } } }").unwrap();
    assert_refused(
        state,
        &["--config", &config_arg, "status"],
        &config,
        "column",
    );
}

// ---------------------------------------------------------------- secrets

#[test]
fn no_output_ever_contains_key_material() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let secrets = [
        "sk-live-SECRET-0123456789abcdef",
        "tok-SECRET-fedcba9876543210",
    ];
    let mut seen = String::new();
    seen += &run_ok(
        state,
        &["profiles", "add", "openai:work"],
        &format!("{}\n", secrets[0]),
    );
    let output = failover(state)
        .args([
            "profiles",
            "add",
            "acme:ci",
            "--type",
            "token",
            "--key-env",
            "ACME_TOKEN",
        ])
        .env("ACME_TOKEN", secrets[1])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    seen += &String::from_utf8_lossy(&output.stdout);
    seen += &String::from_utf8_lossy(&output.stderr);
    for args in [
        &["profiles", "list"][..],
        &["profiles", "list", "--json"],
        &["status"],
        &["status", "--json"],
        &["profiles", "mark", "openai:work", "--failure", "billing"],
        &["profiles", "mark", "acme:ci", "--failure", "auth_permanent"],
        &["profiles", "mark", "acme:ci", "--success"],
        &["--help"],
    ] {
        let output = run(state, args, "");
        seen += &String::from_utf8_lossy(&output.stdout);
        seen += &String::from_utf8_lossy(&output.stderr);
    }
    // Errors too: a duplicate add and a refused replace echo nothing secret.
    let output = run(
        state,
        &["profiles", "add", "openai:work"],
        &format!("{}\n", secrets[0]),
    );
    seen += &String::from_utf8_lossy(&output.stderr);
    let output = run(
        state,
        &["profiles", "add", "openai:work", "--replace"],
        &format!("{}\nx\n", secrets[0]),
    );
    seen += &String::from_utf8_lossy(&output.stderr);

    assert!(seen.contains("sha256:"), "fingerprints are shown: {seen}");
    for secret in secrets {
        assert!(!seen.contains(secret), "a secret leaked into the output");
        assert!(
            !seen.contains(&secret[4..20]),
            "part of a secret leaked into the output"
        );
    }
    // Nor into the routing state, which is not a secrets file.
    let state_file = std::fs::read_to_string(agent_dir(state).join("auth-state.json")).unwrap();
    for secret in secrets {
        assert!(!state_file.contains(secret));
    }
    let _: BTreeMap<String, Usage> = store(state).usage().unwrap();
}

// ---------------------------------------------------------------- sessions

#[test]
fn session_set_model_show_and_reset() {
    use failover::state::SessionStore;
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let config = state.join("failover.json5");
    std::fs::write(
        &config,
        "{ agents: { defaults: { model: { primary: 'anthropic/claude-sonnet-4' } } } }",
    )
    .unwrap();
    let config_arg = config.display().to_string();
    let cli = |args: &[&str]| run_with_config(state, &config_arg, args);
    let cli_ok = |args: &[&str]| run_with_config_ok(state, &config_arg, args);

    let shown = cli_ok(&["session", "show", "--session", "chat-1"]);
    assert!(
        shown.contains("model: anthropic/claude-sonnet-4 (configured default)"),
        "{shown}"
    );

    cli_ok(&[
        "session",
        "set-model",
        "--session",
        "chat-1",
        "openai/gpt-4o@openai:work",
    ]);
    let shown = cli_ok(&["session", "show", "--session", "chat-1"]);
    assert!(
        shown.contains("model: openai/gpt-4o (your selection)"),
        "{shown}"
    );
    assert!(
        shown.contains("profile: openai:work (pinned by you)"),
        "{shown}"
    );
    // F-9.2: a user's change marks a pending live switch.
    let sessions = SessionStore::for_agent(&agent_dir(state));
    assert!(sessions.get("chat-1").unwrap().live_switch_pending);

    check_a_runner_fallback_shows(state, &config_arg, &sessions);

    cli_ok(&["session", "reset", "--session", "chat-2"]);
    let entry = sessions.get("chat-2").unwrap();
    assert_eq!(entry.model_override.model, None);
    let output = cli(&["session", "set-model", "--session", "x", "no-slash"]);
    assert_eq!(output.status.code(), Some(2));
}

/// `failover --config <config> <args>` on `state`, with no input.
fn run_with_config(state: &Path, config: &str, args: &[&str]) -> Output {
    let mut all = vec!["--config", config];
    all.extend_from_slice(args);
    run(state, &all, "")
}

/// [`run_with_config`], asserting that it succeeds; its standard output.
fn run_with_config_ok(state: &Path, config: &str, args: &[&str]) -> String {
    let output = run_with_config(state, config, args);
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Records a runner's fallback for session `chat-2` in `sessions` and
/// checks that `session show` shows it as such, and `status` lists it
/// (and not the user's selection of `chat-1`).
fn check_a_runner_fallback_shows(
    state: &Path,
    config: &str,
    sessions: &failover::state::SessionStore,
) {
    use failover::runner::OverrideSource;
    let cli_ok = |args: &[&str]| run_with_config_ok(state, config, args);
    sessions
        .update("chat-2", |e| {
            e.model_override.provider = Some("openai".into());
            e.model_override.model = Some("gpt-4o".into());
            e.model_override.source = Some(OverrideSource::Auto);
            e.model_override.origin_provider = Some("anthropic".into());
            e.model_override.origin_model = Some("claude-sonnet-4".into());
            e.model_override.reason = Some(RecordedReason::RateLimit);
        })
        .unwrap();
    let shown = cli_ok(&["session", "show", "--session", "chat-2"]);
    assert!(
        shown
            .contains("model: openai/gpt-4o (fallback from anthropic/claude-sonnet-4: rate_limit)"),
        "{shown}"
    );
    assert!(
        shown.contains("selected: anthropic/claude-sonnet-4 (configured default)"),
        "{shown}"
    );
    let status = cli_ok(&["status"]);
    assert!(
        status.contains("sessions on a fallback") && status.contains("chat-2: openai/gpt-4o"),
        "{status}"
    );
    assert!(
        !status.contains("chat-1:"),
        "a user selection is not a fallback: {status}"
    );
}

// ---------------------------------------------------------------- leftovers and newer files

#[test]
fn copies_left_by_killed_writes_are_removed_when_the_store_opens() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    run_ok(
        state,
        &["profiles", "add", "openai:work"],
        "sk-live-0123456789abcdef\n",
    );
    let agent = agent_dir(state);
    let sessions = agent.parent().unwrap().join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    // What a write killed between its temporary file and the rename leaves:
    // a full copy of the secrets, under a temporary name.
    let copy = agent.join(".tmp-killed01");
    std::fs::copy(agent.join("auth-profiles.json"), &copy).unwrap();
    let session_copy = sessions.join(".tmp-killed02");
    std::fs::write(&session_copy, "{}").unwrap();
    let in_flight = agent.join(".tmp-writing");
    std::fs::write(&in_flight, "{}").unwrap();
    let long_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    for path in [&copy, &session_copy] {
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(long_ago)
            .unwrap();
    }
    run_ok(state, &["profiles", "list"], "");
    assert!(!copy.exists(), "the stale copy of the secrets is gone");
    assert!(!session_copy.exists());
    assert!(
        in_flight.exists(),
        "a write that may still be running is left alone"
    );
}

#[test]
fn a_newer_sessions_file_is_refused_not_downgraded() {
    use failover::state::SessionStore;
    let dir = tempfile::tempdir().unwrap();
    let sessions = SessionStore::for_agent(&agent_dir(dir.path()));
    std::fs::create_dir_all(sessions.path().parent().unwrap()).unwrap();
    let newer = r#"{"version": 2, "sessions": {"chat-1": {"modelOverride": "x"}}, "future": true}"#;
    std::fs::write(sessions.path(), newer).unwrap();
    let error = sessions
        .update("chat-1", |e| e.model_override.model = None)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("sessions.json") && error.contains("newer"),
        "{error}"
    );
    assert!(sessions.get("chat-1").is_err());
    assert_eq!(std::fs::read_to_string(sessions.path()).unwrap(), newer);
}
