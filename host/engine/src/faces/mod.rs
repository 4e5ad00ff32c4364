//! What clients speak: the gateway's two faces, each reading a client's
//! request into a [`crate::model::ChatRequest`] and writing the run's reply
//! back in the client's shape.
//!
//! - `openai` — the OpenAI chat-completions shape (`POST /v1/chat/completions`);
//! - [`anthropic`] — the Anthropic Messages shape (`POST /v1/messages`).

pub mod anthropic;
pub(crate) mod openai;
