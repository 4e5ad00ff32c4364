//! The one interface every provider API is reached through: how a request
//! is written and authorised, and how a whole reply and a stream are read.
//! Each API is one value of [`Upstream`]; [`super::of`] picks it.

use reqwest::RequestBuilder;

use super::auth_header;
use crate::model::{ChatRequest, Completion, StreamEvent};
use crate::state::Credential;
use crate::wire::sse::SseEvent;
use failover_policy::ProviderError;

/// A provider API as the engine speaks it. Errors carry no provider name;
/// the caller adds it.
pub(crate) trait Upstream: Sync {
    /// The request body for `model` (the provider's own model name), or why
    /// the request cannot be written in this API.
    fn body(&self, request: &ChatRequest, model: &str) -> Result<Vec<u8>, ProviderError>;

    /// `post` with the headers that authorise `credential` (and any the API
    /// requires on every call).
    fn authorise(&self, post: RequestBuilder, credential: &Credential) -> RequestBuilder;

    /// A whole (non-streaming) reply read. An in-band error, or a body that
    /// is not a reply, is a provider error carrying the body.
    fn read_whole(&self, text: String) -> Result<Completion, ProviderError>;

    /// A fresh reader of this API's stream events.
    fn decoder(&self) -> Box<dyn StreamDecode>;
}

/// Reads one API's stream, one server-sent event at a time.
pub(crate) trait StreamDecode: Send {
    /// The chat events one server-sent event carries; an error event or an
    /// unreadable one is a provider error.
    fn feed(&mut self, event: &SseEvent) -> Result<Vec<StreamEvent>, ProviderError>;

    /// Whether the API's terminal event arrived.
    fn done(&self) -> bool;

    /// The stream's id, once an event has named it.
    fn id(&self) -> &str;
}

/// `post` authorised as `Authorization: Bearer <secret>`.
pub(super) fn with_bearer(post: RequestBuilder, secret: &str) -> RequestBuilder {
    match auth_header::bearer(secret) {
        Some(value) => post.header(reqwest::header::AUTHORIZATION, value),
        // A byte no header can carry: reqwest reports the bad value.
        None => post.bearer_auth(secret),
    }
}

/// A request body that could not be serialised.
pub(super) fn unwritable(error: serde_json::Error) -> ProviderError {
    ProviderError::message(format!("cannot write the request: {error}"))
}
