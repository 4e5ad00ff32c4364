//! The OpenAI chat-completions shape as the gateway's face: client requests
//! parsed (naming the field when one is wrong), replies, chunks and errors
//! written back.
//!
//! - `request` — a client's request; its child `plain` reads the usual
//!   request in one pass and leaves any other to the reader over a tree;
//! - `reply` — the completion, its chunks and errors for the client.

mod reply;
mod request;

pub(crate) use reply::{chunk_json, completion_json, error_json, Chunk};
#[cfg(feature = "fuzzing")]
pub(crate) use request::plain::plain_request;
pub(crate) use request::{parse_request, request_from_value, BadRequest};
