//! Can the default chain serve now? Per candidate: a usable credential, or
//! why not — none stored, or every one cooling down or disabled, and until
//! when. What `GET /readyz` and `failover doctor` report.

use std::collections::BTreeMap;

use crate::auth::{OrderRequest, RankedProfile, StoredProfile, Usage};
use crate::config::Config;
use crate::names::{canonical_provider, split_model};
use crate::state::{stored_profiles, AuthStore};
use failover_policy::Decider;

/// One candidate of the default chain, now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CandidateReadiness {
    /// `provider/model`.
    pub model: String,
    /// Its provider, aliases resolved.
    pub provider: String,
    /// Whether some credential of its provider may be used for it now.
    pub ready: bool,
    /// "ready", or why not, in words an operator acts on.
    pub why: String,
}

/// Reading the state or asking the policy failed.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    /// The state could not be read.
    #[error(transparent)]
    State(#[from] crate::state::StateError),
    /// The policy failed to order the profiles.
    #[error(transparent)]
    Policy(#[from] failover_policy::PolicyError),
}

/// The default chain's candidates (configured primary, then fallbacks),
/// each with whether it can be tried now — as the runner would see it: the
/// policy's order of the provider's credentials for that model, so expired
/// tokens and profiles the config's order leaves out count as unusable.
pub fn chain_readiness(
    policy: &dyn Decider,
    config: &Config,
    store: &AuthStore,
    now: u64,
) -> Result<Vec<CandidateReadiness>, StatusError> {
    let summaries = store.summaries()?;
    let usage = store.usage()?;
    let stored = stored_profiles(&summaries, &usage);
    let defaults = &config.agents.defaults.model;
    let chain = defaults
        .primary
        .iter()
        .chain(defaults.fallbacks.iter().flatten());
    let mut out = Vec::new();
    for model in chain {
        let provider = canonical_provider(split_model(model).0).to_owned();
        let ranked = policy.order_profiles(&OrderRequest {
            provider: provider.clone(),
            explicit_order: config.explicit_order(&provider),
            configured: config.configured_profiles(),
            stored: stored.clone(),
            model: Some(model.clone()),
            now_ms: now,
        })?;
        let (ready, why) = judge(&provider, model, &ranked, &stored, &usage, now);
        out.push(CandidateReadiness {
            model: model.clone(),
            provider,
            ready,
            why,
        });
    }
    Ok(out)
}

/// Ready, or why not.
fn judge(
    provider: &str,
    model: &str,
    ranked: &[RankedProfile],
    stored: &[StoredProfile],
    usage: &BTreeMap<String, Usage>,
    now: u64,
) -> (bool, String) {
    if !stored.iter().any(|p| p.provider == provider) {
        let how = format!("add one with `failover profiles add {provider}:<name>`");
        return (false, format!("no credentials for {provider}: {how}"));
    }
    if ranked.is_empty() {
        return (false, format!(
            "credentials of {provider} are stored but none is usable: expired without a refresh token, or left out by auth.order / auth.profiles"
        ));
    }
    if ranked.iter().any(|r| r.available) {
        return (true, "ready".to_owned());
    }
    let until = ranked
        .iter()
        .filter_map(|r| usage.get(&r.id)?.blocked_until(Some(model), now))
        .min();
    let seconds = until.map_or(0, |u| u.saturating_sub(now).div_ceil(1000));
    (
        false,
        format!(
        "every credential of {provider} is cooling down or disabled, the first for {seconds} s more"
    ),
    )
}
