//! Structured `model_fallback_decision` events (spec F-10.2), flat fields
//! named as the spec names them, so log exporters can rebuild a chain.

use super::outcome::FallbackStep;

/// Emits `step` as a `model_fallback_decision` event on target `failover::fallback`.
pub(crate) fn emit(step: &FallbackStep) {
    tracing::info!(
        target: "failover::fallback",
        event = "model_fallback_decision",
        fallbackStepFromModel = %step.from_model,
        fallbackStepToModel = step.to_model.as_deref().unwrap_or(""),
        fallbackStepFromFailureReason = step.from_failure_reason.as_str(),
        fallbackStepFromFailureDetail = step.from_failure_detail.map_or("", |d| d.as_str()),
        fallbackStepChainPosition = step.chain_position,
        fallbackStepFinalOutcome = step.final_outcome,
        "model_fallback_decision"
    );
}
