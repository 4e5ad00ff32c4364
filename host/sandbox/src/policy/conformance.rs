//! The built-in conformance corpus: every exported function called on
//! representative inputs under production limits. A case passes when the
//! module answers without trapping, the answer is a valid decision —
//! well-formed, the requested model first, a strict plan with no other
//! model, naming only the profiles and models it was given, with times in
//! range (the checks live in the call wrappers) — and asking again gives
//! the same answer. Agreement with the default policy is not asked: a
//! module that decides differently passes.
//!
//! The cases are data, `tests/cases/conformance.jsonl`, embedded here: one
//! JSON object per line, `{"name", "call", "args"}`, `call` a contract
//! function's WIT name (`record-attempt` as `record-failure` and
//! `record-success`, its two outcomes) and `args` its arguments in the
//! host's JSON forms (a provider error as `failover classify` reads it, the
//! policy types in camelCase).

use serde::Deserialize;
use serde_json::Value;

use failover_policy::{Decider, PolicyError, ProviderError, Success};
use policy_types::{
    AttemptEnd, CandidateRequest, CooldownConfig, FailedAttempt, FailureEvent, ModelHealth,
    OrderRequest, PinRequest, RotationConfig, RunRequest, SummaryRequest, Usage,
};

/// The corpus, embedded so that `failover policy check` needs no file.
const CORPUS: &str = include_str!("../../../../tests/cases/conformance.jsonl");

/// A call of a case: the module's valid decision, written out to be
/// compared, or why there is none.
pub(crate) type CaseCall = Box<dyn Fn(&dyn Decider) -> Result<String, PolicyError> + Send + Sync>;

/// One case: its name, its input and the call.
pub struct Case {
    /// What the case checks.
    pub name: String,
    /// The function called and its arguments, as the corpus gives them.
    pub input: String,
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

/// An answer written out to be compared.
fn shown<T: std::fmt::Debug>(answer: Result<T, PolicyError>) -> Result<String, PolicyError> {
    answer.map(|a| format!("{a:?}"))
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
    /// Calls `policy`: its valid decision, written out.
    fn invoke(&self, policy: &dyn Decider) -> Result<String, PolicyError> {
        match self {
            Call::Classify { error, now_ms } => {
                // Read when the corpus was loaded; an error here is a bug of
                // the corpus, caught by its test.
                let error = ProviderError::from_json(error).unwrap_or_default();
                shown(policy.classify(&error, *now_ms))
            }
            Call::OrderProfiles { request } => shown(policy.order_profiles(request)),
            Call::PinProfile { request } => shown(policy.pin_profile(request)),
            Call::RecordFailure {
                usage,
                event,
                config,
            } => shown(policy.record_failure(usage, event, config)),
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
                shown(policy.record_success(usage, &success, config))
            }
            Call::PlanRun { request } => shown(policy.plan_run(request)),
            Call::DecideCandidate { request } => shown(policy.decide_candidate(request)),
            Call::NextStep { attempt, config } => shown(policy.next_step(attempt, config)),
            Call::Summarise { request } => shown(policy.summarise(request)),
            Call::RecordModelAttempt {
                health,
                end,
                now_ms,
            } => shown(policy.record_model_attempt(health, *end, *now_ms)),
        }
    }
}

/// The longest input a report shows: enough to read the case, short enough
/// that a report of many failures stays readable.
const SHOWN_INPUT_BYTES: usize = 400;

/// A corpus line without its name: the call and its arguments, cut to
/// [`SHOWN_INPUT_BYTES`] at a character boundary.
fn input_of(line: &str) -> String {
    let input = serde_json::from_str::<Value>(line)
        .ok()
        .and_then(|mut value| {
            value.as_object_mut()?.remove("name");
            Some(value.to_string())
        })
        .unwrap_or_else(|| line.to_owned());
    shortened(input, SHOWN_INPUT_BYTES)
}

/// `text` cut to `max` bytes at a character boundary, an ellipsis marking
/// the cut.
pub(crate) fn shortened(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

/// Every case, in the corpus's order.
pub fn cases() -> Vec<Case> {
    CORPUS
        .lines()
        .filter(|line| !line.trim().is_empty())
        .enumerate()
        .map(|(index, line_text)| {
            let line: Line = serde_json::from_str(line_text).unwrap_or_else(|e| {
                panic!("tests/cases/conformance.jsonl line {}: {e}", index + 1)
            });
            let call = line.call;
            let input = input_of(line_text);
            Case {
                name: line.name,
                input,
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
