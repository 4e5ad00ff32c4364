//! `state.*`: where routing state and sessions live.
//!
//! ```json5
//! state: {
//!   backend: "redis",                  // "files" (the default) or "redis"
//!   redis: {
//!     url: "redis://127.0.0.1:6379/0", // or the FAILOVER_REDIS_URL environment variable
//!     prefix: "failover",              // keys are <prefix>:<agent>:usage:<profile>, …:session:<id>
//!     timeoutMs: 250,                  // per Redis call; past it the local copy serves
//!   },
//! }
//! ```
//!
//! Secrets never go to Redis: each replica keeps its own
//! `auth-profiles.json`, and profiles are matched by id.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::state::StateError;

/// Environment variable that gives the Redis URL (and wins over
/// `state.redis.url`), so a URL with a password need not sit in the config.
pub(crate) const REDIS_URL_ENV: &str = "FAILOVER_REDIS_URL";

/// Key prefix when none is configured.
pub(crate) const DEFAULT_REDIS_PREFIX: &str = "failover";

/// A Redis call may take this long before the local copy serves instead: a
/// loopback or same-zone Redis answers in well under a millisecond; 250 ms
/// is a store in trouble, and a request should not wait longer for it.
pub(crate) const DEFAULT_REDIS_TIMEOUT_MS: u64 = 250;

/// Allowed `timeoutMs`: under 5 ms a healthy remote Redis times out; over
/// 10 s every request would wait that long on a dead one.
const TIMEOUT_RANGE_MS: (u64, u64) = (5, 10_000);

/// `state.backend`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// `auth-state.json` and `sessions.json` in the state directory.
    #[default]
    Files,
    /// A Redis server shared by every replica.
    Redis,
}

impl BackendKind {
    /// Its name in the config.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Files => "files",
            BackendKind::Redis => "redis",
        }
    }
}

/// `state.*` as written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct StateConfig {
    /// `backend`: files (default) or redis.
    pub backend: BackendKind,
    /// `redis.*`: the server, when the backend is redis (and for
    /// `failover state migrate`).
    pub redis: RedisConfig,
}

/// `state.redis.*`. Serialised (into a recording's header) and printed
/// with the URL's password hidden.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct RedisConfig {
    /// `url`: `redis://[user:password@]host[:port][/db]` or
    /// `redis+unix:///path[?pass=…]`. `REDIS_URL_ENV` wins over it.
    #[serde(serialize_with = "serialize_redacted")]
    pub url: Option<String>,
    /// `prefix`: the first part of every key.
    pub prefix: Option<String>,
    /// `timeoutMs`: the longest a Redis call may take.
    pub timeout_ms: Option<u64>,
}

impl std::fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisConfig")
            .field("url", &self.url.as_deref().map(redact_url))
            .field("prefix", &self.prefix)
            .field("timeout_ms", &self.timeout_ms)
            .finish()
    }
}

fn serialize_redacted<S: serde::Serializer>(
    url: &Option<String>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    url.as_deref().map(redact_url).serialize(serializer)
}

impl RedisConfig {
    /// The URL in force: the environment's, else the config's.
    pub(crate) fn effective_url(&self) -> Option<String> {
        std::env::var(REDIS_URL_ENV)
            .ok()
            .filter(|url| !url.trim().is_empty())
            .or_else(|| self.url.clone())
    }

    /// The key prefix in force.
    pub fn prefix(&self) -> &str {
        self.prefix.as_deref().unwrap_or(DEFAULT_REDIS_PREFIX)
    }

    /// The per-call timeout in force, in ms.
    pub(crate) fn timeout_ms(&self) -> u64 {
        self.timeout_ms.unwrap_or(DEFAULT_REDIS_TIMEOUT_MS)
    }
}

impl StateConfig {
    /// Checks the values; errors name the file and the key, never a
    /// password.
    pub fn validate(&self, path: &Path) -> Result<(), StateError> {
        let invalid = |message: String| StateError::Invalid {
            path: path.to_owned(),
            message,
        };
        let redis = &self.redis;
        if let Some(url) = &redis.url {
            check_url(url).map_err(|e| invalid(format!("state.redis.url: {e}")))?;
        }
        if let Ok(url) = std::env::var(REDIS_URL_ENV) {
            if !url.trim().is_empty() {
                check_url(&url).map_err(|e| invalid(format!("{REDIS_URL_ENV}: {e}")))?;
            }
        }
        if let Some(prefix) = &redis.prefix {
            if prefix.is_empty()
                || prefix.len() > 64
                || !prefix
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.:".contains(c))
            {
                return Err(invalid(format!(
                    "state.redis.prefix must be 1 to 64 of A-Z a-z 0-9 - _ . :, not {prefix:?}"
                )));
            }
        }
        if let Some(ms) = redis.timeout_ms {
            let (low, high) = TIMEOUT_RANGE_MS;
            if !(low..=high).contains(&ms) {
                return Err(invalid(format!(
                    "state.redis.timeoutMs must be from {low} to {high} ms, not {ms}"
                )));
            }
        }
        if self.backend == BackendKind::Redis && redis.effective_url().is_none() {
            return Err(invalid(format!(
                "state.backend is \"redis\" but no server is given: set state.redis.url, \
                 or the {REDIS_URL_ENV} environment variable"
            )));
        }
        Ok(())
    }
}

