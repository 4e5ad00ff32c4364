//! What a run returns: the reply and who served it, or why it failed, with a
//! record of every attempt (spec F-10.1, F-10.3).

use crate::auth::RecordedReason;
use crate::state::StateError;
use failover_policy::Detail;

use super::reply_end::Unfinished;
use failover_policy::PolicyError;

use super::model::{RunSummary, SelectionSource, StopReason};

/// One attempt of a run (F-10.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// `provider/model`.
    pub model: String,
    /// The provider, aliases resolved.
    pub provider: String,
    /// The profile used; `None` when the candidate was skipped.
    pub profile: Option<String>,
    /// The failure's reason (`Unknown` when none was named).
    pub reason: RecordedReason,
    /// The classification's diagnostic label, when the error exposed too
    /// little (F-5.1).
    pub detail: Option<Detail>,
    /// The failure's HTTP status, if it had one.
    pub status: Option<u16>,
    /// The provider's error code (`rate_limit_exceeded`, `ETIMEDOUT` …), if
    /// it gave one.
    pub code: Option<String>,
    /// A short human-readable summary, never containing a secret.
    pub summary: String,
}

/// A flat `model_fallback_decision` record (F-10.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FallbackStep {
    /// The model failed over from, `provider/model`.
    pub from_model: String,
    /// The model moved to; `None` at the end of the chain.
    pub to_model: Option<String>,
    /// Why `from_model` failed.
    pub from_failure_reason: RecordedReason,
    /// The diagnostic label of that failure, when its error exposed too
    /// little (F-5.1).
    pub from_failure_detail: Option<Detail>,
    /// 1-based position of `from_model` in the chain.
    pub chain_position: u32,
    /// `next_fallback`, `succeeded` or `chain_exhausted`.
    pub final_outcome: &'static str,
}

/// A successful run.
#[derive(Debug)]
pub struct RunOutcome<Reply> {
    /// The reply.
    pub reply: Reply,
    /// Who served it.
    pub model: String,
    /// The provider that served it.
    pub provider: String,
    /// The profile that served it.
    pub profile: String,
    /// How the run started.
    pub source: SelectionSource,
    /// The failed attempts before the success.
    pub attempts: Vec<Attempt>,
    /// The fallback steps taken, in order (F-10.2).
    pub steps: Vec<FallbackStep>,
    /// Set when the reply is still arriving: its end is to be recorded
    /// with [`Runner::finish_reply`](super::Runner::finish_reply).
    pub unfinished: Option<Box<Unfinished>>,
}

impl Attempt {
    /// Whether this is a candidate passed over for a feature of the
    /// request it cannot express ([`Provider::cannot_express`](super::Provider::cannot_express)).
    pub(crate) fn is_unsupported_skip(&self) -> bool {
        self.profile.is_none() && self.code.as_deref() == Some(super::provider::UNSUPPORTED_FEATURE)
    }
}

