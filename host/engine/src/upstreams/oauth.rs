//! OAuth refresh (F-2.1): an OAuth profile past `expires` gets new tokens
//! from the provider's `oauth.tokenUrl` before it is used.
//!
//! One refresh per profile at a time, across tasks and processes: a
//! `Refresher` holds that profile's own lock (an async mutex in the
//! process, a lock file next to the state across processes) — never the
//! agent's shared state lock — while the token endpoint answers, so other
//! profiles' requests and state writes go on meanwhile. Under the profile
//! lock the credential is read again: another task or process may have
//! refreshed it while this one waited, and then its tokens are used as they
//! are, so one refresh token is never spent twice. The new tokens are saved
//! under the shared lock, briefly, unless the stored credential changed in
//! the meantime (a new login), which then wins.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;

use super::capture;
use super::redact::Redactor;
use crate::auth::CredentialKind;
use crate::config::Endpoint;
use crate::state::files::StateLock;
use crate::state::{AuthStore, Credential, StateError};
use crate::time::now_ms;
use failover_policy::ProviderError;

/// Refresh this long before `expires`: a token that expires while the
/// request is in flight fails it.
pub(crate) const REFRESH_MARGIN_MS: u64 = 60_000;

/// Token lifetime assumed when the endpoint gives no `expires_in`: an hour
/// is what the providers in the seeds issue.
const DEFAULT_EXPIRES_IN_SECONDS: u64 = 3600;

/// A token endpoint that takes longer than this is down.
const REFRESH_TIMEOUT: Duration = Duration::from_secs(30);

/// Where the per-profile refresh locks live, under the agent's directory.
const LOCK_DIR: &str = ".oauth-refresh";

#[derive(Deserialize)]
struct TokenReply {
    access_token: String,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
}

/// Whether `credential` must be refreshed before use at `now_ms`.
pub(crate) fn needs_refresh(credential: &Credential, now_ms: u64) -> bool {
    credential.kind == CredentialKind::OAuth
        && credential
            .expires
            .is_some_and(|expires| expires <= now_ms.saturating_add(REFRESH_MARGIN_MS))
}

/// Tells `redactor` the secrets of `credential`.
pub(crate) fn learn(redactor: &mut Redactor, credential: &Credential) {
    redactor.add(credential.secret.expose());
    if let Some(refresh) = &credential.refresh {
        redactor.add(refresh.expose());
    }
}

