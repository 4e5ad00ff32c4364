//! OAuth refresh (F-2.1): an OAuth profile past `expires` gets new tokens
//! from the provider's `oauth.tokenUrl` before it is used, and they are
//! saved under the state lock, which is held across the refresh so that
//! two processes never spend one refresh token twice.

use std::time::Duration;

use serde::Deserialize;

use super::capture;
use super::endpoint::Endpoint;
use crate::auth::CredentialKind;
use crate::provider_error::ProviderError;
use crate::state::{AuthStore, Credential};

/// Refresh this long before `expires`: a token that expires while the
/// request is in flight fails it.
pub const REFRESH_MARGIN_MS: u64 = 60_000;

/// Token lifetime assumed when the endpoint gives no `expires_in`: an hour
/// is what the providers in the seeds issue.
const DEFAULT_EXPIRES_IN_SECONDS: u64 = 3600;

/// A token endpoint that takes longer than this is down.
const REFRESH_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Deserialize)]
struct TokenReply {
    access_token: String,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
}

/// Whether `credential` must be refreshed before use at `now_ms`.
pub fn needs_refresh(credential: &Credential, now_ms: u64) -> bool {
    credential.kind == CredentialKind::OAuth
        && credential
            .expires
            .is_some_and(|expires| expires <= now_ms.saturating_add(REFRESH_MARGIN_MS))
}

/// Refreshes `profile`'s tokens and returns the fresh credential. Another
/// process may have refreshed it while this one waited for the lock; then
/// its tokens are used as they are.
pub async fn refresh(
    client: &reqwest::Client,
    store: &AuthStore,
    endpoint: &Endpoint,
    profile: &str,
    now_ms: impl Fn() -> u64,
) -> Result<Credential, ProviderError> {
    let provider = endpoint.provider.as_str();
    let state_error = |e: crate::state::StateError| {
        ProviderError::message(format!("cannot use the state of profile {profile}: {e}"))
            .with_provider(provider)
    };
    let locking = store.clone();
    let guard = tokio::task::spawn_blocking(move || locking.lock_profiles())
        .await
        .map_err(|e| ProviderError::message(format!("state lock task failed: {e}")))?
        .map_err(state_error)?;
    let mut file = guard.read().map_err(state_error)?;
    let current = file
        .credential(profile)
        .ok_or_else(|| auth_failure(provider, format!("profile {profile} is gone")))?;
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
    let Some(refresh_token) = &current.refresh else {
        return Err(auth_failure(
            provider,
            format!("the OAuth token of profile {profile} expired and it has no refresh token; log in again"),
        ));
    };
    let mut form = vec![
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token.expose()),
    ];
    if !client_id.is_empty() {
        form.push(("client_id", client_id.as_str()));
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
    let body = response
        .bytes()
        .await
        .map_err(|e| capture::transport_error(provider, e))?;
    let reply: TokenReply = serde_json::from_slice(&body).map_err(|_| {
        ProviderError::message(format!(
            "the token endpoint of {provider} answered something that is not a token reply"
        ))
        .with_provider(provider)
    })?;
    let expires = now_ms().saturating_add(
        reply
            .expires_in
            .unwrap_or(DEFAULT_EXPIRES_IN_SECONDS)
            .saturating_mul(1000),
    );
    file.set_oauth_tokens(
        profile,
        &reply.access_token,
        reply.refresh_token.as_deref(),
        expires,
    )
    .map_err(state_error)?;
    guard.write(&file).map_err(state_error)?;
    tracing::info!(profile, provider, expires, "refreshed OAuth token");
    file.credential(profile)
        .ok_or_else(|| auth_failure(provider, format!("profile {profile} is gone")))
}

fn auth_failure(provider: &str, message: String) -> ProviderError {
    ProviderError::message(message)
        .with_provider(provider)
        .with_status(401)
}
