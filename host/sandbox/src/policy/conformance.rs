//! The built-in conformance corpus: every exported function called on
//! representative inputs under production limits. A case passes when the
//! module answers without trapping and the answer is a valid decision —
//! well-formed, naming only the profiles and models it was given, with
//! times in range (the checks live in the call wrappers). Agreement with
//! the default policy is not asked: a module that decides differently passes.
//!
//! The cases are data, `tests/cases/conformance.jsonl`, embedded here: one
//! JSON object per line, `{"name", "call", "args"}`, `call` a contract
//! function's WIT name (`record-attempt` as `record-failure` and
//! `record-success`, its two outcomes) and `args` its arguments in the
//! host's JSON forms (a provider error as `failover classify` reads it, the
//! policy types in camelCase).

use serde::Deserialize;
use serde_json::Value;

use crate::provider_error::ProviderError;
use policy_types::{
    AttemptEnd, CandidateRequest, CooldownConfig, FailedAttempt, FailureEvent, ModelHealth,
    OrderRequest, PinRequest, RotationConfig, RunRequest, SummaryRequest, Usage,
};

use super::decider::Decider;
use super::error::PolicyError;
use super::profiles::Success;

/// The corpus, embedded so that `failover policy check` needs no file.
const CORPUS: &str = include_str!("../../../../tests/cases/conformance.jsonl");

/// A call of a case: `Ok` when the module answered with a valid decision.
pub type CaseCall = Box<dyn Fn(&dyn Decider) -> Result<(), PolicyError> + Send + Sync>;

/// One case: its name and the call.
pub struct Case {
    /// What the case checks.
    pub name: String,
    /// The call.
    pub run: CaseCall,
}

/// One line of the corpus.
#[derive(Deserialize)]
struct Line {
    name: String,
    #[serde(flatten)]
    call: Call,
}

/// A contract function and its arguments.
#[derive(Deserialize)]
#[serde(tag = "call", content = "args", rename_all = "kebab-case")]
enum Call {
    Classify {
        /// The `failover classify` input form.
        error: Value,
        #[serde(rename = "nowMs")]
        now_ms: u64,
    },
    OrderProfiles {
        request: OrderRequest,
    },
    PinProfile {
        request: PinRequest,
    },
    RecordFailure {
        usage: Usage,
        event: FailureEvent,
        config: CooldownConfig,
    },
    RecordSuccess {
        usage: Usage,
        provider: String,
        model: Option<String>,
        #[serde(rename = "nowMs")]
        now_ms: u64,
        config: CooldownConfig,
    },
    PlanRun {
        request: RunRequest,
    },
    DecideCandidate {
        request: CandidateRequest,
    },
    NextStep {
        attempt: FailedAttempt,
        config: RotationConfig,
    },
    Summarise {
        request: SummaryRequest,
    },
    RecordModelAttempt {
        health: ModelHealth,
        end: AttemptEnd,
        #[serde(rename = "nowMs")]
        now_ms: u64,
    },
}

impl Call {
    /// Calls `policy`; `Ok` when it answered with a valid decision.
    fn invoke(&self, policy: &dyn Decider) -> Result<(), PolicyError> {
        match self {
            Call::Classify { error, now_ms } => {
                // Read when the corpus was loaded; an error here is a bug of
                // the corpus, caught by its test.
                let error = ProviderError::from_json(error).unwrap_or_default();
                policy.classify(&error, *now_ms).map(drop)
            }
            Call::OrderProfiles { request } => policy.order_profiles(request).map(drop),
            Call::PinProfile { request } => policy.pin_profile(request).map(drop),
            Call::RecordFailure {
                usage,
                event,
                config,
            } => policy.record_failure(usage, event, config).map(drop),
            Call::RecordSuccess {
                usage,
                provider,
                model,
                now_ms,
                config,
            } => {
                let success = Success {
                    provider,
                    model: model.as_deref(),
                    now_ms: *now_ms,
                };
                policy.record_success(usage, &success, config).map(drop)
            }
            Call::PlanRun { request } => policy.plan_run(request).map(drop),
            Call::DecideCandidate { request } => policy.decide_candidate(request).map(drop),
            Call::NextStep { attempt, config } => policy.next_step(attempt, config).map(drop),
            Call::Summarise { request } => policy.summarise(request).map(drop),
            Call::RecordModelAttempt {
                health,
                end,
                now_ms,
            } => policy.record_model_attempt(health, *end, *now_ms).map(drop),
        }
    }
}

/// Every case, in the corpus's order.
pub fn cases() -> Vec<Case> {
    CORPUS
        .lines()
        .filter(|line| !line.trim().is_empty())
        .enumerate()
        .map(|(index, line)| {
            let line: Line = serde_json::from_str(line).unwrap_or_else(|e| {
                panic!("tests/cases/conformance.jsonl line {}: {e}", index + 1)
            });
            let call = line.call;
            Case {
                name: line.name,
                run: Box::new(move |policy: &dyn Decider| call.invoke(policy)),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_corpus_reads_whole_and_covers_every_function() {
        let names: Vec<String> = CORPUS
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(|line| {
                let line: Line = serde_json::from_str(line).expect("a corpus line");
                if let Call::Classify { error, .. } = &line.call {
                    ProviderError::from_json(error).expect("a provider error");
                }
                line.name
            })
            .collect();
        assert_eq!(names.len(), cases().len());
        let unique: std::collections::BTreeSet<_> = names.iter().collect();
        assert_eq!(unique.len(), names.len(), "case names are unique");
        for function in [
            "classify:",
            "order-profiles:",
            "pin-profile:",
            "record-failure:",
            "record-success:",
            "plan-run:",
            "decide-candidate:",
            "next-step:",
            "summarise:",
            "record-model-attempt:",
        ] {
            assert!(
                names.iter().any(|n| n.starts_with(function)),
                "no case calls {function}"
            );
        }
    }
}
