//! Wire formats, with no I/O: what faces and upstreams share.
//!
//! - `json` — a cursor over JSON text and the readers built on it, for the
//!   usual request and reply read in one pass;
//! - `sse` — server-sent events, decoded incrementally;
//! - `tools` — OpenAI tool definitions, tool calls and tool results in the
//!   Anthropic shape;
//! - `images` — image content parts and blocks, both ways.

pub(crate) mod images;
pub(crate) mod json;
pub(crate) mod sse;
pub(crate) mod tools;
