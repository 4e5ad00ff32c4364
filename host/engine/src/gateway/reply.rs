//! What the gateway answers: completions (whole or as SSE), and run
//! failures as OpenAI-style errors with the status a client can act on.

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::StreamExt;
use serde_json::{json, Value};

use crate::auth::RecordedReason;
use crate::chat::guard::{self, Broken};
use crate::chat::openai::{self, Chunk};
use crate::chat::{ChatReply, StreamEvent, StreamReply};
use crate::runner::{clock::now_ms, Attempt, RunError, RunOutcome, StopReason, Target};
use failover_sandbox::provider_error::ProviderError;

/// Response headers naming who served a reply.
pub const PROVIDER_HEADER: &str = "x-failover-provider";
pub const MODEL_HEADER: &str = "x-failover-model";
pub const PROFILE_HEADER: &str = "x-failover-profile";

/// An OpenAI-style error response.
pub fn error_response(
    status: StatusCode,
    kind: &str,
    code: Option<&str>,
    message: &str,
) -> Response {
    (status, Json(openai::error_json(message, kind, code))).into_response()
}

/// What relaying a streamed reply needs besides the reply.
pub struct StreamContext {
    /// The run's deadline (ms since the epoch): it bounds the whole stream.
    pub deadline_ms: Option<u64>,
    /// The most content one streamed reply may carry.
    pub max_bytes: u64,
    /// Told when the upstream breaks after the first content, to record
    /// that against the profile that served.
    pub on_upstream_failure: Box<dyn FnOnce(Target, ProviderError) + Send>,
}

/// A served run: the completion, or the stream, with who served it.
pub fn success(outcome: RunOutcome<ChatReply>, context: StreamContext) -> Response {
    let created = now_ms() / 1000;
    let model = outcome.model.clone();
    let mut response = match outcome.reply {
        ChatReply::Complete(completion) => {
            let id = response_id(&completion.id);
            Json(openai::completion_json(&id, &model, created, &completion)).into_response()
        }
        ChatReply::Stream(stream) => {
            let target = Target {
                provider: outcome.provider.clone(),
                model: outcome.model.clone(),
                profile: outcome.profile.clone(),
            };
            relay(stream, target, created, context)
        }
    };
    let headers = response.headers_mut();
    for (name, value) in [
        (PROVIDER_HEADER, &outcome.provider),
        (MODEL_HEADER, &outcome.model),
        (PROFILE_HEADER, &outcome.profile),
    ] {
        if let Ok(value) = HeaderValue::from_str(value) {
            headers.insert(name, value);
        }
    }
    response
}

