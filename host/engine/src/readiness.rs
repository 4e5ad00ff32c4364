//! Can the default chain serve now? Per candidate: a usable credential, or
//! why not — none stored, or every one cooling down or disabled, and until
//! when. What `GET /readyz` and `failover doctor` report.

use crate::config::Config;
use crate::state::{canonical_provider, split_model, AuthStore, StateError};

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

/// The default chain's candidates (configured primary, then fallbacks),
/// each with whether it can be tried now.
pub fn chain_readiness(
    config: &Config,
    store: &AuthStore,
    now: u64,
) -> Result<Vec<CandidateReadiness>, StateError> {
    let summaries = store.summaries()?;
    let usage = store.usage()?;
    let defaults = &config.agents.defaults.model;
    let chain = defaults
        .primary
        .iter()
        .chain(defaults.fallbacks.iter().flatten());
    Ok(chain
        .map(|model| {
            let provider = canonical_provider(split_model(model).0).to_owned();
            let own: Vec<_> = summaries.iter().filter(|s| s.provider == provider).collect();
            // `None` as soon as one credential is usable; else when the
            // first becomes usable again.
            let blocked_until = own
                .iter()
                .map(|s| usage.get(&s.id).and_then(|u| u.blocked_until(Some(model), now)))
                .collect::<Option<Vec<u64>>>()
                .and_then(|untils| untils.into_iter().min());
            let (ready, why) = if own.is_empty() {
                let how = format!("add one with `failover profiles add {provider}:<name>`");
                (false, format!("no credentials for {provider}: {how}"))
            } else if let Some(until) = blocked_until {
                let seconds = until.saturating_sub(now).div_ceil(1000);
                let why = format!(
                    "every credential of {provider} is cooling down or disabled, the first for {seconds} s more"
                );
                (false, why)
            } else {
                (true, "ready".to_owned())
            };
            CandidateReadiness {
                model: model.clone(),
                provider,
                ready,
                why,
            }
        })
        .collect())
}
