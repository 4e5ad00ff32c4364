//! F-6.8's cap on waiting for a `Retry-After`, from the environment.

use super::shared::DEFAULT_RETRY_WAIT_CAP_MS;

/// This project's variable: seconds, `0` disables waiting.
pub(crate) const RETRY_MAX_WAIT_ENV: &str = "FAILOVER_RETRY_MAX_WAIT_SECONDS";
/// The seeds' name for the same setting, honoured as an alias.
pub(crate) const RETRY_MAX_WAIT_ALIAS_ENV: &str = "OPENCLAW_SDK_RETRY_MAX_WAIT_SECONDS";

/// Longest cap accepted: an hour; a longer wait is an outage, not a hint.
const MAX_CAP_SECONDS: u64 = 3600;

/// The cap in milliseconds: `RETRY_MAX_WAIT_ENV`, else
/// `RETRY_MAX_WAIT_ALIAS_ENV`, else 60 s. A bad value is an error naming
/// the variable.
pub fn retry_wait_cap_from_env() -> Result<u64, String> {
    for name in [RETRY_MAX_WAIT_ENV, RETRY_MAX_WAIT_ALIAS_ENV] {
        if let Ok(value) = std::env::var(name) {
            return parse(name, &value);
        }
    }
    Ok(DEFAULT_RETRY_WAIT_CAP_MS)
}

fn parse(name: &str, value: &str) -> Result<u64, String> {
    match value.trim().parse::<u64>() {
        Ok(seconds) if seconds <= MAX_CAP_SECONDS => Ok(seconds * 1000),
        _ => Err(format!(
            "{name} must be a whole number of seconds from 0 to {MAX_CAP_SECONDS}, not {value:?}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_errors() {
        assert_eq!(parse("X", "0"), Ok(0));
        assert_eq!(parse("X", " 90 "), Ok(90_000));
        assert!(parse("X", "1.5").unwrap_err().contains("X must be"));
        assert!(parse("X", "99999").is_err());
    }
}
