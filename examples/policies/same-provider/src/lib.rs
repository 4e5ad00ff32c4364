//! Never falls back to another provider: a run's chain keeps only the
//! models of its first model's provider, and a probe of the configured
//! primary happens only when that primary is of the same provider. Every
//! other decision is the default policy's.

use failover_policy_sdk::types::{RunPlan, RunRequest};
use failover_policy_sdk::{defaults, Policy};

struct SameProvider;

/// `openai` of `openai/gpt-4o`.
fn provider_of(model: &str) -> &str {
    model
        .split_once('/')
        .map_or(model, |(provider, _)| provider)
}

impl Policy for SameProvider {
    const NAME: &'static str = "same-provider";
    const VERSION: &'static str = "0.1.0";

    fn plan_run(request: RunRequest) -> RunPlan {
        let primary = request.configured_primary.clone();
        let mut plan = defaults::plan_run(request);
        let Some(first) = plan.candidates.first() else {
            return plan;
        };
        let provider = provider_of(first).to_owned();
        plan.candidates
            .retain(|model| provider_of(model) == provider);
        let primary_elsewhere = primary.is_none_or(|p| provider_of(&p) != provider);
        plan.probe_primary &= !primary_elsewhere;
        plan
    }
}

failover_policy_sdk::export!(SameProvider);
