//! Served replies in the client's shape: a whole completion, or a stream
//! relayed piece by piece within the run's deadline and a size bound — and,
//! when it breaks past the first content, either restarted on the run's
//! later candidates (`gateway.streamRecovery: "continue"`) or ended with an
//! error event so a client never takes a cut reply for whole.

use axum::body::{Body, Bytes, HttpBody as _};
use axum::http::{header, HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::future::BoxFuture;
use futures_util::StreamExt;

use crate::faces::anthropic::{self, StreamEncoder};
use crate::faces::openai::{self, Chunk};
use crate::gateway::header_values;
use crate::gateway::header_values::set_policy_hash;
use crate::gateway::reply::{MODEL_HEADER, PROFILE_HEADER, PROVIDER_HEADER};
use crate::model::{ChatReply, StreamEvent, StreamReply};
use crate::runner::{RunOutcome, Target};
use crate::time::now_ms;
use crate::upstreams::guard::{self, Broken};

/// The wire shape a client speaks, and so the shape of its answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Face {
    /// OpenAI chat completions (`/v1/chat/completions`).
    OpenAi,
    /// Anthropic Messages (`/v1/messages`).
    Anthropic,
}

/// What relaying a streamed reply needs besides the reply.
pub(crate) struct StreamContext {
    /// The run's deadline (ms since the epoch): it bounds the whole stream.
    pub deadline_ms: Option<u64>,
    /// The most content one streamed reply may carry.
    pub max_bytes: u64,
    /// Told once how the stream ended, to record it: only a complete
    /// stream is the attempt's success (F-12.12).
    pub on_end: Box<dyn FnOnce(StreamEnd) + Send>,
    /// Restarts the reply elsewhere when the provider breaks it, if the
    /// route recovers streams by continuing.
    pub restart: Option<Restarter>,
}

/// Runs the reply again on the run's later candidates; `None` when none
/// serves it.
pub(crate) type Restarter = Box<dyn FnOnce() -> BoxFuture<'static, Option<Restart>> + Send>;

/// A reply restarted on another candidate: its stream, who serves it, and
/// how to relay it.
pub(crate) struct Restart {
    /// The new reply.
    pub stream: StreamReply,
    /// Who serves it.
    pub target: Target,
    /// Its own end and restart.
    pub context: StreamContext,
}

/// How a relayed stream ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StreamEnd {
    /// The provider's terminal event arrived.
    Complete,
    /// It stopped early, and the client was told so.
    Broken(Broken),
    /// The provider broke it and it went on from another candidate.
    Restarted(Broken),
    /// The client went away before the end.
    ClientLeft,
}

/// Tells its callback how the stream ended, exactly once: a stream
/// dropped before its end is one the client left — or, while a break is
/// being restarted, the break.
struct EndReport {
    report: Option<Box<dyn FnOnce(StreamEnd) + Send>>,
    /// What a drop reports.
    on_drop: StreamEnd,
}

impl EndReport {
    fn new(report: Box<dyn FnOnce(StreamEnd) + Send>) -> Self {
        EndReport {
            report: Some(report),
            on_drop: StreamEnd::ClientLeft,
        }
    }

    fn report(&mut self, end: StreamEnd) {
        if let Some(report) = self.report.take() {
            report(end);
        }
    }
}

impl Drop for EndReport {
    fn drop(&mut self) {
        let end = std::mem::replace(&mut self.on_drop, StreamEnd::ClientLeft);
        self.report(end);
    }
}

