//! What `failover status` and the gateway's `GET /status` report: each
//! provider's profile order as the policy decides it, each profile's state,
//! and the sessions on a fallback. Never a secret: profiles appear by id
//! and fingerprint.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

use crate::auth::{OrderRequest, RankedProfile, Usage};
use crate::config::Config;
use crate::names::canonical_provider;
use crate::runner::OverrideSource;
use crate::state::{
    stored_profiles, AuthStore, BackendStatus, ProfileSummary, SessionEntry, SessionStore,
};
use failover_policy::Decider;

/// One provider's order.
#[derive(Debug, Clone)]
pub struct ProviderStatus {
    /// The provider, aliases resolved.
    pub provider: String,
    /// Where the order comes from: `auth.order`, `auth.profiles` or the
    /// stored profiles.
    pub order_source: &'static str,
    /// Its profiles in the order the policy gives, each available or blocked.
    pub ranked: Vec<RankedProfile>,
    /// Stored profiles of the provider the order leaves out.
    pub not_in_order: Vec<String>,
}

/// Everything the status shows, gathered at one instant.
#[derive(Debug, Clone)]
pub struct Status {
    /// When it was gathered (ms since the epoch).
    pub now: u64,
    /// What may be shown of each stored profile.
    pub summaries: Vec<ProfileSummary>,
    /// Each profile's routing state, by profile id.
    pub usage: BTreeMap<String, Usage>,
    /// Each provider's order, the providers sorted by name.
    pub providers: Vec<ProviderStatus>,
    /// `(session id, one line about its fallback)`.
    pub on_fallback: Vec<(String, String)>,
    /// The default chain's candidates: which can be tried now, and why not.
    pub chain: Vec<crate::inspect::readiness::CandidateReadiness>,
    /// Where the routing state lives and whether it answers.
    pub state: BackendStatus,
}

pub use crate::inspect::readiness::StatusError;

impl Status {
    /// Reads the state and asks `policy` for each provider's order at `now`.
    pub fn gather(
        policy: &dyn Decider,
        config: &Config,
        store: &AuthStore,
        sessions: &SessionStore,
        now: u64,
    ) -> Result<Status, StatusError> {
        let summaries = store.summaries()?;
        let usage = store.usage()?;
        let stored = stored_profiles(&summaries, &usage);
        let configured = config.configured_profiles();
        let mut names: BTreeSet<String> = stored.iter().map(|p| p.provider.clone()).collect();
        names.extend(configured.iter().map(|c| c.provider.clone()));
        names.extend(
            config
                .auth
                .order
                .keys()
                .map(|k| canonical_provider(k).to_owned()),
        );
        let mut providers = Vec::new();
        for provider in names {
            let explicit_order = config.explicit_order(&provider);
            let order_source = if explicit_order.as_ref().is_some_and(|o| !o.is_empty()) {
                "auth.order"
            } else if configured.iter().any(|c| c.provider == provider) {
                "auth.profiles"
            } else {
                "stored profiles, round-robin"
            };
            let ranked = policy.order_profiles(&OrderRequest {
                provider: provider.clone(),
                explicit_order,
                configured: configured.clone(),
                stored: stored.clone(),
                model: None,
                now_ms: now,
            })?;
            let not_in_order = stored
                .iter()
                .filter(|p| p.provider == provider && !ranked.iter().any(|r| r.id == p.id))
                .map(|p| p.id.clone())
                .collect();
            providers.push(ProviderStatus {
                provider,
                order_source,
                ranked,
                not_in_order,
            });
        }
        let on_fallback = sessions
            .all()?
            .iter()
            .filter_map(|(id, entry)| fallback_line(entry).map(|line| (id.clone(), line)))
            .collect();
        Ok(Status {
            now,
            summaries,
            usage,
            providers,
            on_fallback,
            chain: crate::inspect::readiness::chain_readiness(policy, config, store, now)?,
            state: store.backend_status(),
        })
    }

    /// A profile's summary.
    pub fn summary(&self, id: &str) -> Option<&ProfileSummary> {
        self.summaries.iter().find(|s| s.id == id)
    }

    /// A profile's routing state (default when it has none).
    pub fn usage_of(&self, id: &str) -> Usage {
        self.usage.get(id).cloned().unwrap_or_default()
    }

