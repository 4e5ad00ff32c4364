//! Where state lives (spec F-2.2).
//!
//! ```text
//! <state>/agents/<agentId>/agent/auth-profiles.json   secrets (mode 0600)
//! <state>/agents/<agentId>/agent/auth-state.json      routing state (usageStats)
//! <state>/agents/<agentId>/agent/.lock                the lock every writer takes
//! <state>/agent/auth-profiles.json                    legacy secrets, read if the above is missing
//! <state>/credentials/oauth.json                      legacy OAuth, imported once, never written
//! ```
//!
//! The layout is the seeds' (`~/.openclaw`), so an existing directory of
//! that layout can be pointed at with `--state-dir`.

use std::path::{Path, PathBuf};

use super::error::StateError;

/// Environment variable naming the state directory.
pub const STATE_DIR_ENV: &str = "FAILOVER_STATE_DIR";
/// Environment variable naming the agent.
pub const AGENT_ENV: &str = "FAILOVER_AGENT";
/// The agent used when none is named (spec §11).
pub const DEFAULT_AGENT: &str = "main";

/// The state directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateDir {
    root: PathBuf,
}

impl StateDir {
    /// At `root`.
    pub fn at(root: impl Into<PathBuf>) -> StateDir {
        StateDir { root: root.into() }
    }

    /// The per-user default: `$XDG_STATE_HOME/failover` (on Linux
    /// `~/.local/state/failover`), else the platform's local data directory,
    /// else `~/.failover`.
    pub fn default_for_user() -> Result<StateDir, StateError> {
        dirs::state_dir()
            .or_else(dirs::data_local_dir)
            .map(|base| base.join("failover"))
            .or_else(|| dirs::home_dir().map(|home| home.join(".failover")))
            .map(StateDir::at)
            .ok_or(StateError::NoStateDir)
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The files of one agent. Agent ids are single path components of
    /// letters, digits, `.`, `_` and `-`.
    pub fn agent(&self, agent_id: &str) -> Result<AgentPaths, StateError> {
        let valid = !agent_id.is_empty()
            && agent_id != "."
            && agent_id != ".."
            && agent_id.len() <= 64
            && agent_id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if !valid {
            return Err(StateError::Refused(format!(
                "agent id {agent_id:?} is not allowed: use letters, digits, '.', '_' and '-' (at most 64)"
            )));
        }
        let dir = self.root.join("agents").join(agent_id).join("agent");
        Ok(AgentPaths {
            profiles: dir.join("auth-profiles.json"),
            usage: dir.join("auth-state.json"),
            lock: dir.join(".lock"),
            legacy_profiles: self.root.join("agent").join("auth-profiles.json"),
            legacy_oauth: self.root.join("credentials").join("oauth.json"),
            dir,
        })
    }
}

/// The files of one agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentPaths {
    /// `<state>/agents/<id>/agent`: the agent's directory.
    pub dir: PathBuf,
    /// `auth-profiles.json`: secrets.
    pub profiles: PathBuf,
    /// `auth-state.json`: routing state.
    pub usage: PathBuf,
    /// The lock file every read-modify-write holds.
    pub lock: PathBuf,
    /// `<state>/agent/auth-profiles.json`, read when `profiles` is missing.
    pub legacy_profiles: PathBuf,
    /// `<state>/credentials/oauth.json`, imported on first use.
    pub legacy_oauth: PathBuf,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_the_spec() {
        let paths = StateDir::at("/s").agent("main").unwrap();
        assert_eq!(
            paths.profiles,
            Path::new("/s/agents/main/agent/auth-profiles.json")
        );
        assert_eq!(
            paths.usage,
            Path::new("/s/agents/main/agent/auth-state.json")
        );
        assert_eq!(
            paths.legacy_profiles,
            Path::new("/s/agent/auth-profiles.json")
        );
        assert_eq!(paths.legacy_oauth, Path::new("/s/credentials/oauth.json"));
    }

    #[test]
    fn agent_ids_cannot_escape_the_directory() {
        for bad in ["", ".", "..", "a/b", "../x", "a b"] {
            assert!(StateDir::at("/s").agent(bad).is_err(), "{bad:?}");
        }
        assert!(StateDir::at("/s").agent("work-2.bot_1").is_ok());
    }
}