/// A served run in `face`'s shape: the completion, or the stream, with
/// headers naming who served it. `context` is made only for a stream.
pub fn success(
    outcome: RunOutcome<ChatReply>,
    context: impl FnOnce() -> StreamContext,
    face: Face,
    policy: &str,
) -> Response {
    let created = now_ms() / 1000;
    let stream = match outcome.reply {
        ChatReply::Complete(mut completion) => {
            // The upstream's id moves to the answer: the completion's own
            // copy is not read again.
            let id = response_id(std::mem::take(&mut completion.id), face);
            let model = &outcome.model;
            let mut response = match face {
                // Built as it is sent: a `String`'s response first sets a
                // `text/plain` type for the served headers to replace.
                Face::OpenAi => Response::new(Body::from(openai::completion_json(
                    &id,
                    model,
                    created,
                    *completion,
                ))),
                // Its type is the one `Json` sets, as the served headers'.
                Face::Anthropic => {
                    Json(anthropic::message_json(&id, model, &completion)).into_response()
                }
            };
            // Its length as the router would set it: the body's exact size.
            let length = response.body().size_hint().exact();
            *response.headers_mut() = header_values::served_json(
                &outcome.provider,
                model,
                &outcome.profile,
                policy,
                length,
            );
            return response;
        }
        ChatReply::Stream(stream) => stream,
    };
    let target = Target {
        provider: outcome.provider,
        model: outcome.model,
        profile: outcome.profile,
    };
    let mut stream = stream;
    let id = response_id(std::mem::take(&mut stream.id), face);
    let writer: Box<dyn StreamWriter> = match face {
        Face::OpenAi => Box::new(OpenAiWriter {
            id,
            model: target.model.clone(),
            created,
            fingerprint: None,
        }),
        Face::Anthropic => Box::new(AnthropicWriter::new(&id, &target.model)),
    };
    let served_by = [
        (&PROVIDER, &header_values::PROVIDER, &target.provider),
        (&MODEL, &header_values::MODEL, &target.model),
        (&PROFILE, &header_values::PROFILE, &target.profile),
    ]
    .map(|(name, slot, value)| (name, header_values::value_of(slot, value)));
    let mut response = relay(stream, target, context(), writer);
    let headers = response.headers_mut();
    for (name, value) in served_by {
        if let Some(value) = value {
            headers.insert(name.clone(), value);
        }
    }
    set_policy_hash(&mut response, policy);
    response
}

// The served-by header names, checked once instead of on every reply (a
// name from a `&str` is validated byte by byte each time). A static clone
// copies no bytes.
static PROVIDER: HeaderName = HeaderName::from_static(PROVIDER_HEADER);
static MODEL: HeaderName = HeaderName::from_static(MODEL_HEADER);
static PROFILE: HeaderName = HeaderName::from_static(PROFILE_HEADER);

/// How a relayed stream is written in one client shape.
trait StreamWriter: Send {
    /// What opens the stream, before its first event.
    fn head(&mut self, tool_first: bool) -> String;
    /// One event of the reply.
    fn event(&mut self, event: &StreamEvent) -> String;
    /// The end of a stream cut past its first content.
    fn broken(&mut self, message: &str, code: &str) -> String;
    /// The reply starting over from `to`, after a break coded `code`.
    fn restart(&mut self, to: &Target, code: &str) -> String;
    /// The end of a whole stream.
    fn done(&mut self) -> String;
}

struct OpenAiWriter {
    id: String,
    model: String,
    created: u64,
    /// The upstream's `system_fingerprint`, once seen: on every chunk
    /// after, as OpenAI sends it (clients keep the last chunk's).
    fingerprint: Option<serde_json::Value>,
}

impl OpenAiWriter {
    fn chunk(&mut self, chunk: Chunk<'_>) -> String {
        if let Chunk::Event(StreamEvent::Extra(fields)) = chunk {
            if let Some(fingerprint) = fields.get("system_fingerprint") {
                self.fingerprint = Some(fingerprint.clone());
            }
        }
        let mut json = openai::chunk_json(&self.id, &self.model, self.created, chunk);
        if let Some(fingerprint) = &self.fingerprint {
            json["system_fingerprint"] = fingerprint.clone();
        }
        sse(&json)
    }
}

impl StreamWriter for OpenAiWriter {
    fn head(&mut self, tool_first: bool) -> String {
        self.chunk(Chunk::Role { tool_first })
    }
    fn event(&mut self, event: &StreamEvent) -> String {
        self.chunk(Chunk::Event(event))
    }
    fn broken(&mut self, message: &str, code: &str) -> String {
        sse(&openai::error_json(message, "upstream_error", Some(code)))
    }
    /// A chunk that opens the assistant's message again, naming the model
    /// that goes on (every chunk after names it too) and why, in a
    /// `failover` field SDKs keep beside the chunk's own.
    fn restart(&mut self, to: &Target, code: &str) -> String {
        let from = std::mem::replace(&mut self.model, to.model.clone());
        self.fingerprint = None;
        let mut json = openai::chunk_json(
            &self.id,
            &self.model,
            self.created,
            Chunk::Role { tool_first: false },
        );
        json["failover"] = serde_json::json!({
            "restarted": true, "from": from, "model": self.model, "reason": code,
        });
        sse(&json)
    }
    fn done(&mut self) -> String {
        "data: [DONE]\n\n".to_owned()
    }
}

struct AnthropicWriter {
    encoder: StreamEncoder,
    head: Option<String>,
}

impl AnthropicWriter {
    fn new(id: &str, model: &str) -> Self {
        let (encoder, head) = StreamEncoder::start(id, model);
        AnthropicWriter {
            encoder,
            head: Some(head),
        }
    }
}