    /// The JSON form: `policy`, `providers`, `sessionsOnFallback`,
    /// `chain`, `now`.
    pub fn to_json(&self, policy: &dyn Decider) -> Value {
        let providers: Vec<Value> = self
            .providers
            .iter()
            .map(|p| {
                let order: Vec<Value> = p
                    .ranked
                    .iter()
                    .map(|r| {
                        let mut entry = self
                            .summary(&r.id)
                            .map(summary_json)
                            .unwrap_or_else(|| json!({"id": r.id}));
                        if let (Some(entry), Value::Object(state)) = (
                            entry.as_object_mut(),
                            state_json(&self.usage_of(&r.id), self.now),
                        ) {
                            entry.extend(state);
                            entry.insert("available".into(), r.available.into());
                        }
                        entry
                    })
                    .collect();
                json!({"provider": p.provider, "orderSource": p.order_source,
                       "order": order, "notInOrder": p.not_in_order})
            })
            .collect();
        json!({
            "now": self.now,
            "policy": policy_json(policy),
            "providers": providers,
            "sessionsOnFallback": self.on_fallback.iter()
                .map(|(id, line)| json!({"session": id, "model": line}))
                .collect::<Vec<_>>(),
            "chain": self.chain.iter()
                .map(|c| json!({"model": c.model, "ready": c.ready, "why": c.why}))
                .collect::<Vec<_>>(),
            "state": backend_json(&self.state),
        })
    }
}

/// The state backend: `backend`, `healthy`, and for Redis its `url`
/// (password hidden), `downSince`, `error` and `pendingChanges`.
pub(crate) fn backend_json(state: &BackendStatus) -> Value {
    let mut report = json!({"backend": state.backend, "healthy": state.healthy()});
    if let Some(shared) = &state.shared {
        report["url"] = shared.url.clone().into();
        report["downSince"] = json!(shared.health.down_since_ms);
        report["error"] = json!(shared.health.error);
        report["pendingChanges"] = shared.pending.into();
    }
    report
}

/// The policy's name, version, contract and content hash.
pub(crate) fn policy_json(policy: &dyn Decider) -> Value {
    let version = policy.version();
    json!({ "name": version.name, "version": version.version,
            "contract": version.contract, "sha256": version.sha256 })
}

/// A profile without its secret.
pub fn summary_json(s: &ProfileSummary) -> Value {
    json!({
        "id": s.id,
        "provider": s.provider,
        "type": s.kind.as_str(),
        "email": s.email,
        "expires": s.expires,
        "refreshable": s.refreshable,
        "fingerprint": s.fingerprint,
    })
}

/// A profile's routing state at `now`: `disabled`, `cooldown` (of the whole
/// profile or of a model) or `ok`.
pub(crate) fn state_name(usage: &Usage, now: u64) -> &'static str {
    if usage.disabled_until.is_some_and(|u| u > now) {
        "disabled"
    } else if usage.blocked_until(None, now).is_some() {
        "cooldown"
    } else {
        "ok"
    }
}

/// A profile's state at `now`: `ok`, `cooldown` or `disabled`, with windows.
pub(crate) fn state_json(usage: &Usage, now: u64) -> Value {
    let disabled = usage.disabled_until.filter(|u| *u > now);
    let cooldown = usage.cooldown_until.filter(|u| *u > now);
    json!({
        "state": state_name(usage, now),
        "disabledUntil": disabled,
        "disabledReason": disabled.and(usage.disabled_reason.map(|r| r.as_str())),
        "cooldownUntil": cooldown,
        "cooldownReason": cooldown.and(usage.cooldown_reason.map(|r| r.as_str())),
        "modelCooldowns": (usage.model_cooldowns.iter())
            .filter(|c| c.until > now)
            .map(|c| json!({"model": c.model, "until": c.until, "reason": c.reason.as_str()}))
            .collect::<Vec<_>>(),
        "errorCount": usage.error_count,
        "lastUsed": usage.last_used,
    })
}

/// One line about a session on a fallback, or `None` when it is not on one.
pub fn fallback_line(entry: &SessionEntry) -> Option<String> {
    if entry.model_override.source != Some(OverrideSource::Auto) {
        return None;
    }
    let reason = entry
        .model_override
        .reason
        .map_or("unknown", |r| r.as_str());
    Some(format!(
        "{} (fallback from {}: {reason})",
        entry.model()?,
        entry.origin().unwrap_or_else(|| "?".into())
    ))
}
