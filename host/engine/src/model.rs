//! Text chat in one shape, the one every face and upstream translates to
//! and from.
//!
//! - [`ChatRequest`] — what a client asked: system prompt, turns, sampling.
//! - [`Completion`], [`StreamEvent`], [`ChatReply`] — what came back.
//!
//! What one shape can say and the other cannot (images, several choices,
//! response formats …) is passed through untouched to OpenAI-shaped
//! upstreams and refused, by name, for Anthropic ones. Tools translate both
//! ways: definitions, `tool_choice`, assistant tool calls and tool results
//! go to Anthropic as `tool_use`/`tool_result` blocks, and Anthropic's
//! `tool_use` comes back as OpenAI tool calls, whole or streamed.

use std::pin::Pin;

use futures_util::Stream;
use serde_json::{Map, Value};

use failover_policy::ProviderError;

/// Who said a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The client (the `user` role).
    User,
    /// The model (the `assistant` role).
    Assistant,
}

impl Role {
    /// The wire spelling (the same in both shapes).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One text turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Who said it.
    pub role: Role,
    /// The turn's text.
    pub content: String,
}

/// A chat request, independent of the wire shape.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatRequest {
    /// What the client asked for: `auto`, `agent:<id>` or `provider/model`.
    pub model: String,
    /// A one-off fallback list (`models`, OpenRouter's convention): tried
    /// in order after `model`, or instead of it when `model` is `auto`.
    pub models: Vec<String>,
    /// The system prompt (several system messages joined by blank lines).
    pub system: Option<String>,
    /// The conversation's turns, oldest first (system messages excluded).
    pub messages: Vec<Message>,
    /// The most tokens to generate (`max_tokens`); `None` leaves it to the
    /// upstream (Anthropic, which requires one, gets a default).
    pub max_tokens: Option<u64>,
    /// Sampling temperature, passed on as given.
    pub temperature: Option<f64>,
    /// Nucleus sampling (`top_p`), passed on as given.
    pub top_p: Option<f64>,
    /// Stop sequences (empty for none).
    pub stop: Vec<String>,
    /// Whether the client asked for a streamed reply.
    pub stream: bool,
    /// OpenAI-shaped messages as the client sent them, kept when some turn
    /// is more than text (images, tool calls): sent as they are to
    /// OpenAI-shaped upstreams.
    pub openai_messages: Option<Vec<Value>>,
    /// OpenAI request fields with no counterpart here (`tools`,
    /// `response_format`, `seed` …), passed through to OpenAI-shaped upstreams.
    pub openai_extra: Map<String, Value>,
    /// What only the OpenAI shape can say, named for the error when the
    /// request must be translated (`field \`tools\``, `messages[2] (image_url)`).
    pub openai_only: Vec<String>,
    /// Anthropic request fields from a Messages client with no counterpart
    /// in the OpenAI shape (`top_k`, `thinking`, `metadata` …), passed
    /// through to Anthropic upstreams.
    pub anthropic_extra: Map<String, Value>,
    /// What of those only the Anthropic shape can say, named: an
    /// OpenAI-shaped candidate is passed over for it.
    pub anthropic_only: Vec<String>,
    /// Wall-clock deadline of the whole run (ms since the epoch); attempts
    /// are cut to it.
    pub deadline_ms: Option<u64>,
    /// The request's id in a trace being recorded; its calls' outcomes are
    /// recorded under it.
    pub record_id: Option<u64>,
    /// Hold a streamed reply until the provider's terminal event, so that
    /// a break is a failed attempt the run fails over from
    /// (`gateway.streamRecovery: "buffered"`).
    pub buffered: bool,
}

/// What a candidate speaking `api` cannot express of a request whose
/// shape-only features are `openai_only` and `anthropic_only`, named for
/// the client; `None` when it can take the request. The one rule the HTTP
/// provider applies live and replay applies to recorded requests.
pub(crate) fn unexpressible(
    api: crate::config::Api,
    openai_only: &[String],
    anthropic_only: &[String],
) -> Option<String> {
    let only = match api {
        crate::config::Api::OpenAiChat => anthropic_only,
        crate::config::Api::AnthropicMessages => openai_only,
    };
    (!only.is_empty()).then(|| only.join(", "))
}

/// Why generation stopped, in OpenAI's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishReason {
    /// A natural end, or a stop sequence (`stop`).
    Stop,
    /// The token limit was reached (`length`).
    Length,
    /// The provider's content filter, or a refusal, stopped it
    /// (`content_filter`).
    ContentFilter,
    /// The model called tools (`tool_calls`).
    ToolCalls,
    /// A stop sequence ended it (OpenAI says `stop`; Anthropic names the
    /// sequence, when the provider said which).
    StopSequence(Option<String>),
    /// Anything else, as the provider said it.
    Other(String),
}

impl FinishReason {
    /// OpenAI's `finish_reason`.
    pub(crate) fn as_openai(&self) -> &str {
        match self {
            FinishReason::Stop | FinishReason::StopSequence(_) => "stop",
            FinishReason::Length => "length",
            FinishReason::ContentFilter => "content_filter",
            FinishReason::ToolCalls => "tool_calls",
            FinishReason::Other(other) => other,
        }
    }
}

