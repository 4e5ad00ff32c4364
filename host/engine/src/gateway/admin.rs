//! The admin endpoint of `failover serve`: swap the policy module, roll it
//! back, see which is active. It listens on loopback only, and every call
//! needs the token `serve` writes (mode 0600) under the state directory,
//! next to a small file giving the admin address — so `failover policy swap`
//! finds both with no flags.
//!
//! ```text
//! <state>/gateway/admin.json    {"address": "127.0.0.1:PORT", "pid": N}
//! <state>/gateway/admin-token   the bearer token
//! ```

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::Gateway;
use crate::inspect::status::policy_json;
use crate::state::{files, StateDir, StateError};
use failover_policy::{Admission, PolicyLoader};

/// Largest module accepted: the default policy is under 1 MiB; 64 MiB is
/// far past any policy and bounds what an upload can cost.
pub(crate) const MAX_MODULE_BYTES: usize = 64 << 20;

/// Where `serve` says where its admin endpoint is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdminAddress {
    /// The admin endpoint's address (loopback).
    pub address: SocketAddr,
    /// The id of the `serve` process that published it.
    pub pid: u32,
}

/// The admin files of a state directory.
#[derive(Debug, Clone)]
pub struct AdminFiles {
    /// `<state>/gateway/admin.json`: the address and the process id.
    pub address: PathBuf,
    /// `<state>/gateway/admin-token`: the bearer token (mode 0600).
    pub token: PathBuf,
}

impl AdminFiles {
    /// The files under `state`.
    pub fn of(state: &StateDir) -> AdminFiles {
        let dir = state.root().join("gateway");
        AdminFiles {
            address: dir.join("admin.json"),
            token: dir.join("admin-token"),
        }
    }

    /// Writes a fresh token and the address (both 0600, atomically);
    /// returns the token.
    pub fn publish(&self, address: SocketAddr) -> Result<String, StateError> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes)
            .map_err(|e| StateError::Refused(format!("no randomness for the admin token: {e}")))?;
        let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        files::write_atomic(&self.token, format!("{token}\n").as_bytes())?;
        files::write_json_atomic(
            &self.address,
            &AdminAddress {
                address,
                pid: std::process::id(),
            },
        )?;
        Ok(token)
    }

    /// Reads what a running `serve` published.
    pub fn read(&self) -> Result<(AdminAddress, String), StateError> {
        let address: AdminAddress = files::read_json(&self.address)?.ok_or_else(|| {
            StateError::Refused(format!(
                "no running gateway: {} does not exist (is `failover serve` running with this state directory?)",
                self.address.display()
            ))
        })?;
        let token = std::fs::read_to_string(&self.token)
            .map_err(|e| StateError::io(&self.token, e))?
            .trim()
            .to_owned();
        Ok((address, token))
    }

    /// Removes both files (on shutdown), if they are still this process's.
    pub fn withdraw(&self) {
        let ours = files::read_json::<AdminAddress>(&self.address)
            .ok()
            .flatten()
            .is_some_and(|a| a.pid == std::process::id());
        if ours {
            remove(&self.address);
            remove(&self.token);
        }
    }
}

fn remove(path: &Path) {
    let _ = std::fs::remove_file(path);
}

/// What the admin routes need.
pub struct Admin {
    /// The gateway whose policy the routes swap and show.
    pub gateway: Arc<Gateway>,
    /// What checks an uploaded module and makes it a policy.
    pub loader: Arc<dyn PolicyLoader>,
    /// The bearer token every admin call must present.
    pub token: String,
}

/// The admin routes. The token is checked before anything of a body is
/// read.
pub fn router(admin: Arc<Admin>) -> Router {
    Router::new()
        .route("/admin/policy", get(show))
        .route("/admin/policy/swap", post(swap))
        .route("/admin/policy/rollback", post(rollback))
        .route_layer(middleware::from_fn_with_state(admin.clone(), require_token))
        .layer(DefaultBodyLimit::max(MAX_MODULE_BYTES))
        .with_state(admin)
}

async fn require_token(State(admin): State<Arc<Admin>>, request: Request, next: Next) -> Response {
    match authorized(&admin, request.headers()) {
        Ok(()) => next.run(request).await,
        Err(refused) => super::admission::refuse(request, *refused),
    }
}

fn authorized(admin: &Admin, headers: &HeaderMap) -> Result<(), Box<Response>> {
    let presented = super::keys::bearer(headers).unwrap_or_default();
    let mut keys = super::ClientKeys::default();
    keys.add(&admin.token);
    if keys.accepts(presented) {
        Ok(())
    } else {
        let refusal = (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": "the admin token is missing or wrong"})),
        );
        Err(Box::new(refusal.into_response()))
    }
}

fn state_json(gateway: &Gateway) -> serde_json::Value {
    json!({
        "active": policy_json(gateway.active_policy().as_ref()),
        "previous": gateway.previous_policy().map(|p| policy_json(p.as_ref())),
        "rollbacks": gateway.rollback_depth(),
    })
}

async fn show(State(admin): State<Arc<Admin>>) -> Response {
    Json(state_json(&admin.gateway)).into_response()
}

/// The body is the module's bytes. The gate runs off the async threads
/// (compiling is CPU work); a refused module never serves.
async fn swap(State(admin): State<Arc<Admin>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let limits = admin.gateway.limits();
    let body = match super::admission::read_body(
        body,
        &parts.headers,
        (MAX_MODULE_BYTES, "a policy module's largest size"),
        limits.body_read_timeout,
    )
    .await
    {
        Ok(body) => body,
        Err(refused) => return refused,
    };
    let started = std::time::Instant::now();
    let loader = admin.loader.clone();
    let checked = tokio::task::spawn_blocking(move || loader.load(&body)).await;
    let Admission { policy, report } = match checked {
        Ok(result) => result,
        Err(e) => {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                Json(json!({"error": format!("the gate failed: {e}")})),
            )
                .into_response()
        }
    };
    let Some(policy) = policy else {
        tracing::warn!(report = %report, "policy module refused");
        let body = json!({"accepted": false, "report": report, "active": policy_json(admin.gateway.active_policy().as_ref())});
        return (StatusCode::UNPROCESSABLE_ENTITY, Json(body)).into_response();
    };
    let replaced = admin.gateway.swap_policy(policy);
    let active = admin.gateway.active_policy();
    tracing::info!(active = %active.version(), replaced = %replaced.version(), "policy swapped");
    let mut body = state_json(&admin.gateway);
    body["accepted"] = true.into();
    body["report"] = report.into();
    body["swapMs"] = (started.elapsed().as_secs_f64() * 1000.0).into();
    Json(body).into_response()
}

async fn rollback(State(admin): State<Arc<Admin>>) -> Response {
    match admin.gateway.rollback_policy() {
        Some(active) => {
            tracing::info!(active = %active.version(), "policy rolled back");
            Json(state_json(&admin.gateway)).into_response()
        }
        None => (
            StatusCode::CONFLICT,
            Json(json!({"error": "no previous policy to roll back to"})),
        )
            .into_response(),
    }
}
