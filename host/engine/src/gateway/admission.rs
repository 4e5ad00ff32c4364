//! What a request must pass before any run: the client key (checked
//! before anything of a body is read), the body's size (per route, refused
//! unread when declared over), its arrival in time, the session header and
//! the model it names. A refused body is read and thrown away while the
//! refusal goes out, so a client still sending can read it.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::reply::error_response;
use super::{Gateway, GatewayRunner};
use crate::config::gateway::SMALL_BODY_BYTES;
use crate::runner::RunOptions;

/// The header naming the session.
pub(crate) const SESSION_HEADER: &str = "x-session-id";

/// A request refused before any run: an OpenAI-style error, built lazily.
pub(super) struct Refusal {
    status: StatusCode,
    kind: &'static str,
    code: Option<&'static str>,
    message: String,
}

impl Refusal {
    pub(super) fn new(
        status: StatusCode,
        kind: &'static str,
        code: Option<&'static str>,
        message: String,
    ) -> Self {
        Refusal {
            status,
            kind,
            code,
            message,
        }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        error_response(self.status, self.kind, self.code, &self.message)
    }
}

/// Refuses a declared body past [`SMALL_BODY_BYTES`] on the routes that
/// read none, before anything of it is read.
pub(super) async fn small_body(request: Request, next: Next) -> Response {
    if declared_length(request.headers()).is_some_and(|length| length > SMALL_BODY_BYTES as u64) {
        let refusal = too_large(SMALL_BODY_BYTES, "this route takes no body");
        return refuse(request, refusal);
    }
    next.run(request).await
}

fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
}

fn too_large(limit: usize, which: &str) -> Response {
    error_response(
        StatusCode::PAYLOAD_TOO_LARGE,
        "invalid_request_error",
        Some("request_too_large"),
        &format!("the request body is over the limit of {limit} bytes ({which})"),
    )
}

/// Refuses a request without an accepted client key, before its body.
pub(super) async fn require_client_key(
    State(gateway): State<Arc<Gateway>>,
    request: Request,
    next: Next,
) -> Response {
    match authorize(&gateway, request.headers()) {
        Ok(()) => next.run(request).await,
        Err(refused) => refuse(request, refused.into_response()),
    }
}

/// Most of a refused request's body read (and thrown away) so that its
/// client, still sending, gets to read the refusal: a client that writes a
/// 16 MiB body into a closed connection sees a broken pipe, not the 401.
/// Nothing of it is kept, so memory stays flat.
const LINGER_BYTES: usize = 64 << 20;

/// How long a refused request's body is read at most.
const LINGER_TIME: std::time::Duration = std::time::Duration::from_secs(5);

/// `response` for `request`, whose body is read and discarded meanwhile
/// (a lingering close, bounded by [`LINGER_BYTES`] and [`LINGER_TIME`]).
/// A client that asked `Expect: 100-continue` sends no body after a final
/// answer: there is nothing to read (and reading would send the `100`).
pub(super) fn refuse(request: Request, response: Response) -> Response {
    let expects_continue = request
        .headers()
        .get(axum::http::header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    if expects_continue {
        return response;
    }
    let mut body = request.into_body().into_data_stream();
    tokio::spawn(async move {
        let mut read = 0usize;
        let _ = tokio::time::timeout(LINGER_TIME, async {
            while let Some(Ok(chunk)) = futures_util::StreamExt::next(&mut body).await {
                read = read.saturating_add(chunk.len());
                if read > LINGER_BYTES {
                    break;
                }
            }
        })
        .await;
    });
    response
}

/// Reads a request body of at most `limit` bytes (named `limit_name` in a
/// refusal) within the body-read timeout; a declared length over the limit
/// is refused unread.
pub(super) async fn read_body(
    body: Body,
    headers: &HeaderMap,
    (limit, limit_name): (usize, &str),
    timeout: std::time::Duration,
) -> Result<Bytes, Response> {
    let over = || too_large(limit, limit_name);
    if declared_length(headers).is_some_and(|length| length > limit as u64) {
        return Err(refuse(Request::new(body), over()));
    }
    let mut reading = std::pin::pin!(axum::body::to_bytes(body, limit));
    // A small body came with its head: no timer for it.
    let read = match futures_util::FutureExt::now_or_never(&mut reading) {
        Some(read) => Ok(read),
        None => tokio::time::timeout(timeout, reading).await,
    };
    match read {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(_)) => Err(over()),
        Err(_) => Err(error_response(
            StatusCode::REQUEST_TIMEOUT,
            "invalid_request_error",
            Some("request_timeout"),
            "the request body did not arrive in time (gateway.bodyReadTimeoutSeconds)",
        )),
    }
}