/// Token counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenUsage {
    /// Tokens of the whole prompt, cached ones included (OpenAI's
    /// convention; Anthropic's `input_tokens` plus its cache reads and
    /// writes).
    pub prompt_tokens: u64,
    /// Tokens generated (Anthropic's `output_tokens`).
    pub completion_tokens: u64,
    /// Of `prompt_tokens`, those read from the provider's cache, when it
    /// said (OpenAI's `prompt_tokens_details.cached_tokens`, Anthropic's
    /// `cache_read_input_tokens`).
    pub cached_tokens: Option<u64>,
    /// Generated tokens spent on reasoning, when it said (OpenAI's
    /// `completion_tokens_details.reasoning_tokens`).
    pub reasoning_tokens: Option<u64>,
}

/// A whole reply.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The provider's id for it.
    pub id: String,
    /// The reply's text.
    pub text: String,
    /// Why generation stopped.
    pub finish: FinishReason,
    /// Token counts, when the provider reported them.
    pub usage: Option<TokenUsage>,
    /// Fields of an OpenAI-shaped upstream's message beyond `role` and
    /// `content` (`tool_calls`, `refusal`), passed through to the client.
    pub message_extra: Map<String, Value>,
    /// An OpenAI-shaped upstream's whole reply: OpenAI clients get it as it
    /// is (every choice of `n`, `logprobs`, `system_fingerprint`, usage
    /// details), with the gateway's id and model.
    pub raw: Option<crate::wire::json::whole_reply::WholeReply>,
}

/// One piece of a streamed tool call, in OpenAI's delta shape: a call's
/// first piece has its id and function name, its arguments (JSON text)
/// arrive in fragments.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolCallDelta {
    /// Which call of the reply (0, 1 … for parallel calls).
    pub index: u32,
    /// The call's id, on its first piece only.
    pub id: Option<String>,
    /// The function's name, on its first piece only.
    pub name: Option<String>,
    /// The next fragment of the arguments.
    pub arguments: String,
}

/// One piece of a streamed reply.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// A piece of the reply's text.
    Text(String),
    /// A piece of a tool call: content like text, so a reply of tool calls
    /// alone is a reply.
    ToolCall(ToolCallDelta),
    /// What an OpenAI-shaped upstream's chunk says beyond the events above
    /// (choices after the first, `logprobs`, a `refusal` delta, the
    /// `system_fingerprint`): chunk fields relayed to OpenAI clients as a
    /// chunk of their own; other clients have no place for them.
    Extra(Map<String, Value>),
    /// The end of the reply: why it stopped, and the token counts when the
    /// provider reported them.
    Finish {
        /// Why generation stopped.
        reason: FinishReason,
        /// Token counts, when the provider reported them.
        usage: Option<TokenUsage>,
    },
}

/// The rest of a stream after its first events; an error ends it.
pub(crate) type EventStream =
    Pin<Box<dyn Stream<Item = Result<StreamEvent, ProviderError>> + Send>>;

impl StreamEvent {
    /// The bytes of content it carries, for the bounds on a reply's size.
    pub(crate) fn content_bytes(&self) -> u64 {
        let len = match self {
            StreamEvent::Text(text) => text.len(),
            StreamEvent::ToolCall(call) => {
                call.arguments.len()
                    + call.name.as_ref().map_or(0, String::len)
                    + call.id.as_ref().map_or(0, String::len)
            }
            StreamEvent::Finish { .. } => 0,
            StreamEvent::Extra(fields) => fields
                .iter()
                .map(|(k, v)| k.len() + v.to_string().len())
                .sum(),
        };
        u64::try_from(len).unwrap_or(u64::MAX)
    }

    /// Whether it is content (text or a tool call): the first content is
    /// the point of no return for failing over.
    pub(crate) fn is_content(&self) -> bool {
        match self {
            StreamEvent::Text(_) | StreamEvent::ToolCall(_) => true,
            // A refusal is the model's answer too.
            StreamEvent::Extra(fields) => fields
                .get("choices")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|c| !c.pointer("/delta/refusal").is_none_or(Value::is_null)),
            StreamEvent::Finish { .. } => false,
        }
    }
}

/// A streamed reply whose start has arrived: the run counts it as served
/// once content has come, and may fail over only before that.
pub struct StreamReply {
    /// The provider's id for the reply.
    pub id: String,
    /// Events read before the call returned (they include the first
    /// content).
    pub first: Vec<StreamEvent>,
    /// The events after [`Self::first`], as they arrive.
    pub rest: EventStream,
}

impl std::fmt::Debug for StreamReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamReply")
            .field("id", &self.id)
            .field("first", &self.first)
            .finish_non_exhaustive()
    }
}

/// What a provider call returns.
#[derive(Debug)]
pub enum ChatReply {
    /// A whole reply. Boxed: a completion is a few hundred bytes, and a
    /// reply is moved a few dozen times on its way out of a run (unboxed,
    /// those copies are a tenth of the gateway's own instructions).
    Complete(Box<Completion>),
    /// A streamed reply, its start arrived.
    Stream(StreamReply),
}

/// A request that cannot be sent in the shape a provider needs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct TranslateError(pub String);
