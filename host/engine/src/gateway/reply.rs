//! What the gateway answers when it cannot serve: run failures as
//! OpenAI-style errors with the status a client can act on (reshaped for
//! Anthropic clients by `anthropic_errors`). Served replies are `relay`'s.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::auth::RecordedReason;
use crate::faces::openai;
use crate::runner::{Attempt, RunError, StopReason, UNSUPPORTED_FEATURE};

/// Response headers naming who served a reply.
pub(crate) const PROVIDER_HEADER: &str = "x-failover-provider";
pub(crate) const MODEL_HEADER: &str = "x-failover-model";
pub(crate) const PROFILE_HEADER: &str = "x-failover-profile";

/// An OpenAI-style error response.
pub(crate) fn error_response(
    status: StatusCode,
    kind: &str,
    code: Option<&str>,
    message: &str,
) -> Response {
    (status, Json(openai::error_json(message, kind, code))).into_response()
}

/// A failed run as a response: 429 (with `Retry-After`) when everything is
/// rate-limited, 503 when overloaded, 400 for a request no provider will
/// take, 504 past the deadline, 502 otherwise.
pub(crate) fn run_error(error: &RunError) -> Response {
    let message = error.to_string();
    let server = |code| (StatusCode::INTERNAL_SERVER_ERROR, "server_error", code);
    let (status, kind, code, attempts, retry_after) = match error {
        RunError::Exhausted(summary) if all_unsupported(&summary.attempts) => {
            // Not an outage: nothing in the chain can say what was asked.
            let (status, kind) = (StatusCode::BAD_REQUEST, "invalid_request_error");
            let message = format!(
                "no candidate of the chain supports this request: {}",
                summary
                    .attempts
                    .iter()
                    .map(|a| a.summary.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            );
            return failure(
                status,
                kind,
                UNSUPPORTED_FEATURE,
                &message,
                &summary.attempts,
                None,
            );
        }
        RunError::Exhausted(summary) => {
            let common = common_outage(&summary.attempts).or(summary.summary.common_reason);
            let (status, code) = exhausted_status(common);
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

/// Whether every candidate was passed over for a feature it cannot express.
fn all_unsupported(attempts: &[Attempt]) -> bool {
    !attempts.is_empty() && attempts.iter().all(Attempt::is_unsupported_skip)
}

/// The reason every real failure shared, when some candidates were passed
/// over for what they cannot express: the outage is what the client hears.
fn common_outage(attempts: &[Attempt]) -> Option<RecordedReason> {
    if !attempts.iter().any(Attempt::is_unsupported_skip) {
        return None;
    }
    let mut real = attempts.iter().filter(|a| !a.is_unsupported_skip());
    let first = real.next()?.reason;
    real.all(|a| a.reason == first).then_some(first)
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