pub(super) fn authorize(gateway: &Gateway, headers: &HeaderMap) -> Result<(), Refusal> {
    if gateway.client_keys.is_empty() {
        return Ok(());
    }
    let presented = super::keys::bearer(headers)
        .or_else(|| headers.get("x-api-key").and_then(|v| v.to_str().ok()));
    match presented {
        Some(key) if gateway.client_keys.accepts(key.trim()) => Ok(()),
        Some(_) => Err(Refusal::new(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            Some("invalid_api_key"),
            "the client key is not accepted".into(),
        )),
        None => Err(Refusal::new(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            Some("missing_api_key"),
            "a client key is required: send `Authorization: Bearer <key>`".into(),
        )),
    }
}

/// The session named by the header. Header values are bytes: UTF-8 ones
/// (`x-session-id: café`) are names like any other; other bytes are
/// refused, and the refusal shows them as they came.
pub(super) fn session_id(headers: &HeaderMap) -> Result<Option<String>, Refusal> {
    // A name checked once: looked up by a `&str`, it is parsed each time.
    static SESSION: HeaderName = HeaderName::from_static(SESSION_HEADER);
    let Some(value) = headers.get(&SESSION) else {
        return Ok(None);
    };
    let id = match std::str::from_utf8(value.as_bytes()) {
        Ok(id) => id.trim(),
        Err(_) => {
            return Err(Refusal::new(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                None,
                format!(
                    "header `{SESSION_HEADER}`: {:?} is not UTF-8",
                    String::from_utf8_lossy(value.as_bytes())
                ),
            ))
        }
    };
    check_session_id(id).map(|()| Some(id.to_owned()))
}

pub(super) fn check_session_id(id: &str) -> Result<(), Refusal> {
    crate::state::sessions::check_session_id(id).map_err(|e| {
        Refusal::new(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            None,
            format!("header `{SESSION_HEADER}`: {e}"),
        )
    })
}

/// The most models one request's own chain (`model`, `models`, aliases
/// expanded) may name: every one may cost a provider call, and no sensible
/// failover plan is longer.
const MAX_ONE_OFF_CHAIN: usize = 16;

/// Which runner and options a request's `model` (and `models` list)
/// means; 404 when it names nothing the config knows, 400 when the list is
/// longer than [`MAX_ONE_OFF_CHAIN`].
pub(super) fn route(
    gateway: &Gateway,
    model: &str,
    fallbacks: &[String],
) -> Result<(Arc<GatewayRunner>, RunOptions), Refusal> {
    let unknown = |message: String| {
        Refusal::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            Some("model_not_found"),
            message,
        )
    };
    let config = &gateway.config;
    // An alias or a `models` list makes a one-off chain: the requested
    // model (unless `auto` or an agent) first, then the list, aliases expanded.
    let keyword = model == "auto" || model.starts_with("agent:");
    let named = (!keyword).then_some(model).into_iter();
    let mut chain = config.expand_aliases(named.chain(fallbacks.iter().map(String::as_str)));
    if chain.len() > MAX_ONE_OFF_CHAIN {
        return Err(Refusal::new(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            Some("too_many_models"),
            format!(
                "the request names {} models (with `models` and aliases); at most {MAX_ONE_OFF_CHAIN}",
                chain.len()
            ),
        ));
    }
    config.check_models(&chain).map_err(unknown)?;
    let runner = match model.strip_prefix("agent:") {
        Some(agent) => gateway
            .agent_runner(agent)
            .ok_or_else(|| unknown(format!("no agent {agent:?} in agents.list")))?
            .clone(),
        None => gateway.runner().clone(),
    };
    let options = if chain.is_empty() {
        RunOptions::for_requested(&gateway.default_agent, model)
    } else if keyword {
        RunOptions::for_chain(&gateway.default_agent, model, &chain)
    } else {
        let first = chain.remove(0);
        RunOptions::for_chain(&gateway.default_agent, &first, &chain)
    };
    Ok((runner, options))
}
