//! Replies that end after their run: a stream is served at its first
//! content, and only its end says whether the attempt succeeded (F-12.12).
//! Until then nothing is recorded as a success: no `lastUsed`, no cleared
//! window, no `ok` call for the observer. [`Runner::finish_reply`] records
//! the end when it comes.
//!
//! [`Runner::finish_reply`]: super::Runner::finish_reply

use failover_policy::ProviderError;

use crate::auth::{RecordedReason, Usage};

use super::provider::Target;

/// A served reply still arriving: what recording its end needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Unfinished {
    /// Who is answering.
    pub target: Target,
    /// The profile's state as the run read it before the call (see
    /// `Runner::record_success`), or `None` to read it again.
    pub(super) seen: Option<Usage>,
    /// When the call started, on the runner's clock.
    pub started_at: u64,
    /// How long the call took to start answering (ms).
    pub answered_ms: u64,
    /// The run's candidates after the one answering that a fallback may
    /// enter, in order: where a broken reply may restart.
    pub later: Vec<String>,
}

/// How a reply that ends after its run ended.
#[derive(Debug, Clone, Copy)]
pub enum ReplyEnd<'e> {
    /// The provider's terminal event arrived: the attempt succeeded.
    Complete,
    /// The reply broke — cut, stalled, unreadable, an error event, the
    /// run's deadline passed — a failure of the attempt, classified like
    /// any other.
    Broken(&'e ProviderError),
    /// This side stopped it (the client left, a size bound): the provider
    /// neither succeeded nor failed, and nothing is recorded.
    Stopped,
}

/// What recording a broken reply did: its reason and the profile's state
/// after.
#[derive(Debug, Clone, PartialEq)]
pub struct BrokenReply {
    /// The failure's reason, as the policy classified it.
    pub reason: RecordedReason,
    /// The profile's routing state after the failure.
    pub usage: Usage,
}
