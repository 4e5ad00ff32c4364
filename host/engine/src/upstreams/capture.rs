//! Turning what went wrong on the wire into the classifier's input: the
//! status, the headers that say something about retrying, a bounded
//! preview of the body, and transport failures as the error codes the
//! classifier knows (`ECONNREFUSED`, `ETIMEDOUT` …).

use std::error::Error as _;
use std::io::ErrorKind;

use failover_policy::ProviderError;

use super::redact::CAPTURE_BYTES;
use super::redirects::redirect_message;

/// Response headers worth keeping (by prefix, lower case): retry hints,
/// rate-limit windows and request ids. Nothing else is kept, so cookies and
/// the like never reach a log or a trace.
const KEPT_HEADERS: &[&str] = &[
    "retry-after",
    "x-ratelimit-",
    "ratelimit-",
    "anthropic-ratelimit-",
    "x-should-retry",
    "x-request-id",
    "request-id",
    "content-type",
];

/// The error for a response with a failing status: a redirect the client
/// did not follow is told by where it points; otherwise a bounded preview
/// of the body is read. The preview is longer than what is kept: the
/// provider's redactor cuts it to size only after redacting it, so a secret
/// straddling the cut goes whole.
pub(crate) async fn response_error(provider: &str, response: reqwest::Response) -> ProviderError {
    let status = response.status().as_u16();
    let headers = kept_headers(response.headers());
    let message = if response.status().is_redirection() {
        // One the client did not follow (another origin, or too many): its
        // body is a page saying "moved"; where it points says more.
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|value| value.to_str().ok());
        redirect_message(status, response.url(), location)
    } else {
        body_preview(response).await
    };
    let mut error = ProviderError::message(message)
        .with_provider(provider)
        .with_status(status);
    error.headers = headers.into();
    error
}

/// The first [`CAPTURE_BYTES`] of a failing response's body, as text.
async fn body_preview(mut response: reqwest::Response) -> String {
    let mut body = Vec::new();
    while body.len() < CAPTURE_BYTES {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            Ok(None) | Err(_) => break,
        }
    }
    body.truncate(CAPTURE_BYTES);
    String::from_utf8_lossy(&body).into_owned()
}

/// The kept headers of a response.
pub(crate) fn kept_headers(headers: &reqwest::header::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .filter(|(name, _)| KEPT_HEADERS.iter().any(|k| name.as_str().starts_with(k)))
        .filter_map(|(name, value)| {
            Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
        })
        .collect()
}

/// A transport failure (connect, TLS, DNS, reset, a broken body) as a
/// provider error with the code the classifier knows.
pub(crate) fn transport_error(provider: &str, error: reqwest::Error) -> ProviderError {
    let code = if error.is_timeout() {
        Some("ETIMEDOUT")
    } else {
        io_code(&error)
    };
    // Without the URL: a base URL may carry a key in its query.
    let error = error.without_url();
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    let code = code.or_else(|| {
        let lower = message.to_ascii_lowercase();
        if lower.contains("dns error") || lower.contains("failed to lookup address") {
            Some("ENOTFOUND")
        } else if lower.contains("connection closed before message completed")
            || lower.contains("incomplete")
            || lower.contains("error decoding response body")
        {
            Some("ECONNRESET")
        } else {
            None
        }
    });
    let mut captured = ProviderError::message(message).with_provider(provider);
    captured.code = code.map(str::to_owned);
    captured
}

/// The first io error kind in the chain that names a network failure, as
/// a Node-style code.
fn io_code(error: &reqwest::Error) -> Option<&'static str> {
    let mut source = error.source();
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            let code = match io.kind() {
                ErrorKind::ConnectionRefused => Some("ECONNREFUSED"),
                ErrorKind::ConnectionReset | ErrorKind::UnexpectedEof => Some("ECONNRESET"),
                ErrorKind::ConnectionAborted => Some("ECONNABORTED"),
                ErrorKind::BrokenPipe => Some("EPIPE"),
                ErrorKind::TimedOut => Some("ETIMEDOUT"),
                ErrorKind::HostUnreachable => Some("EHOSTUNREACH"),
                ErrorKind::NetworkUnreachable => Some("ENETUNREACH"),
                _ => None,
            };
            if code.is_some() {
                return code;
            }
        }
        source = cause.source();
    }
    None
}

/// How [`timeout_error`] starts its message.
const DEADLINE_MESSAGE_START: &str = "request timed out: no answer from ";

/// No answer within the attempt's deadline.
pub(crate) fn timeout_error(provider: &str, after_ms: u64) -> ProviderError {
    ProviderError::message(format!(
        "{DEADLINE_MESSAGE_START}{provider} within {:.1} s",
        after_ms as f64 / 1000.0
    ))
    .with_provider(provider)
    .with_code("ETIMEDOUT")
}

/// Whether `error` is the one [`timeout_error`] builds: the attempt ran to
/// its deadline without an answer (F-12.3), as opposed to a fast failure.
pub(crate) fn is_deadline(error: &ProviderError) -> bool {
    error.code.as_deref() == Some("ETIMEDOUT") && error.message.starts_with(DEADLINE_MESSAGE_START)
}

/// A flowing stream silent past the idle deadline (F-12.12): a timeout
/// of the attempt, but not a hang — the provider answered, then stopped.
pub(crate) fn idle_error(provider: &str, after_ms: u64) -> ProviderError {
    ProviderError::message(format!(
        "the stream from {provider} was silent for {:.1} s: the reply is incomplete",
        after_ms as f64 / 1000.0
    ))
    .with_provider(provider)
    .with_code("ETIMEDOUT")
}

/// A stream that ended before its terminal event (F-12.12): worded so
/// that a policy reads an incomplete stream, a timeout.
pub(crate) fn cut_stream_error(provider: &str) -> ProviderError {
    ProviderError::message(format!(
        "the stream from {provider} ended before a terminal event: the reply is incomplete"
    ))
    .with_provider(provider)
    .with_code("ECONNRESET")
}

/// The run's deadline passed while `provider` streamed: the reply is
/// incomplete, a timeout of the attempt (F-12.12).
pub(crate) fn stream_deadline_error(provider: &str) -> ProviderError {
    ProviderError::message(format!(
        "the run's deadline passed while {provider} streamed: the stream ended before a terminal event"
    ))
    .with_provider(provider)
    .with_code("ETIMEDOUT")
}
