//! What can go wrong with the state directory and its files.

use std::path::{Path, PathBuf};

/// A state or config file could not be used. Messages name the file and,
/// for parse errors, the position; they never quote file contents.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// Reading or writing a file failed.
    // The system's words are in the message, not also a `source`: an
    // error chain printed whole would say them twice.
    #[error("{}: {cause}", .path.display())]
    Io {
        /// The file (or directory).
        path: PathBuf,
        /// What the system said.
        cause: std::io::Error,
    },
    /// The file is not valid JSON / JSON5, or a field has the wrong type.
    #[error("{}: {message} (the file was left as it is)", .path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the line and column when known.
        message: String,
    },
    /// A value is of the right type but not allowed.
    #[error("{}: {message}", .path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Which value, and why it is not allowed.
        message: String,
    },
    /// The shared state store (Redis) refused or failed an operation that
    /// cannot fall back to the local copy (a migration, a corrupt value).
    #[error("{store}: {message}")]
    Store {
        /// The store, its password hidden (`redis://…/0`) and the key when
        /// one is at fault.
        store: String,
        /// What went wrong.
        message: String,
    },
    /// No state directory was given and none could be derived.
    #[error("no state directory: pass --state-dir or set FAILOVER_STATE_DIR (no home directory was found)")]
    NoStateDir,
    /// A request that names something the store does not have, or a bad name.
    #[error("{0}")]
    Refused(String),
}

impl StateError {
    /// An I/O error on `path`.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        StateError::Io {
            path: path.to_owned(),
            cause: source,
        }
    }

    /// A `serde_json` error, with its line and column.
    pub(crate) fn json(path: &Path, error: &serde_json::Error) -> Self {
        StateError::Parse {
            path: path.to_owned(),
            message: format!(
                "{} at line {} column {}",
                describe_json(error),
                error.line(),
                error.column()
            ),
        }
    }
}

/// serde_json's message without its own " at line … column …" suffix.
fn describe_json(error: &serde_json::Error) -> String {
    let message = error.to_string();
    let suffix = format!(" at line {} column {}", error.line(), error.column());
    message.strip_suffix(&suffix).unwrap_or(&message).to_owned()
}
