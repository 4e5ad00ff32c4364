//! The gateway's routes.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;

use super::reply::{self, error_response, StreamContext};
use super::{Gateway, GatewayRunner};
use crate::chat::openai;
use crate::config::gateway::SMALL_BODY_BYTES;
use crate::replay::trace::RequestEvent;
use crate::runner::{clock::now_ms, RunOptions};
use crate::state::SessionEntry;
use crate::status::Status;

/// The header naming the session.
pub const SESSION_HEADER: &str = "x-session-id";

/// A request refused before any run: an OpenAI-style error, built lazily.
struct Refusal {
    status: StatusCode,
    kind: &'static str,
    code: Option<&'static str>,
    message: String,
}

impl Refusal {
    fn new(
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

/// The gateway's routes over `gateway`. The client key is checked before
/// anything of a body is read; bodies are bounded per route: a chat request
/// by `gateway.maxRequestBytes`, the others (which take none worth the name)
/// by [`SMALL_BODY_BYTES`].
pub fn router(gateway: Arc<Gateway>) -> Router {
    let small = Router::new()
        .route("/v1/models", get(models))
        .route("/v1/sessions/{id}/reset", post(reset_session))
        .route("/status", get(status))
        .route_layer(middleware::from_fn(small_body));
    let mut keyed = Router::new()
        .route("/v1/chat/completions", post(chat))
        .merge(small);
    // Without client keys (loopback) there is nothing to check.
    if !gateway.client_keys.is_empty() {
        keyed = keyed.route_layer(middleware::from_fn_with_state(
            gateway.clone(),
            require_client_key,
        ));
    }
    Router::new()
        .merge(keyed)
        .route(
            "/healthz",
            get(healthz).route_layer(middleware::from_fn(small_body)),
        )
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(
            gateway.clone(),
            policy_header,
        ))
        .layer(DefaultBodyLimit::max(SMALL_BODY_BYTES))
        .with_state(gateway)
}

/// Refuses a declared body past [`SMALL_BODY_BYTES`] on the routes that
/// read none, before anything of it is read.
async fn small_body(request: Request, next: Next) -> Response {
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
async fn require_client_key(
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

async fn healthz() -> Response {
    Json(json!({"status": "ok"})).into_response()
}

async fn not_found() -> Response {
    error_response(
        StatusCode::NOT_FOUND,
        "not_found_error",
        None,
        "no such route",
    )
}

async fn chat(State(gateway): State<Arc<Gateway>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let headers = parts.headers;
    let limits = gateway.limits();
    let body = match read_body(
        body,
        &headers,
        (limits.max_request_bytes, "gateway.maxRequestBytes"),
        limits.body_read_timeout,
    )
    .await
    {
        Ok(body) => body,
        Err(refused) => return refused,
    };
    let mut request = match openai::parse_request(&body) {
        Ok(request) => request,
        Err(error) => {
            return error_response(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                None,
                &error.to_string(),
            )
        }
    };
    let session = match session_id(&headers) {
        Ok(session) => session,
        Err(refused) => return refused.into_response(),
    };
    let (runner, mut options) = match route(&gateway, &request.model) {
        Ok(routed) => routed,
        Err(refused) => return refused.into_response(),
    };
    options.session = session;
    if let Some(recorder) = &gateway.recorder {
        request.record_id = Some(
            recorder.request(RequestEvent {
                id: 0,
                at: now_ms(),
                session: options.session.clone(),
                model: request.model.clone(),
                stream: request.stream,
                compaction_count: 0,
                // Parsed again only when the text is to be kept.
                content: recorder
                    .keeps_content()
                    .then(|| serde_json::from_slice::<serde_json::Value>(&body).ok())
                    .flatten()
                    .and_then(|b| b.get("messages").cloned()),
            }),
        );
    }
    let deadline = now_ms().saturating_add(runner.config().run_timeout_ms());
    options.deadline_ms = Some(deadline);
    request.deadline_ms = Some(deadline);
    let started = std::time::Instant::now();
    // The module that decides this whole run, whatever is swapped meanwhile.
    let policy = runner.policy();
    let result = runner.run_with(policy.as_ref(), &options, &request).await;
    let mut response = match result {
        Ok(outcome) => {
            tracing::info!(
                model = %outcome.model,
                profile = %outcome.profile,
                failed_attempts = outcome.attempts.len(),
                latency_ms = started.elapsed().as_millis() as u64,
                stream = request.stream,
                "served"
            );
            let late = {
                let (runner, policy) = (runner.clone(), policy.clone());
                let recorder = gateway.recorder.clone();
                move |target: crate::runner::Target, error| match runner.record_stream_failure(
                    policy.as_ref(),
                    &target,
                    &error,
                ) {
                    Ok((reason, usage)) => {
                        tracing::info!(
                            profile = %target.profile,
                            reason = reason.as_str(),
                            "recorded the stream's failure against its profile"
                        );
                        if let Some(recorder) = &recorder {
                            recorder.late_change(&target.profile, &usage);
                        }
                    }
                    Err(error) => tracing::error!(
                        profile = %target.profile,
                        %error,
                        "cannot record the stream's failure"
                    ),
                }
            };
            reply::success(
                outcome,
                StreamContext {
                    deadline_ms: Some(deadline),
                    max_bytes: limits.max_stream_bytes,
                    on_upstream_failure: Box::new(late),
                },
            )
        }
        Err(error) => {
            tracing::warn!(requested = %request.model, error = %error, "run failed");
            reply::run_error(&error)
        }
    };
    set_policy_header(&mut response, policy.as_ref());
    response
}

/// The header naming the module that decided a response.
pub const POLICY_HEADER: &str = "x-failover-policy";

fn set_policy_header(response: &mut Response, policy: &dyn failover_sandbox::Decider) {
    if let Ok(value) = HeaderValue::from_str(&policy.version().sha256) {
        response.headers_mut().insert(POLICY_HEADER, value);
    }
}

/// Responses that ran no policy carry the active module's hash.
async fn policy_header(
    State(gateway): State<Arc<Gateway>>,
    request: Request,
    next: Next,
) -> Response {
    let mut response = next.run(request).await;
    if !response.headers().contains_key(POLICY_HEADER) {
        set_policy_header(&mut response, gateway.active_policy().as_ref());
    }
    response
}

/// Which runner and options a request's `model` means; 404 when it names
/// nothing the config knows.
fn route(gateway: &Gateway, model: &str) -> Result<(Arc<GatewayRunner>, RunOptions), Refusal> {
    let unknown = |message: String| {
        Refusal::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            Some("model_not_found"),
            message,
        )
    };
    let options = RunOptions::for_requested(&gateway.default_agent, model);
    if let Some(agent) = model.strip_prefix("agent:") {
        let runner = gateway
            .agent_runner(agent)
            .ok_or_else(|| unknown(format!("no agent {agent:?} in agents.list")))?;
        return Ok((runner.clone(), options));
    }
    if model != "auto" {
        if !model.contains('/') {
            return Err(unknown(format!(
                "unknown model {model:?}: use `auto`, `agent:<id>` or `provider/model`"
            )));
        }
        gateway.config.known_model(model).map_err(unknown)?;
    }
    Ok((gateway.runner().clone(), options))
}

fn authorize(gateway: &Gateway, headers: &HeaderMap) -> Result<(), Refusal> {
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
fn session_id(headers: &HeaderMap) -> Result<Option<String>, Refusal> {
    let Some(value) = headers.get(SESSION_HEADER) else {
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

fn check_session_id(id: &str) -> Result<(), Refusal> {
    crate::state::sessions::check_session_id(id).map_err(|e| {
        Refusal::new(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            None,
            format!("header `{SESSION_HEADER}`: {e}"),
        )
    })
}

async fn models(State(gateway): State<Arc<Gateway>>) -> Response {
    let config = &gateway.config;
    let mut ids: Vec<String> = vec!["auto".into()];
    ids.extend(config.agents.list.iter().map(|a| format!("agent:{}", a.id)));
    let defaults = &config.agents.defaults.model;
    let mut named: Vec<String> = defaults.primary.iter().cloned().collect();
    named.extend(defaults.fallbacks.iter().flatten().cloned());
    for (provider, endpoint) in &config.models.providers {
        for model in endpoint.models.iter().flatten() {
            named.push(format!("{provider}/{}", model.id()));
        }
    }
    for id in named {
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    let data: Vec<_> = ids
        .iter()
        .map(|id| json!({"id": id, "object": "model", "created": 0, "owned_by": "failover"}))
        .collect();
    Json(json!({"object": "list", "data": data})).into_response()
}

async fn status(State(gateway): State<Arc<Gateway>>) -> Response {
    let runner = gateway.runner();
    let policy = runner.policy();
    match Status::gather(
        policy.as_ref(),
        runner.config(),
        runner.store(),
        runner.sessions(),
        now_ms(),
    ) {
        Ok(status) => {
            let mut report = status.to_json(policy.as_ref());
            report["agent"] = gateway.default_agent.clone().into();
            report["previousPolicy"] = gateway
                .previous_policy()
                .map_or(serde_json::Value::Null, |p| {
                    crate::status::policy_json(p.as_ref())
                });
            report["counters"] = runner.counters().values().to_json();
            Json(report).into_response()
        }
        Err(error) => error_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            None,
            &error.to_string(),
        ),
    }
}

async fn reset_session(State(gateway): State<Arc<Gateway>>, Path(id): Path<String>) -> Response {
    if let Err(refused) = check_session_id(&id) {
        return refused.into_response();
    }
    match gateway.runner().sessions().update(&id, SessionEntry::reset) {
        Ok(()) => Json(json!({"session": id, "reset": true})).into_response(),
        Err(error) => error_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            None,
            &error.to_string(),
        ),
    }
}
