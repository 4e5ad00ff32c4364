//! The gateway's routes.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;

use super::reply::{self, error_response};
use super::{Gateway, GatewayRunner, MAX_REQUEST_BYTES};
use crate::chat::openai;
use crate::providers::endpoint;
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

/// The gateway's routes over `gateway`.
pub fn router(gateway: Arc<Gateway>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/v1/models", get(models))
        .route("/v1/sessions/{id}/reset", post(reset_session))
        .route("/healthz", get(healthz))
        .route("/status", get(status))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(
            gateway.clone(),
            policy_header,
        ))
        .layer(DefaultBodyLimit::max(MAX_REQUEST_BYTES))
        .with_state(gateway)
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

async fn chat(State(gateway): State<Arc<Gateway>>, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(refused) = authorize(&gateway, &headers) {
        return refused.into_response();
    }
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
            reply::success(outcome)
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

fn set_policy_header(response: &mut Response, policy: &dyn crate::Decider) {
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
        endpoint::known_model(&gateway.config, model).map_err(unknown)?;
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

fn session_id(headers: &HeaderMap) -> Result<Option<String>, Refusal> {
    let Some(value) = headers.get(SESSION_HEADER) else {
        return Ok(None);
    };
    let id = value.to_str().ok().map(str::trim).unwrap_or_default();
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

async fn models(State(gateway): State<Arc<Gateway>>, headers: HeaderMap) -> Response {
    if let Err(refused) = authorize(&gateway, &headers) {
        return refused.into_response();
    }
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

async fn status(State(gateway): State<Arc<Gateway>>, headers: HeaderMap) -> Response {
    if let Err(refused) = authorize(&gateway, &headers) {
        return refused.into_response();
    }
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

async fn reset_session(
    State(gateway): State<Arc<Gateway>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if let Err(refused) = authorize(&gateway, &headers) {
        return refused.into_response();
    }
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
