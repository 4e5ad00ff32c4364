//! Client keys: what a caller must present when the gateway listens
//! beyond loopback. Only their SHA-256 digests are kept in memory.

use std::path::Path;

use sha2::{Digest, Sha256};

/// Environment variable naming a file of client keys, one per line.
pub const CLIENT_KEYS_FILE_ENV: &str = "FAILOVER_CLIENT_KEYS_FILE";

/// The accepted client keys.
#[derive(Debug, Clone, Default)]
pub struct ClientKeys {
    digests: Vec<[u8; 32]>,
}

/// The keys file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum KeysError {
    /// The file could not be read.
    #[error("{}: {cause}", .path.display())]
    Read {
        /// The keys file.
        path: std::path::PathBuf,
        /// Why it could not be read (in the message, so not a `source`).
        cause: std::io::Error,
    },
    /// A key is shorter than the minimum.
    #[error("{}: line {line}: a client key must be at least {MIN_KEY_LEN} characters", .path.display())]
    TooShort {
        /// The keys file.
        path: std::path::PathBuf,
        /// The key's line (1-based).
        line: usize,
    },
}

/// The token of an `Authorization: Bearer …` header.
pub fn bearer(headers: &axum::http::HeaderMap) -> Option<&str> {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
}

/// Shorter keys are guessable.
const MIN_KEY_LEN: usize = 16;

impl ClientKeys {
    /// Keys from text, one per line; blank lines and `#` comments skipped.
    pub fn from_file(path: &Path) -> Result<ClientKeys, KeysError> {
        let text = std::fs::read_to_string(path).map_err(|source| KeysError::Read {
            path: path.to_owned(),
            cause: source,
        })?;
        let mut keys = ClientKeys::default();
        for (index, line) in text.lines().enumerate() {
            let key = line.trim();
            if key.is_empty() || key.starts_with('#') {
                continue;
            }
            if key.len() < MIN_KEY_LEN {
                return Err(KeysError::TooShort {
                    path: path.to_owned(),
                    line: index + 1,
                });
            }
            keys.add(key);
        }
        Ok(keys)
    }

    /// Accepts `key`.
    pub fn add(&mut self, key: &str) {
        self.digests.push(Sha256::digest(key.as_bytes()).into());
    }

    /// No key is configured.
    pub fn is_empty(&self) -> bool {
        self.digests.is_empty()
    }

    /// Whether `presented` is one of the keys. Digests are compared in
    /// full, without an early exit, so timing says nothing about a key.
    pub fn accepts(&self, presented: &str) -> bool {
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        self.digests.iter().fold(false, |found, known| {
            let diff = known
                .iter()
                .zip(&digest)
                .fold(0u8, |acc, (a, b)| acc | (a ^ b));
            found | (diff == 0)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_from_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys");
        std::fs::write(&path, "# clients\nkey-one-0123456789\n\n").unwrap();
        let keys = ClientKeys::from_file(&path).unwrap();
        assert!(keys.accepts("key-one-0123456789"));
        assert!(!keys.accepts("key-one-012345678"));
        std::fs::write(&path, "short\n").unwrap();
        let error = ClientKeys::from_file(&path).unwrap_err().to_string();
        assert!(error.contains("line 1"), "{error}");
        assert!(!error.contains("short"), "the key is not echoed: {error}");
    }
}
