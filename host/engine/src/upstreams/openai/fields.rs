//! OpenAI's words for why a reply finished and what it used, read into the
//! model's, for whole replies and stream chunks alike.

use serde_json::Value;

use crate::model::{FinishReason, TokenUsage};

/// The finish reason an OpenAI `finish_reason` names.
pub(super) fn finish_named(name: &str) -> FinishReason {
    match name {
        "stop" => FinishReason::Stop,
        "length" => FinishReason::Length,
        "content_filter" => FinishReason::ContentFilter,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// Token counts from a parsed `usage` object (a stream's chunks).
pub(super) fn usage(value: Option<&Value>) -> Option<TokenUsage> {
    let value = value?;
    // `get` chains, not `pointer`: a pointer allocates each of its tokens.
    let detail = |details: &str, count: &str| value.get(details)?.get(count)?.as_u64();
    Some(TokenUsage {
        prompt_tokens: value.get("prompt_tokens")?.as_u64()?,
        completion_tokens: value.get("completion_tokens")?.as_u64()?,
        cached_tokens: detail("prompt_tokens_details", "cached_tokens"),
        reasoning_tokens: detail("completion_tokens_details", "reasoning_tokens"),
    })
}