/// Refreshes OAuth profiles, one refresh per profile at a time.
#[derive(Debug, Default)]
pub(crate) struct Refresher {
    /// Each profile's in-process lock.
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl Refresher {
    fn local_lock(&self, profile: &str) -> Arc<tokio::sync::Mutex<()>> {
        self.locks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(profile.to_owned())
            .or_default()
            .clone()
    }

    /// Refreshes `profile`'s tokens and returns the fresh credential (or
    /// the one another refresher saved meanwhile). Every secret met goes
    /// to `redactor`.
    pub async fn refresh(
        &self,
        client: &reqwest::Client,
        store: &AuthStore,
        endpoint: &Endpoint,
        profile: &str,
        redactor: &mut Redactor,
    ) -> Result<Credential, ProviderError> {
        let provider = endpoint.provider.as_str();
        let state_error = |e: StateError| {
            ProviderError::message(format!("cannot use the state of profile {profile}: {e}"))
                .with_provider(provider)
        };
        let local = self.local_lock(profile);
        let _local = local.lock().await;
        let path = lock_path(store, profile);
        let _across_processes = tokio::task::spawn_blocking(move || StateLock::acquire(&path))
            .await
            .map_err(|e| ProviderError::message(format!("refresh lock task failed: {e}")))?
            .map_err(state_error)?;
        let gone = || auth_failure(provider, format!("profile {profile} is gone"));
        // Past the cache: another process may have refreshed it just now.
        let current = store
            .profiles_fresh()
            .map_err(state_error)?
            .credential(profile)
            .ok_or_else(gone)?;
        learn(redactor, &current);
        if !needs_refresh(&current, now_ms()) {
            return Ok(current);
        }
        let Some((token_url, client_id)) = &endpoint.oauth else {
            return Err(auth_failure(
                provider,
                format!(
                    "the OAuth token of profile {profile} expired and models.providers.{provider}.oauth.tokenUrl is not set to refresh it; log in again"
                ),
            ));
        };
        let Some(spent) = current.refresh.as_ref().map(|r| r.expose().to_owned()) else {
            return Err(auth_failure(
                provider,
                format!("the OAuth token of profile {profile} expired and it has no refresh token; log in again"),
            ));
        };
        let reply = request_tokens(client, provider, profile, token_url, client_id, &spent).await?;
        redactor.add(&reply.access_token);
        if let Some(refresh) = &reply.refresh_token {
            redactor.add(refresh);
        }
        save_tokens(store, profile, &spent, reply, redactor).map_err(|error| match error {
            Saved::State(e) => state_error(e),
            Saved::Gone => gone(),
        })
    }
}

/// Why new tokens were not saved.
enum Saved {
    State(StateError),
    Gone,
}

/// Saves the tokens a refresh returned, under the shared lock, briefly —
/// unless the stored credential changed during the refresh (a new login):
/// then it is kept and returned.
fn save_tokens(
    store: &AuthStore,
    profile: &str,
    spent: &str,
    reply: TokenReply,
    redactor: &mut Redactor,
) -> Result<Credential, Saved> {
    let expires = now_ms().saturating_add(
        reply
            .expires_in
            .unwrap_or(DEFAULT_EXPIRES_IN_SECONDS)
            .saturating_mul(1000),
    );
    let saved = store
        .update_profiles(|file| {
            let unchanged = file
                .credential(profile)
                .as_ref()
                .and_then(|c| c.refresh.as_ref())
                .is_some_and(|r| r.expose() == spent);
            if unchanged {
                file.set_oauth_tokens(
                    profile,
                    &reply.access_token,
                    reply.refresh_token.as_deref(),
                    expires,
                )?;
            }
            Ok((unchanged, file.credential(profile)))
        })
        .map_err(Saved::State)?;
    match saved {
        (true, Some(fresh)) => {
            tracing::info!(profile, expires = expires, "refreshed OAuth token");
            Ok(fresh)
        }
        (false, Some(stored)) => {
            tracing::info!(
                profile,
                "profile changed during its OAuth refresh; its new credential is kept"
            );
            learn(redactor, &stored);
            Ok(stored)
        }
        (_, None) => Err(Saved::Gone),
    }
}

/// The per-profile lock file: the profile id hex-encoded (any id is a
/// safe file name then).
fn lock_path(store: &AuthStore, profile: &str) -> PathBuf {
    let name: String = profile.bytes().map(|b| format!("{b:02x}")).collect();
    store
        .paths()
        .dir
        .join(LOCK_DIR)
        .join(format!("{name}.lock"))
}

/// Spends `refresh_token` at the token endpoint.
async fn request_tokens(
    client: &reqwest::Client,
    provider: &str,
    profile: &str,
    token_url: &str,
    client_id: &str,
    refresh_token: &str,
) -> Result<TokenReply, ProviderError> {
    let mut form = vec![
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token),
    ];
    if !client_id.is_empty() {
        form.push(("client_id", client_id));
    }
    let sent =
        tokio::time::timeout(REFRESH_TIMEOUT, client.post(token_url).form(&form).send()).await;
    let response = match sent {
        Err(_) => {
            return Err(capture::timeout_error(
                provider,
                REFRESH_TIMEOUT.as_millis() as u64,
            ))
        }
        Ok(Err(error)) => return Err(capture::transport_error(provider, error)),
        Ok(Ok(response)) => response,
    };
    let status = response.status();
    if !status.is_success() {
        let error = capture::response_error(provider, response).await;
        // A refused grant means the login is dead: an auth failure of this
        // profile, whatever status the token endpoint chose. A 5xx stays
        // what it is (transient).
        if status.is_client_error() {
            let mut failure = auth_failure(
                provider,
                format!(
                    "refreshing the OAuth token of profile {profile} was refused (HTTP {status})"
                ),
            );
            failure.cause = Some(Box::new(error));
            return Err(failure);
        }
        return Err(error);
    }
    let body = tokio::time::timeout(REFRESH_TIMEOUT, response.bytes())
        .await
        .map_err(|_| capture::timeout_error(provider, REFRESH_TIMEOUT.as_millis() as u64))?
        .map_err(|e| capture::transport_error(provider, e))?;
    serde_json::from_slice(&body).map_err(|_| {
        ProviderError::message(format!(
            "the token endpoint of {provider} answered something that is not a token reply"
        ))
        .with_provider(provider)
    })
}

fn auth_failure(provider: &str, message: String) -> ProviderError {
    ProviderError::message(message)
        .with_provider(provider)
        .with_status(401)
}
