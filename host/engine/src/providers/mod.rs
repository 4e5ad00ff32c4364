//! Real provider I/O: the HTTP client that implements
//! [`crate::runner::Provider`] for OpenAI-compatible and Anthropic APIs.
//!
//! - [`HttpProvider`] — the client: auth, deadlines, streaming.
//! - `capture` — failures on the wire as the classifier's input.
//! - [`oauth`] — refreshing expired OAuth profiles (F-2.1).
//! - `redact` — the one choke point secrets never pass.

mod auth_header;
mod buffer;
pub(crate) mod capture;
mod http;
pub mod oauth;
pub(crate) mod redact;
mod redirects;
mod upstream;

pub use crate::config::{Api, Endpoint};
pub use http::HttpProvider;
