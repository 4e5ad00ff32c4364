//! What a run request says about a model.

use policy_types::RunRequest;

/// Whether a routing field of `request` names `model` — one that makes it
/// a model to start from or fall back to, as opposed to a larger model
/// configured only for context overflows.
pub fn routes_to(request: &RunRequest, model: &str) -> bool {
    let single = [
        &request.requested,
        &request.configured_primary,
        &request.agent_primary,
        &request.cron_model,
        &request.heartbeat_model,
    ];
    let lists = [
        &request.agent_fallbacks,
        &request.cron_fallbacks,
        &request.fallbacks_override,
    ];
    single.iter().any(|m| m.as_deref() == Some(model))
        || request.configured_fallbacks.iter().any(|m| m == model)
        || lists.iter().any(|l| l.iter().flatten().any(|m| m == model))
        || (request.session_override.as_ref()).is_some_and(|o| o.model == model)
}
