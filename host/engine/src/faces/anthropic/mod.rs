//! The Anthropic Messages shape as the gateway's second face
//! (`POST /v1/messages`): client requests read into the runner's request,
//! replies and streams written back. Anthropic upstreams are `anthropic`.
//!
//! - `request` — a client's request: the conversation in the OpenAI
//!   shape the upstream renderers start from, Anthropic-only fields aside;
//! - `reply` — messages, stream events and errors for the client.

mod reply;
mod request;

pub(crate) use reply::{error_json, message_json, StreamEncoder};
pub use reply::{error_type, stop_reason};
pub(crate) use request::parse_request;

#[cfg(test)]
mod tests;
