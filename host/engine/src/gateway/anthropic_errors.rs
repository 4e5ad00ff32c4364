//! Errors in the Anthropic shape for Anthropic-shaped clients: whatever
//! refuses a `/v1/messages` request (the client key, the body, the model,
//! a failed run, an unknown sub-route) answers as the Messages API would,
//! `{"type": "error", "error": {"type", "message"}}`, so the official
//! SDK raises the matching exception with the gateway's words.

use axum::body::{to_bytes, Body};
use axum::extract::Request;
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use serde_json::Value;

use crate::faces::anthropic;

/// The most of an error body read to reshape it: errors are small; a
/// larger body passes unchanged.
const MAX_ERROR_BODY: usize = 1 << 20;

/// Middleware of the `/v1/messages…` routes: reshapes a JSON error.
pub(super) async fn reshape(request: Request, next: Next) -> Response {
    reshape_response(next.run(request).await).await
}

/// `response` with a JSON error in it reshaped; any other as it is.
pub(super) async fn reshape_response(response: Response) -> Response {
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    let failed = response.status().is_client_error() || response.status().is_server_error();
    if !failed || !is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = to_bytes(body, MAX_ERROR_BODY).await else {
        return Response::from_parts(parts, Body::empty());
    };
    let Some(reshaped) = reshaped(parts.status.as_u16(), &bytes) else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Response::from_parts(parts, Body::from(reshaped.to_string()))
}

/// An OpenAI-shaped error body as an Anthropic one; the gateway's extra
/// fields (`code`, `attempts`) stay beside the message.
fn reshaped(status: u16, body: &[u8]) -> Option<Value> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let error = value.get("error")?.as_object()?;
    let message = error.get("message")?.as_str()?;
    let mut out = anthropic::error_json(status, message);
    for field in ["code", "attempts"] {
        if let Some(extra) = error.get(field).filter(|v| !v.is_null()) {
            out["error"][field] = extra.clone();
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_errors_become_anthropic_errors() {
        let body = br#"{"error":{"message":"all models are rate-limited","type":"upstream_error","param":null,"code":"rate_limited","attempts":[{"model":"a/b"}]}}"#;
        let out = reshaped(429, body).unwrap();
        assert_eq!(out["type"], "error");
        assert_eq!(out["error"]["type"], "rate_limit_error");
        assert_eq!(out["error"]["message"], "all models are rate-limited");
        assert_eq!(out["error"]["code"], "rate_limited");
        assert_eq!(out["error"]["attempts"][0]["model"], "a/b");
        assert_eq!(reshaped(500, b"not json"), None);
        assert_eq!(reshaped(401, br#"{"detail":"x"}"#), None);
    }
}
