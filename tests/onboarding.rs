//! A newcomer's first steps: `failover init` writes a config where failover
//! then finds it without flags, and `failover doctor` says what would serve
//! and why the rest would not.

use std::path::Path;
use std::process::Output;

use crate::support::binary;
use crate::upstream::Upstream;

fn failover(config_home: &Path, state: &Path, args: &[&str]) -> Output {
    binary::failover()
        .env("XDG_CONFIG_HOME", config_home)
        .env("FAILOVER_STATE_DIR", state)
        .env_remove("FAILOVER_AGENT")
        .args(args)
        .output()
        .unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn init_writes_a_config_that_is_then_found_without_flags() {
    let dir = tempfile::tempdir().unwrap();
    let (home, state) = (dir.path().join("config"), dir.path().join("state"));
    let first = failover(&home, &state, &["init"]);
    assert!(first.status.success(), "{}", text(&first));
    let written = home.join("failover/config.json5");
    assert!(written.is_file());
    assert!(
        text(&first).contains("failover profiles add openai:main"),
        "{}",
        text(&first)
    );
    let again = failover(&home, &state, &["init"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(text(&again).contains("--force"), "{}", text(&again));
    // Found by default: doctor names it, and its chain.
    let doctor = failover(&home, &state, &["doctor", "--offline"]);
    let said = text(&doctor);
    assert!(
        said.contains(&format!("config {}", written.display())),
        "{said}"
    );
    assert!(said.contains("openai/gpt-4o"), "{said}");
    // No credentials yet: nothing can serve, and doctor says how to fix it.
    assert_eq!(doctor.status.code(), Some(1), "{said}");
    assert!(
        said.contains(
            "no credentials for openai: add one with `failover profiles add openai:<name>`"
        ),
        "{said}"
    );
    // `status` says the same of the chain, in text and JSON.
    let status = text(&failover(&home, &state, &["status"]));
    assert!(
        status.contains("the default chain now") && status.contains("no credentials for anthropic"),
        "{status}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&failover(&home, &state, &["status", "--json"]).stdout).unwrap();
    assert_eq!(json["chain"][0]["model"], "openai/gpt-4o");
    assert_eq!(json["chain"][0]["ready"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_reaches_each_provider_and_names_what_would_serve() {
    let up = Upstream::start().await;
    let dir = tempfile::tempdir().unwrap();
    let (home, state) = (dir.path().join("config"), dir.path().join("state"));
    let config = dir.path().join("failover.json5");
    std::fs::write(
        &config,
        format!(
            r#"{{ agents: {{ defaults: {{ model: {{ primary: "closed/m", fallbacks: ["nokey/m", "up/m"] }} }} }},
                 models: {{ providers: {{
                   closed: {{ baseUrl: "http://127.0.0.1:1/v1" }},
                   nokey: {{ baseUrl: "{base}/nokey/v1" }},
                   up: {{ baseUrl: "{base}/up/v1" }} }} }} }}"#,
            base = up.base
        ),
    )
    .unwrap();
    let config = config.display().to_string();
    for id in ["closed:a", "up:a"] {
        let added = binary::failover()
            .env("XDG_CONFIG_HOME", &home)
            .env("FAILOVER_STATE_DIR", &state)
            .env("KEY", "k-0123456789")
            .args([
                "--config",
                &config,
                "profiles",
                "add",
                id,
                "--key-env",
                "KEY",
            ])
            .output()
            .unwrap();
        assert!(added.status.success(), "{}", text(&added));
    }
    let doctor = tokio::task::spawn_blocking(move || {
        failover(&home, &state, &["--config", &config, "doctor"])
    })
    .await
    .unwrap();
    let said = text(&doctor);
    assert!(doctor.status.success(), "{said}");
    let line = |model: &str| {
        said.lines()
            .find(|l| l.contains(model))
            .unwrap_or_default()
            .to_owned()
    };
    assert!(line("closed/m").contains("connection refused"), "{said}");
    assert!(
        line("nokey/m").contains("no credentials for nokey"),
        "{said}"
    );
    assert!(
        line("up/m").starts_with("ok") && line("up/m").contains("answers (HTTP"),
        "{said}"
    );
    assert!(
        said.contains("=> up/m would serve the default chain now"),
        "{said}"
    );
}