impl StreamWriter for AnthropicWriter {
    fn head(&mut self, _tool_first: bool) -> String {
        self.head.take().unwrap_or_default()
    }
    fn event(&mut self, event: &StreamEvent) -> String {
        self.encoder.event(event)
    }
    fn broken(&mut self, message: &str, _code: &str) -> String {
        // A cut upstream is the gateway's upstream failing: a 502's kind.
        self.encoder.error(502, message)
    }
    /// The cut block closed: the answer starts over in a block of its own.
    fn restart(&mut self, _to: &Target, _code: &str) -> String {
        self.encoder.restart()
    }
    fn done(&mut self) -> String {
        // `message_stop` came with the finish event.
        String::new()
    }
}

/// A stream in the writer's shape: its head, each piece, then its end — or,
/// when it breaks, a restart elsewhere or the writer's error, the failure
/// recorded.
fn relay(
    stream: StreamReply,
    target: Target,
    context: StreamContext,
    mut writer: Box<dyn StreamWriter>,
) -> Response {
    let tool_first = stream
        .first
        .iter()
        .find(|e| e.is_content())
        .is_some_and(|e| matches!(e, StreamEvent::ToolCall(_)));
    let head = Bytes::from(writer.head(tool_first));
    let relaying = Relaying {
        events: guard::guard(stream, context.deadline_ms, context.max_bytes),
        writer,
        end: EndReport::new(context.on_end),
        restart: context.restart,
        target,
        tools_sent: false,
    };
    let tail = futures_util::stream::unfold(Some(relaying), |state| async move {
        let mut relaying = state?;
        let (text, more) = relaying.next().await;
        Some((Bytes::from(text), more.then_some(relaying)))
    });
    let body = futures_util::stream::once(async move { head })
        .chain(tail)
        .filter(|bytes| std::future::ready(!bytes.is_empty()))
        .map(Ok::<_, std::convert::Infallible>);
    let mut response = Body::from_stream(body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// A stream being relayed: its events, the writer, its end's report, and
/// where it may restart.
struct Relaying {
    events: guard::GuardedStream,
    writer: Box<dyn StreamWriter>,
    end: EndReport,
    restart: Option<Restarter>,
    target: Target,
    /// A tool call reached the client: a restart would repeat its index
    /// with other arguments, so there is none.
    tools_sent: bool,
}

impl Relaying {
    /// The text of the next event, and whether more follows.
    async fn next(&mut self) -> (String, bool) {
        match self.events.next().await {
            Some(Ok(event)) => {
                self.tools_sent |= matches!(event, StreamEvent::ToolCall(_));
                (self.writer.event(&event), true)
            }
            Some(Err(broken)) => self.broke(broken).await,
            None => {
                self.end.report(StreamEnd::Complete);
                (self.writer.done(), false)
            }
        }
    }

    /// After a break: the reply restarted on another candidate when the
    /// route continues, the provider broke it and only text was sent;
    /// otherwise the client's error event.
    async fn broke(&mut self, broken: guard::Broken) -> (String, bool) {
        let target = &self.target;
        tracing::warn!(
            provider = %target.provider,
            model = %target.model,
            profile = %target.profile,
            code = broken.code(),
            error = %broken.message(),
            "stream ended early"
        );
        let restart = self.restart.take();
        let restartable = matches!(broken, guard::Broken::Upstream(_)) && !self.tools_sent;
        // A client that leaves while the restart runs leaves a break.
        self.end.on_drop = StreamEnd::Broken(broken.clone());
        let restarted = match restart {
            Some(restart) if restartable => restart().await,
            _ => None,
        };
        self.end.on_drop = StreamEnd::ClientLeft;
        let Some(next) = restarted else {
            let text = self.writer.broken(&broken.message(), broken.code());
            self.end.report(StreamEnd::Broken(broken));
            return (text, false);
        };
        tracing::info!(from = %target.model, to = %next.target.model, "stream restarted");
        let text = self.writer.restart(&next.target, broken.code());
        self.end.report(StreamEnd::Restarted(broken));
        let context = next.context;
        self.events = guard::guard(next.stream, context.deadline_ms, context.max_bytes);
        self.end = EndReport::new(context.on_end);
        self.restart = context.restart;
        self.target = next.target;
        (text, true)
    }
}

fn sse(value: &serde_json::Value) -> String {
    format!("data: {value}\n\n")
}

/// The reply's id: the upstream's, or one of ours in the face's style.
fn response_id(upstream: String, face: Face) -> String {
    match (upstream.is_empty(), face) {
        (false, _) => upstream,
        (true, Face::OpenAi) => format!("chatcmpl-failover-{}", now_ms()),
        (true, Face::Anthropic) => format!("msg_failover_{}", now_ms()),
    }
}