/// A stream as OpenAI chunks: the role, each piece, then `[DONE]` — or,
/// when it breaks past the first byte (no failing over then), an error
/// event and no `[DONE]`, so a client never takes a cut reply for whole.
fn relay(stream: StreamReply, target: Target, created: u64, context: StreamContext) -> Response {
    let id = response_id(&stream.id);
    let model = target.model.clone();
    let tool_first = stream
        .first
        .iter()
        .find(|e| e.is_content())
        .is_some_and(|e| matches!(e, StreamEvent::ToolCall(_)));
    let chunk = move |chunk: Chunk<'_>| sse(&openai::chunk_json(&id, &model, created, chunk));
    let head = chunk(Chunk::Role { tool_first });
    let events = guard::guard(stream, context.deadline_ms, context.max_bytes);
    let state = Some((events, Some(context.on_upstream_failure)));
    let tail = futures_util::stream::unfold(state, move |state| {
        let chunk = chunk.clone();
        let target = target.clone();
        async move {
            let (mut events, mut on_failure) = state?;
            Some(match events.next().await {
                Some(Ok(event)) => (chunk(Chunk::Event(&event)), Some((events, on_failure))),
                Some(Err(broken)) => {
                    tracing::warn!(
                        model = %target.model,
                        profile = %target.profile,
                        code = broken.code(),
                        error = %broken.message(),
                        "stream ended early"
                    );
                    if let (Broken::Upstream(error), Some(report)) = (&broken, on_failure.take()) {
                        report(target, error.clone());
                    }
                    let body = openai::error_json(
                        &broken.message(),
                        "upstream_error",
                        Some(broken.code()),
                    );
                    (sse(&body), None)
                }
                None => (Bytes::from_static(b"data: [DONE]\n\n"), None),
            })
        }
    });
    let body = futures_util::stream::once(async move { head })
        .chain(tail)
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

fn sse(value: &Value) -> Bytes {
    Bytes::from(format!("data: {value}\n\n"))
}

fn response_id(upstream: &str) -> String {
    if upstream.is_empty() {
        format!("chatcmpl-failover-{}", now_ms())
    } else {
        upstream.to_owned()
    }
}

/// A failed run as a response: 429 (with `Retry-After`) when everything is
/// rate-limited, 503 when overloaded, 400 for a request no provider will
/// take, 504 past the deadline, 502 otherwise.
pub fn run_error(error: &RunError) -> Response {
    let message = error.to_string();
    let server = |code| (StatusCode::INTERNAL_SERVER_ERROR, "server_error", code);
    let (status, kind, code, attempts, retry_after) = match error {
        RunError::Exhausted(summary) => {
            let (status, code) = exhausted_status(summary.summary.common_reason);
            let retry_after = summary
                .summary
                .ready_at
                .filter(|at| *at > summary.now_ms)
                .map(|at| (at - summary.now_ms).div_ceil(1000));
            let attempts = summary.attempts.as_slice();
            (status, "upstream_error", code, attempts, retry_after)
        }
        RunError::Stopped {
            reason,
            attempts,
            attempt,
        } => {
            let (status, kind, code) = stopped_status(*reason);
            // The upstream's own words say what is wrong with the request.
            let message = format!("{message} — {}", attempt.summary);
            return failure(status, kind, code, &message, attempts, None);
        }
        RunError::DeadlineExceeded { attempts } => {
            let (status, kind) = (StatusCode::GATEWAY_TIMEOUT, "upstream_error");
            (status, kind, "deadline_exceeded", attempts.as_slice(), None)
        }
        RunError::NoModel => {
            let (status, kind) = (StatusCode::NOT_FOUND, "invalid_request_error");
            (status, kind, "model_not_found", &[][..], None)
        }
        // A policy that traps or decides nonsense fails the request, loudly
        // (no silent answer from another module); the host stays up and
        // the next request gets a fresh instance.
        RunError::Policy(_) => {
            let (status, kind, code) = server("policy_error");
            (status, kind, code, &[][..], None)
        }
        RunError::State(_) => {
            let (status, kind, code) = server("internal");
            (status, kind, code, &[][..], None)
        }
    };
    failure(status, kind, code, &message, attempts, retry_after)
}

/// An exhausted chain's status: what all its attempts shared, if that is
/// something a client can act on.
fn exhausted_status(common: Option<RecordedReason>) -> (StatusCode, &'static str) {
    match common {
        Some(RecordedReason::RateLimit) => (StatusCode::TOO_MANY_REQUESTS, "rate_limited"),
        Some(RecordedReason::Overloaded) => (StatusCode::SERVICE_UNAVAILABLE, "overloaded"),
        Some(RecordedReason::Billing) => (StatusCode::PAYMENT_REQUIRED, "insufficient_quota"),
        _ => (StatusCode::BAD_GATEWAY, "all_candidates_failed"),
    }
}

/// A stopped run's status, type and code.
fn stopped_status(reason: StopReason) -> (StatusCode, &'static str, &'static str) {
    match reason {
        StopReason::ContextOverflow => (
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "context_length_exceeded",
        ),
        StopReason::Format => (
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "invalid_request",
        ),
        StopReason::SessionExpired => {
            (StatusCode::BAD_GATEWAY, "upstream_error", "session_expired")
        }
        StopReason::Aborted | StopReason::Exhausted => {
            (StatusCode::BAD_GATEWAY, "upstream_error", "upstream_failed")
        }
    }
}

/// An error response listing the attempts (no secrets: profile ids,
/// reasons, statuses, summaries), with `Retry-After` when known.
fn failure(
    status: StatusCode,
    kind: &str,
    code: &str,
    message: &str,
    attempts: &[Attempt],
    retry_after: Option<u64>,
) -> Response {
    let mut body = openai::error_json(message, kind, Some(code));
    if !attempts.is_empty() {
        body["error"]["attempts"] = attempts
            .iter()
            .map(|a| {
                json!({"model": a.model, "profile": a.profile, "reason": a.reason.as_str(),
                       "status": a.status, "summary": a.summary})
            })
            .collect();
    }
    let mut response = (status, Json(body)).into_response();
    if let Some(seconds) = retry_after {
        if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
    }
    response
}
