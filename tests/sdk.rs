//! The official OpenAI and Anthropic Python SDKs against the gateway:
//! chat, streams, tools (whole and streamed, through both upstream shapes),
//! JSON mode, the models list, an outage with fallback, everything
//! failing and a broken stream continued on the fallback, through both
//! `/v1/chat/completions` and `/v1/messages`.
//!
//! The SDKs live in a venv made by `tests/sdk/setup.sh` (which `.ci/run`
//! and the README's test command run first; this test runs it too when
//! the venv is missing). The checks themselves are
//! `tests/sdk/check_clients.py`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::harness;

use failover::gateway::ClientKeys;

/// Every check the script makes, by the name it prints.
const CHECKS: &[&str] = &[
    "openai models list",
    "openai chat",
    "openai stream",
    "openai tools",
    "openai tools streamed",
    "openai faithful replies",
    "openai json mode",
    "openai outage with fallback",
    "openai everything failing",
    "anthropic models list",
    "anthropic chat",
    "anthropic stream",
    "anthropic tools",
    "anthropic tools streamed",
    "anthropic tool results",
    "anthropic outage with fallback",
    "anthropic everything failing",
    "anthropic unknown model",
    "openai stream continued",
    "anthropic stream continued",
];

/// The groups of checks that run on a gateway whose streams continue.
const RECOVERY_GROUPS: &[&str] = &["openai-recovery", "anthropic-recovery"];

fn sdk_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sdk")
}

/// The venv's Python, after `tests/sdk/setup.sh` made the venv current
/// (it returns at once when the venv matches its requirements).
pub(crate) fn python() -> PathBuf {
    static VENV: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let venv = VENV.get_or_init(|| {
        let venv = std::env::var_os("FAILOVER_SDK_VENV")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/sdk-venv"));
        let status = Command::new("bash")
            .arg(sdk_dir().join("setup.sh"))
            .env("FAILOVER_SDK_VENV", &venv)
            .status()
            .expect("run tests/sdk/setup.sh");
        assert!(status.success(), "tests/sdk/setup.sh failed: {status}");
        venv
    });
    venv.join("bin/python")
}

/// Runs one group of the script's checks on a fresh gateway (outages leave
/// profiles cooling down); its standard output.
async fn run_group(python: PathBuf, group: &'static str) -> String {
    let top = match RECOVERY_GROUPS.contains(&group) {
        true => r#"gateway: { streamRecovery: "continue" },"#,
        false => "",
    };
    let h = harness::start_setup(harness::Setup {
        top,
        keys: ClientKeys::default(),
        ..harness::Setup::default()
    })
    .await;
    let base = h.base.clone();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(python)
            .arg(sdk_dir().join("check_clients.py"))
            .arg(group)
            .env("FAILOVER_BASE", base)
            .output()
            .expect("run the SDK checks")
    })
    .await
    .unwrap();
    h.stop().await;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "group {group}:\n{stdout}\n{stderr}"
    );
    stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_python_sdks_work_through_both_endpoints() {
    let python = python();
    let mut stdout = String::new();
    let groups = ["openai", "anthropic", "openai-outages", "anthropic-outages"];
    for group in groups.iter().chain(RECOVERY_GROUPS) {
        stdout.push_str(&run_group(python.clone(), group).await);
    }
    for check in CHECKS {
        assert!(
            stdout.lines().any(|l| l == format!("ok {check}")),
            "check {check:?} did not run:\n{stdout}"
        );
    }
}
