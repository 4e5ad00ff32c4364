//! The gateway's routes besides chat: models, sessions, status, metrics,
//! health and readiness, and the Anthropic face's other sub-routes.

use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{header, StatusCode};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use axum::{Json, Router};
use serde_json::json;
use tower::util::MapResponseLayer;

use super::admission::{check_session_id, require_client_key, small_body};
use super::header_values::with_policy_header;
use super::reply::error_response;
use super::Gateway;
use crate::config::gateway::SMALL_BODY_BYTES;
use crate::inspect::status::Status;
use crate::state::SessionEntry;
use crate::time::now_ms;

/// The gateway's routes besides chat, over `gateway`. The client key is
/// checked before anything of a body is read, and a body is bounded by
/// `SMALL_BODY_BYTES` (none of these takes one worth the name).
///
/// The chat endpoints are not among them: the gateway's front hands their
/// requests to the chat pipeline, which does itself what these layers do
/// (the key check, the policy header, the Anthropic face's error shape; a
/// chat body is bounded by its own read, `gateway.maxRequestBytes`). A
/// router's layer wraps each of its routes in one more boxed route, cloned
/// and polled on every request: two layers are ~2k instructions of a chat
/// request (docs/performance.md).
pub fn router(gateway: Arc<Gateway>) -> Router {
    let small = Router::new()
        .route("/v1/models", get(models))
        .route("/v1/sessions/{id}/reset", post(reset_session))
        .route("/status", get(status))
        .route("/metrics", get(metrics))
        .route_layer(middleware::from_fn(small_body));
    let mut keyed = small;
    // The Anthropic face's other routes (an unknown sub-route is its 404),
    // every refusal — the key check's included — in Anthropic's shape.
    let mut anthropic = Router::new().route("/v1/messages/{*rest}", any(not_found));
    // Without client keys (loopback) there is nothing to check.
    if !gateway.client_keys.is_empty() {
        let check = middleware::from_fn_with_state(gateway.clone(), require_client_key);
        keyed = keyed.route_layer(check.clone());
        anthropic = anthropic.route_layer(check);
    }
    let anthropic = anthropic.layer(middleware::from_fn(super::anthropic_errors::reshape));
    let layered = Router::new()
        .merge(keyed)
        .merge(anthropic)
        .route(
            "/healthz",
            get(healthz).route_layer(middleware::from_fn(small_body)),
        )
        .route(
            "/readyz",
            get(readyz).route_layer(middleware::from_fn(small_body)),
        )
        .fallback(not_found)
        .layer(MapResponseLayer::new(policy_header(gateway.clone())))
        .layer(DefaultBodyLimit::max(SMALL_BODY_BYTES));
    layered.with_state(gateway)
}

async fn healthz() -> Response {
    Json(json!({"status": "ok"})).into_response()
}

/// 200 when some candidate of the default chain has a usable profile now,
/// 503 otherwise; per candidate, why (never a secret).
async fn readyz(State(gateway): State<Arc<Gateway>>) -> Response {
    match super::readiness::readiness(&gateway, now_ms()) {
        Ok((true, body)) => Json(body).into_response(),
        Ok((false, body)) => (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response(),
        Err(error) => state_unreadable(&error),
    }
}

/// Prometheus' text format (version 0.0.4).
async fn metrics(State(gateway): State<Arc<Gateway>>) -> Response {
    match super::readiness::snapshot(&gateway, now_ms()) {
        Ok(snapshot) => {
            let text = gateway.metrics().render(&snapshot);
            let content_type = [(
                header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            )];
            (content_type, text).into_response()
        }
        Err(error) => state_unreadable(&error),
    }
}

fn state_unreadable(error: &dyn std::fmt::Display) -> Response {
    tracing::error!(%error, "cannot read the state");
    error_response(
        StatusCode::INTERNAL_SERVER_ERROR,
        "server_error",
        Some("internal"),
        &error.to_string(),
    )
}

async fn not_found() -> Response {
    error_response(
        StatusCode::NOT_FOUND,
        "not_found_error",
        None,
        "no such route",
    )
}

/// Responses that ran no policy carry the active module's hash. A plain
/// response map, not a `from_fn` middleware: that one boxes the rest of
/// the router and its future on every request (~3k instructions of the
/// gateway's own work, docs/performance.md).
fn policy_header(gateway: Arc<Gateway>) -> impl FnOnce(Response) -> Response + Clone {
    move |response: Response| with_policy_header(&gateway, response)
}

async fn models(State(gateway): State<Arc<Gateway>>) -> Response {
    let config = &gateway.config;
    let mut ids: Vec<String> = vec!["auto".into()];
    ids.extend(config.agents.list.iter().map(|a| format!("agent:{}", a.id)));
    ids.extend(config.models.aliases.keys().cloned());
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
    // Both SDKs' list shapes at once: OpenAI's `object`/`created`/`owned_by`,
    // Anthropic's `type`/`display_name`/`created_at` and paging fields.
    let data: Vec<_> = ids
        .iter()
        .map(|id| {
            json!({"id": id, "object": "model", "created": 0, "owned_by": "failover",
                   "type": "model", "display_name": id, "created_at": "1970-01-01T00:00:00Z"})
        })
        .collect();
    Json(json!({"object": "list", "data": data, "has_more": false,
                "first_id": ids.first(), "last_id": ids.last()}))
    .into_response()
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
                    crate::inspect::status::policy_json(p.as_ref())
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
