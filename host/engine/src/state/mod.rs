//! The state directory: where profiles and their routing state live, and
//! how they are read and written safely across processes.

pub mod backend;
pub mod blocking;
pub(crate) mod dir_watch;
pub mod error;
pub mod files;
mod legacy_oauth;
pub mod paths;
mod read_cache;
pub(crate) mod read_scope;
pub mod secrets;
mod session;
pub mod sessions;
pub mod shared;
pub mod store;
pub(crate) mod usage_file;
pub mod watch;

pub use backend::Backend;
pub use error::StateError;
pub use paths::AgentPaths;
pub use paths::{StateDir, AGENT_ENV, DEFAULT_AGENT, STATE_DIR_ENV};

pub use secrets::{Credential, ProfileSummary, ProfilesFile, Secret};
pub use session::SessionEntry;
pub use session::{ModelOverride, ProfilePin};
pub use sessions::SessionStore;
pub(crate) use store::stored_profiles;
pub use store::BackendStatus;
pub use store::UpdateError;
pub use store::{stored_profile, AuthStore};
pub use watch::StateWatch;