/// Every candidate failed (F-10.3).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", render(.attempts, .summary, *.now_ms))]
pub struct FallbackSummaryError {
    /// Every attempt, skipped candidates included, in order.
    pub attempts: Vec<Attempt>,
    /// The policy's summary: the common reason, and when a model is ready
    /// again.
    pub summary: RunSummary,
    /// The fallback steps taken, in order (F-10.2).
    pub steps: Vec<FallbackStep>,
    /// The clock when the run gave up (for "ready in ~N s").
    pub now_ms: u64,
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Every candidate failed or was skipped.
    #[error(transparent)]
    Exhausted(#[from] FallbackSummaryError),
    /// A failure that must not fall back (context overflow, a format error,
    /// an expired session, an abort).
    #[error("{} failed ({}) and the run stopped: {}", attempt.model, attempt.reason.as_str(), stop_reason(*.reason))]
    Stopped {
        /// Why the policy stopped.
        reason: StopReason,
        /// The attempt that stopped the run.
        attempt: Box<Attempt>,
        /// Every attempt, skipped candidates included; the stopping one last.
        attempts: Vec<Attempt>,
    },
    /// The run's deadline passed before a reply.
    #[error("no reply before the run's deadline ({} attempt{} made)", .attempts.len(), if .attempts.len() == 1 { "" } else { "s" })]
    DeadlineExceeded {
        /// The attempts made before it passed, skipped candidates included.
        attempts: Vec<Attempt>,
    },
    /// No model is configured or selected.
    #[error("no model to run: configure agents.defaults.model.primary or select one")]
    NoModel,
    /// A call into the policy failed.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The state could not be read or written.
    #[error(transparent)]
    State(#[from] StateError),
}

/// A policy that refused while its decision was being stored stays a policy
/// error (a 500 `policy_error`, not `internal`).
impl From<crate::state::UpdateError<PolicyError>> for RunError {
    fn from(error: crate::state::UpdateError<PolicyError>) -> Self {
        match error {
            crate::state::UpdateError::State(error) => RunError::State(error),
            crate::state::UpdateError::Refused(error) => RunError::Policy(error),
        }
    }
}

fn stop_reason(reason: StopReason) -> &'static str {
    match reason {
        StopReason::Aborted => "the call was aborted",
        StopReason::ContextOverflow => {
            "the prompt does not fit the model's context; compact and retry"
        }
        StopReason::Format => {
            "the request was refused as malformed; retrying it would fail the same way"
        }
        StopReason::SessionExpired => "the provider's session expired",
        StopReason::Exhausted => "no candidate is left",
    }
}

/// "all models are rate-limited — ready in ~40 s".
fn render(attempts: &[Attempt], summary: &RunSummary, now_ms: u64) -> String {
    let mut models: Vec<&str> = attempts.iter().map(|a| a.model.as_str()).collect();
    models.dedup();
    models.sort_unstable();
    models.dedup();
    let state = common_cause(attempts).or(summary.common_reason.map(adjective));
    let headline = match state {
        Some(state) if models.len() > 1 => format!("all {} models are {state}", models.len()),
        Some(state) => format!(
            "{} is {state}",
            attempts.first().map_or("the model", |a| a.model.as_str())
        ),
        None => {
            let tried: Vec<String> = attempts
                .iter()
                .map(|a| format!("{} ({})", a.model, cause(a)))
                .collect();
            format!("every model failed: {}", tried.join(", "))
        }
    };
    match summary.ready_at {
        Some(at) if at > now_ms => format!(
            "{headline} — ready in ~{}",
            approx((at - now_ms).div_ceil(1000))
        ),
        _ => headline,
    }
}

/// What went wrong with one attempt, in the words of its real cause: no
/// credentials, the name not resolving, a refused or reset connection, an
/// HTTP 5xx — else its reason.
fn cause(attempt: &Attempt) -> String {
    match (transport_cause(attempt), attempt.status) {
        (Some(cause), _) => cause.to_owned(),
        (None, Some(status)) if status >= 500 => {
            format!("{}, HTTP {status}", attempt.reason.as_str())
        }
        _ => attempt.reason.as_str().to_owned(),
    }
}

/// The state every attempt shares when one cause beneath the reason
/// explains them all ("not resolving (DNS)", "refusing connections" …).
fn common_cause(attempts: &[Attempt]) -> Option<&'static str> {
    let first = transport_cause(attempts.first()?)?;
    attempts
        .iter()
        .all(|a| transport_cause(a) == Some(first))
        .then_some(first)
}

fn transport_cause(attempt: &Attempt) -> Option<&'static str> {
    Some(match attempt.code.as_deref()? {
        super::provider::NO_CREDENTIALS => "missing credentials",
        "ENOTFOUND" | "EAI_AGAIN" => "not resolving (DNS: the provider's host name has no address)",
        "ECONNREFUSED" => "refusing connections",
        "ECONNRESET" => "dropping connections",
        _ => return None,
    })
}

fn adjective(reason: RecordedReason) -> &'static str {
    match reason {
        RecordedReason::RateLimit => "temporarily rate-limited",
        RecordedReason::Overloaded => "overloaded",
        RecordedReason::Billing => "out of credit",
        RecordedReason::Auth | RecordedReason::AuthPermanent => "refusing our credentials",
        RecordedReason::Timeout => "timing out",
        RecordedReason::ServerError => "failing on the server side",
        RecordedReason::TlsCertificate => "presenting a certificate we refuse",
        RecordedReason::ModelNotFound => "unavailable",
        _ => "failing",
    }
}

/// "40 s", "5 min", "2 h".
fn approx(seconds: u64) -> String {
    match seconds {
        s if s < 120 => format!("{s} s"),
        s if s < 2 * 3600 => format!("{} min", s.div_ceil(60)),
        s => format!("{} h", s.div_ceil(3600)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(model: &str, reason: RecordedReason) -> Attempt {
        Attempt {
            model: model.into(),
            provider: model.split('/').next().unwrap().into(),
            profile: None,
            reason,
            detail: None,
            status: None,
            code: None,
            summary: String::new(),
        }
    }

    #[test]
    fn summaries_read_like_the_spec() {
        let error = FallbackSummaryError {
            attempts: vec![
                attempt("a/x", RecordedReason::RateLimit),
                attempt("b/y", RecordedReason::RateLimit),
            ],
            summary: RunSummary {
                common_reason: Some(RecordedReason::RateLimit),
                ready_at: Some(40_000),
            },
            steps: Vec::new(),
            now_ms: 0,
        };
        assert_eq!(
            error.to_string(),
            "all 2 models are temporarily rate-limited — ready in ~40 s"
        );
        let mixed = FallbackSummaryError {
            attempts: vec![
                attempt("a/x", RecordedReason::Billing),
                attempt("b/y", RecordedReason::Timeout),
            ],
            summary: RunSummary {
                common_reason: None,
                ready_at: None,
            },
            steps: Vec::new(),
            now_ms: 0,
        };
        assert_eq!(
            mixed.to_string(),
            "every model failed: a/x (billing), b/y (timeout)"
        );
    }
}
