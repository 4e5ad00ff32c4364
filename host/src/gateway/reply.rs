//! What the gateway answers: completions (whole or as SSE), and run
//! failures as OpenAI-style errors with the status a client can act on.

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::StreamExt;
use serde_json::{json, Value};

use crate::auth::RecordedReason;
use crate::chat::{openai, ChatReply, StreamEvent};
use crate::runner::{clock::now_ms, Attempt, RunError, RunOutcome, StopReason};

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

/// A served run: the completion, or the stream, with who served it.
pub fn success(outcome: RunOutcome<ChatReply>) -> Response {
    let created = now_ms() / 1000;
    let model = outcome.model.clone();
    let mut response = match outcome.reply {
        ChatReply::Complete(completion) => {
            let id = response_id(&completion.id);
            Json(openai::completion_json(&id, &model, created, &completion)).into_response()
        }
        ChatReply::Stream(stream) => {
            let id = response_id(&stream.id);
            let chunk = {
                let (id, model) = (id.clone(), model.clone());
                move |event: Option<&StreamEvent>| {
                    sse(&openai::chunk_json(&id, &model, created, event))
                }
            };
            let mut head = vec![chunk(None)];
            head.extend(stream.first.iter().map(|e| chunk(Some(e))));
            let served = format!("{} via {}", outcome.model, outcome.profile);
            let tail = futures_util::stream::unfold(Some(stream.rest), move |rest| {
                let chunk = chunk.clone();
                let served = served.clone();
                async move {
                    let mut rest = rest?;
                    Some(match rest.next().await {
                        Some(Ok(event)) => (chunk(Some(&event)), Some(rest)),
                        // Past the first byte there is no failing over:
                        // end the stream with an error event.
                        Some(Err(error)) => {
                            tracing::warn!(%served, error = %error.message, "stream broke after it started");
                            let message = format!(
                                "the upstream stream broke: {}",
                                first_line(&error.message)
                            );
                            (
                                sse(&openai::error_json(
                                    &message,
                                    "upstream_error",
                                    Some("stream_interrupted"),
                                )),
                                None,
                            )
                        }
                        None => (Bytes::from_static(b"data: [DONE]\n\n"), None),
                    })
                }
            });
            let body = futures_util::stream::iter(head)
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

fn sse(value: &Value) -> Bytes {
    Bytes::from(format!("data: {value}\n\n"))
}

fn first_line(text: &str) -> &str {
    let line = text.lines().next().unwrap_or_default();
    let mut end = line.len().min(300);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    &line[..end]
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
    let (status, kind, code, attempts, retry_after) = match error {
        RunError::Exhausted(summary) => {
            let (status, code) = match summary.summary.common_reason {
                Some(RecordedReason::RateLimit) => (StatusCode::TOO_MANY_REQUESTS, "rate_limited"),
                Some(RecordedReason::Overloaded) => (StatusCode::SERVICE_UNAVAILABLE, "overloaded"),
                Some(RecordedReason::Billing) => {
                    (StatusCode::PAYMENT_REQUIRED, "insufficient_quota")
                }
                _ => (StatusCode::BAD_GATEWAY, "all_candidates_failed"),
            };
            let retry_after = summary
                .summary
                .ready_at
                .filter(|at| *at > summary.now_ms)
                .map(|at| (at - summary.now_ms).div_ceil(1000));
            (
                status,
                "upstream_error",
                code,
                summary.attempts.as_slice(),
                retry_after,
            )
        }
        RunError::Stopped {
            reason,
            attempts,
            attempt,
        } => {
            let (status, kind, code) = match reason {
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
            };
            // The upstream's own words say what is wrong with the request.
            let message = format!("{message} — {}", attempt.summary);
            return failure(status, kind, code, &message, attempts, None);
        }
        RunError::DeadlineExceeded { attempts } => (
            StatusCode::GATEWAY_TIMEOUT,
            "upstream_error",
            "deadline_exceeded",
            attempts.as_slice(),
            None,
        ),
        RunError::NoModel => (
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            "model_not_found",
            &[][..],
            None,
        ),
        // A policy that traps or decides nonsense fails the request, loudly
        // (no silent answer from another module); the host stays up and
        // the next request gets a fresh instance.
        RunError::Policy(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            "policy_error",
            &[][..],
            None,
        ),
        RunError::State(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            "internal",
            &[][..],
            None,
        ),
    };
    failure(status, kind, code, &message, attempts, retry_after)
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
