//! The `failover` binary in tests: a command with none of the caller's
//! configuration, and the address a `serve` writing to a log listens on.

#![allow(dead_code)]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Where the binary looks for a per-user config in tests: nowhere that
/// exists, so a developer's own `~/.config/failover` never leaks in.
pub const NO_USER_CONFIG: &str = "/nonexistent/failover-tests/config-home";

/// The binary, with the environment's config and state directory removed.
pub fn failover() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_failover"));
    command
        .env_remove("FAILOVER_CONFIG")
        .env_remove("FAILOVER_STATE_DIR")
        .env_remove("FAILOVER_REDIS_URL")
        .env("XDG_CONFIG_HOME", NO_USER_CONFIG);
    command
}

/// The address a `serve` whose stderr goes to `log` says it listens on;
/// `None` when it has not said so within ten seconds.
pub async fn serving_address_in(log: &Path) -> Option<String> {
    for _ in 0..200 {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if let Some(address) = text
            .split("serving on http://")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
        {
            return Some(address.to_owned());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}
