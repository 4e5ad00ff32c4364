//! `auth-state.json`: routing state, apart from secrets (spec F-2.2, F-6.3).
//!
//! ```json
//! {"version": 1, "usageStats": {"openai:work": {"lastUsed": 1736160000000,
//!   "cooldownUntil": 1736160600000, "errorCount": 2}}}
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::error::StateError;
use crate::auth::Usage;

/// The file format version this build writes.
pub(crate) const USAGE_VERSION: u64 = 1;

/// The parsed `auth-state.json`. Unknown top-level keys are kept.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub(crate) struct UsageFile {
    pub version: u64,
    #[serde(rename = "usageStats")]
    pub usage_stats: BTreeMap<String, Usage>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl UsageFile {
    /// Reads the file; `None` when it does not exist.
    pub fn read(path: &Path) -> Result<Option<UsageFile>, StateError> {
        // Parsed in two steps so that type errors keep their line and column
        // (serde's `flatten` would lose them).
        let Some(value) = super::files::read_json::<Value>(path)? else {
            return Ok(None);
        };
        let Value::Object(mut document) = value else {
            return Err(StateError::Invalid {
                path: path.to_owned(),
                message: "expected a JSON object at the top".into(),
            });
        };
        let version = match document.remove("version") {
            None => USAGE_VERSION,
            Some(Value::Number(n)) if n.as_u64().is_some_and(|v| v <= USAGE_VERSION) => {
                n.as_u64().unwrap_or(1)
            }
            Some(other) => {
                return Err(StateError::Invalid {
                    path: path.to_owned(),
                    message: format!(
                        "version {other} is newer than this build understands ({USAGE_VERSION})"
                    ),
                })
            }
        };
        let usage_stats = match document.remove("usageStats") {
            None => BTreeMap::new(),
            Some(stats) => {
                // Re-read the original text for a positioned error message.
                serde_json::from_value(stats).map_err(|_| match reparse_for_position(path) {
                    Some(error) => error,
                    None => StateError::Invalid {
                        path: path.to_owned(),
                        message: "`usageStats` is not a map of profile id to usage".into(),
                    },
                })?
            }
        };
        Ok(Some(UsageFile {
            version,
            usage_stats,
            other: document,
        }))
    }

    /// Ready to write: the current version stamped.
    pub(crate) fn stamped(mut self) -> UsageFile {
        self.version = USAGE_VERSION;
        self
    }
}

/// The typed parse of the whole file, whose error carries line and column.
fn reparse_for_position(path: &Path) -> Option<StateError> {
    #[derive(Deserialize)]
    struct Strict {
        #[serde(rename = "usageStats")]
        _usage_stats: BTreeMap<String, Usage>,
    }
    let bytes = std::fs::read(path).ok()?;
    serde_json::from_slice::<Strict>(&bytes)
        .err()
        .map(|e| StateError::json(path, &e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::RecordedReason;

    #[test]
    fn type_errors_have_a_position_and_unknown_keys_survive() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("auth-state.json");
        std::fs::write(
            &path,
            "{\n \"usageStats\": {\n  \"openai:a\": {\"errorCount\": \"two\"}\n }\n}",
        )
        .unwrap();
        let error = UsageFile::read(&path).unwrap_err().to_string();
        assert!(
            error.contains("auth-state.json") && error.contains("line 3"),
            "{error}"
        );

        std::fs::write(
            &path,
            r#"{"usageStats":{"openai:a":{"errorCount":2}},"note":"keep"}"#,
        )
        .unwrap();
        let file = UsageFile::read(&path).unwrap().unwrap();
        assert_eq!(file.usage_stats["openai:a"].error_count, 2);
        assert_eq!(file.other["note"], "keep");
    }

    /// A file written when a profile held one cooldown, scoped or not,
    /// reads into the per-model form and is written back in it.
    #[test]
    fn a_single_scoped_cooldown_reads_as_that_models_own() {
        let text = r#"{"openai:a":{"cooldownUntil":9000,"cooldownReason":"rate_limit","cooldownModel":"gpt-4o","errorCount":1},
                       "openai:b":{"cooldownUntil":7000,"cooldownReason":"overloaded"}}"#;
        let usage: BTreeMap<String, Usage> = serde_json::from_str(text).unwrap();
        let scoped = &usage["openai:a"];
        assert_eq!(scoped.cooldown_until, None);
        let cooldown = scoped.model_cooldown("gpt-4o").unwrap();
        assert_eq!(
            (cooldown.until, cooldown.reason),
            (9000, RecordedReason::RateLimit)
        );
        assert_eq!(usage["openai:b"].cooldown_until, Some(7000));
        assert!(usage["openai:b"].model_cooldowns.is_empty());

        let written = serde_json::to_value(scoped).unwrap();
        assert_eq!(written["modelCooldowns"][0]["model"], "gpt-4o");
        assert!(written.get("cooldownModel").is_none(), "{written}");
        let back: Usage = serde_json::from_value(written).unwrap();
        assert_eq!(&back, scoped);
    }
}
