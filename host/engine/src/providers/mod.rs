//! Real provider I/O (issue 5): the HTTP client that implements
//! [`crate::runner::Provider`] for OpenAI-compatible and Anthropic APIs.
//!
//! - [`endpoint`] — where a provider lives and which API it speaks.
//! - [`HttpProvider`] — the client: auth, deadlines, streaming.
//! - [`capture`] — failures on the wire as the classifier's input.
//! - [`oauth`] — refreshing expired OAuth profiles (F-2.1).
//! - [`redact`] — the one choke point secrets never pass.

pub mod capture;
pub mod endpoint;
mod http;
pub mod oauth;
pub mod redact;

pub use endpoint::{Api, Endpoint};
pub use http::{HttpProvider, MAX_REPLY_BYTES};
