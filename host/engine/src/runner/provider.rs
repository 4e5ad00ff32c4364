//! What the runner calls: a provider, behind a trait so that tests and
//! embedders script outcomes and the gateway plugs in real HTTP clients.

use std::future::Future;

use failover_policy::ProviderError;

/// Which provider, model and profile a call is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The provider, aliases resolved (`openai`).
    pub provider: String,
    /// `provider/model`, as the chain names it.
    pub model: String,
    /// The auth profile whose credential to use (`openai:work`). The
    /// provider implementation looks the secret up; the runner never
    /// handles one.
    pub profile: String,
}

/// How a call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// The provider failed; the policy classifies the error.
    Failed(Box<ProviderError>),
    /// The attempt ran to its deadline without an answer: classified like
    /// any failure, and evidence that the model is slow (F-12.3).
    Hung(Box<ProviderError>),
    /// The caller aborted the call. A timeout-shaped abort (its message
    /// says so) counts as a timeout (F-7.5).
    Aborted(Box<ProviderError>),
    /// The runtime switched the session to another model while the call ran
    /// (`LiveSessionModelSwitchError`, F-7.4, F-9.6).
    LiveSwitch {
        /// The model the session switched to.
        model: String,
    },
}

/// The code of a skip for a candidate that cannot express the request
/// ([`Provider::cannot_express`]): the attempt's `code`, so that callers
/// tell "no candidate supports this" from an outage.
pub(crate) const UNSUPPORTED_FEATURE: &str = "unsupported_feature";

/// The code of a skip for a candidate whose provider has no stored
/// credential at all.
pub(crate) const NO_CREDENTIALS: &str = "no_credentials";

/// A model provider.
pub trait Provider: Send + Sync {
    /// What is sent.
    type Request: Sync;
    /// What comes back.
    type Reply: Send;

    /// Calls `target` with `request`.
    fn call(
        &self,
        target: &Target,
        request: &Self::Request,
    ) -> impl Future<Output = Result<Self::Reply, CallError>> + Send;

    /// Whether `reply` is still arriving when the call returns (a stream
    /// served from its first content): its success is then recorded by
    /// [`Runner::finish_reply`](super::Runner::finish_reply) when it ends,
    /// never before (F-12.12).
    fn completes_later(&self, reply: &Self::Reply) -> bool {
        let _ = reply;
        false
    }

    /// What `model` (`provider/model`) cannot express of `request`, named
    /// for the client (`field \`n\` above 1`), or `None` when it can take
    /// it. Such a candidate is skipped (a `format`-class skip, no profile
    /// state change) instead of being called and blamed on the request.
    fn cannot_express(&self, model: &str, request: &Self::Request) -> Option<String> {
        let _ = (model, request);
        None
    }
}
