//! Tests of the module above.

use super::*;

fn load(text: &str) -> Result<Config, StateError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("failover.json5");
    std::fs::write(&path, text).unwrap();
    Config::load(&path)
}

#[test]
fn defaults_match_the_spec() {
    let ms = Config::default().cooldown_config();
    assert_eq!(ms.billing_backoff_ms, 5 * 3_600_000);
    assert_eq!(ms.billing_max_ms, 24 * 3_600_000);
    assert_eq!(ms.failure_window_ms, 24 * 3_600_000);
}

#[test]
fn reads_json5_with_comments_and_the_seeds_keys() {
    let config = load(
        r#"// the seeds' example
        {
          auth: { order: { openai: ["openai-codex:user@example.com", "openai:api-key-backup"] },
                  cooldowns: { billingBackoffHoursByProvider: { openrouter: 2 } } },
          agents: { defaults: { model: { primary: "anthropic/claude-sonnet-4", fallbacks: [] } },
                    list: [ { id: "main", model: "ollama/qwen3.5:27b" },
                            { id: "ops", model: { primary: "openai/gpt-4o" } } ] },
          gateway: { port: 18789 }, // unknown keys are ignored
        }"#,
    )
    .unwrap();
    assert_eq!(config.explicit_order("openai").unwrap().len(), 2);
    assert_eq!(
        config.cooldown_config().billing_backoff_ms_by_provider,
        [("openrouter".to_owned(), 7_200_000)]
    );
    assert!(matches!(
        config.agents.list[1].model,
        Some(AgentModel::Choice(_))
    ));
}

#[test]
fn policy_limits_override_the_defaults_within_range() {
    let config = load("{ policy: { fuelPerCall: 2000000, callDeadlineMs: 500 } }").unwrap();
    let limits = config.policy_limits();
    assert_eq!(limits.fuel_per_call, 2_000_000);
    assert_eq!(limits.call_deadline, std::time::Duration::from_millis(500));
    assert_eq!(
        limits.max_memory_bytes,
        failover_policy::Limits::default().max_memory_bytes
    );
    let error = load("{ policy: { maxMemoryBytes: 1 } }")
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("policy.maxMemoryBytes must be from"),
        "{error}"
    );
}

#[test]
fn errors_name_file_line_and_column() {
    let error = load("{\n  auth: { cooldowns: { billingMaxHours: 'a day' } }\n}")
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("failover.json5") && error.contains("line 2"),
        "{error}"
    );
    let error = load("{ auth: { cooldowns: { failureWindowHours: -1 } } }")
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("auth.cooldowns.failureWindowHours"),
        "{error}"
    );
    let error = load("{ auth: { profiles: { nocolon: {} } } }")
        .unwrap_err()
        .to_string();
    assert!(error.contains("provider:name"), "{error}");
}
