//! What providers speak: the HTTP client that implements
//! [`crate::runner::Provider`], and one [`Upstream`] per provider API that
//! it reaches every endpoint through.
//!
//! - [`HttpProvider`] — the client: credentials, deadlines, streaming;
//! - `api` — the [`Upstream`] interface: a request written and authorised,
//!   a whole reply and a stream read; [`of`] picks an API's value;
//! - `openai`, `anthropic` — the two APIs;
//! - `stream` — an upstream's stream read as it arrives;
//! - [`guard`] — a served stream bounded by the run's deadline and a size;
//! - `capture` — failures on the wire as the classifier's input;
//! - [`oauth`] — refreshing expired OAuth profiles (F-2.1);
//! - `redact` — the one choke point secrets never pass.

pub(crate) mod anthropic;
mod api;
mod auth_header;
mod buffer;
pub(crate) mod capture;
pub mod guard;
mod http;
pub mod oauth;
pub(crate) mod openai;
pub(crate) mod redact;
mod redirects;
mod stream;

pub use crate::config::{Api, Endpoint};
pub(crate) use api::{StreamDecode, Upstream};
pub use http::HttpProvider;

/// The one value of [`Upstream`] that speaks `api`.
pub(crate) fn of(api: Api) -> &'static dyn Upstream {
    match api {
        Api::OpenAiChat => &openai::OpenAiChat,
        Api::AnthropicMessages => &anthropic::AnthropicMessages,
    }
}