/// A URL the Redis client can use: `redis://` or `redis+unix://`/`unix://`
/// (TLS, `rediss://`, is not built in).
pub(crate) fn check_url(url: &str) -> Result<(), String> {
    let scheme = url.split_once("://").map(|(scheme, _)| scheme);
    match scheme {
        Some("redis" | "redis+unix" | "unix") => {}
        Some("rediss") => {
            return Err("rediss:// (TLS) is not supported by this build; \
                        use redis:// over a private network or a TLS tunnel"
                .into())
        }
        _ => {
            return Err(format!(
                "{} is not a redis:// or redis+unix:// URL",
                redact_url(url)
            ))
        }
    }
    redis::Client::open(url)
        .map(|_| ())
        .map_err(|e| format!("{} does not parse: {}", redact_url(url), e.category()))
}

/// The URL with its password (if any) replaced by `***`, fit to show: the
/// user info's, and a `pass`/`password` query parameter's. Text that is
/// not a URL is not shown at all.
pub(crate) fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "(not a URL)".to_owned();
    };
    let (rest, query) = match rest.split_once('?') {
        Some((rest, query)) => (rest, Some(query)),
        None => (rest, None),
    };
    // The user info ends at the last '@' (a password may hold '/' or '@').
    let shown = match rest.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(user, _)| user);
            format!("{scheme}://{user}:***@{host}")
        }
        None => format!("{scheme}://{rest}"),
    };
    match query {
        None => shown,
        Some(query) => {
            let pairs: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((key, _)) if is_password_key(key) => format!("{key}=***"),
                    _ => pair.to_owned(),
                })
                .collect();
            format!("{shown}?{}", pairs.join("&"))
        }
    }
}

/// A query parameter that carries a password.
fn is_password_key(key: &str) -> bool {
    key.eq_ignore_ascii_case("pass") || key.eq_ignore_ascii_case("password")
}

/// The password in a URL: a `pass`/`password` query parameter (Unix-socket
/// URLs), else its user info's — read as [`redact_url`] hides it.
pub(crate) fn url_password(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let (rest, query) = match rest.split_once('?') {
        Some((rest, query)) => (rest, Some(query)),
        None => (rest, None),
    };
    let in_query = query.and_then(|query| {
        query.split('&').find_map(|pair| {
            let (key, value) = pair.split_once('=')?;
            is_password_key(key).then_some(value)
        })
    });
    // The user info ends at the last '@' (a password may hold '/' or '@').
    in_query.or_else(|| rest.rsplit_once('@')?.0.split_once(':').map(|(_, p)| p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_show() {
        assert_eq!(
            redact_url("redis://:hunter2@cache:6379/1"),
            "redis://:***@cache:6379/1"
        );
        assert_eq!(
            redact_url("redis://app:hunter2@cache/0"),
            "redis://app:***@cache/0"
        );
        assert_eq!(
            redact_url("redis://127.0.0.1:6379"),
            "redis://127.0.0.1:6379"
        );
        let error = check_url("http://:hunter2@cache").unwrap_err();
        assert!(!error.contains("hunter2"), "{error}");
        assert_eq!(
            redact_url("redis+unix:///run/redis.sock?db=1&pass=hunter2"),
            "redis+unix:///run/redis.sock?db=1&pass=***"
        );
        assert_eq!(url_password("unix:///s?pass=hunter2"), Some("hunter2"));
        assert_eq!(
            url_password("redis://app:hu/n@ter2@cache/0"),
            Some("hu/n@ter2")
        );
        assert_eq!(url_password("redis://cache:6379"), None);
        // A password holding '/' and '@' is still hidden whole.
        assert_eq!(
            redact_url("redis://app:hu/n@ter2@cache:6379/0"),
            "redis://app:***@cache:6379/0"
        );
        assert_eq!(redact_url("hunter2"), "(not a URL)");
        let config = RedisConfig {
            url: Some("redis://:hunter2@cache".into()),
            ..RedisConfig::default()
        };
        assert!(!format!("{config:?}").contains("hunter2"));
        assert!(!serde_json::to_string(&config).unwrap().contains("hunter2"));
    }

    #[test]
    fn bad_values_name_the_key() {
        let path = Path::new("/etc/failover.json5");
        let config = StateConfig {
            backend: BackendKind::Redis,
            redis: RedisConfig {
                url: Some("rediss://cache".into()),
                ..RedisConfig::default()
            },
        };
        let error = config.validate(path).unwrap_err().to_string();
        assert!(
            error.contains("state.redis.url") && error.contains("TLS"),
            "{error}"
        );
        let config = StateConfig {
            redis: RedisConfig {
                prefix: Some("has space".into()),
                timeout_ms: Some(1),
                ..RedisConfig::default()
            },
            ..StateConfig::default()
        };
        let error = config.validate(path).unwrap_err().to_string();
        assert!(error.contains("state.redis.prefix"), "{error}");
        assert!(StateConfig::default().validate(path).is_ok());
    }
}
