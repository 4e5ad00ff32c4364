//! The validation gate every module passes before it is activated: it
//! compiles, imports nothing outside the world (WASI included), speaks this
//! host's contract version, and runs the built-in conformance corpus under
//! production limits without trapping or returning an invalid decision.
//! A module of contract 0.5.0 on also sends the corpus's `classify` cases
//! as one `classify-batch`, which must answer each as `classify` did; one
//! of 0.6.0 must, on sample inputs, answer `plan-candidate` as the two
//! calls it stands for and give the answers the contract fixes (which the
//! host then gives without a call); one of 0.8.0 must answer
//! `classify-packed` as `classify` on those cases and on sample reports of
//! every shape (the batch case is then `classify-packed-batch`).
//! A refused module never serves.

use super::conformance;
use super::engine::PolicyEngine;
use super::error::PolicyError;
use super::limits::Limits;
use super::module::{Policy, PolicyVersion};
use super::samples::{fixed_answers_hold, plans_agree, plans_hold};

pub use super::samples::{FIXED_CASE, HOLD_CASE, PLAN_CASE};

/// What the gate found.
#[derive(Debug, Clone)]
pub struct GateReport {
    /// The module, once it loaded (compile, imports and contract passed).
    pub version: Option<PolicyVersion>,
    /// Why it did not load, if it did not.
    pub load_error: Option<PolicyError>,
    /// Each conformance case: its name and, when it failed, why.
    pub cases: Vec<(String, Option<PolicyError>)>,
}

impl GateReport {
    /// Cases that failed.
    pub fn failures(&self) -> impl Iterator<Item = (&str, &PolicyError)> {
        self.cases
            .iter()
            .filter_map(|(name, error)| error.as_ref().map(|e| (name.as_str(), e)))
    }

    /// The module may be activated.
    pub fn passed(&self) -> bool {
        self.load_error.is_none() && self.failures().next().is_none()
    }

    /// A readable report: one line per failure, then a verdict.
    pub fn render(&self) -> String {
        let mut out = String::new();
        match (&self.version, &self.load_error) {
            (_, Some(error)) => out.push_str(&format!("refused before the corpus: {error}\n")),
            (Some(version), None) => out.push_str(&format!("module: {version}\n")),
            (None, None) => {}
        }
        if self.load_error.is_none() {
            let failed: Vec<_> = self.failures().collect();
            for (name, error) in &failed {
                out.push_str(&format!("  FAIL {name}: {error}\n"));
            }
            out.push_str(&format!(
                "conformance: {} of {} cases passed\n",
                self.cases.len() - failed.len(),
                self.cases.len()
            ));
        }
        out.push_str(if self.passed() {
            "verdict: accepted\n"
        } else {
            "verdict: refused\n"
        });
        out
    }
}

/// The module was refused; the report says why.
#[derive(Debug, Clone, thiserror::Error)]
#[error("policy module refused:\n{}", .0.render())]
pub struct Refused(pub Box<GateReport>);

/// Runs the gate on `bytes` under `limits`: the loaded module when it passes.
pub fn check(engine: &PolicyEngine, bytes: &[u8], limits: Limits) -> (Option<Policy>, GateReport) {
    let policy = match Policy::load(engine, bytes, limits) {
        Ok(policy) => policy,
        Err(error) => {
            return (
                None,
                GateReport {
                    version: None,
                    load_error: Some(error),
                    cases: Vec::new(),
                },
            )
        }
    };
    let mut cases: Vec<(String, Option<PolicyError>)> = conformance::cases()
        .into_iter()
        .map(|case| {
            let outcome = (case.run)(&policy).err();
            (case.name, outcome)
        })
        .collect();
    if policy.contract().packs_reports() {
        cases.push((PACKED_CASE.into(), packed_agrees(&policy).err()));
    }
    if policy.contract().has_batch() {
        cases.push((BATCH_CASE.into(), batch_agrees(&policy).err()));
    }
    if policy.contract().fixes_idle_answers() {
        cases.push((FIXED_CASE.into(), fixed_answers_hold(&policy).err()));
    }
    if policy.contract().plans_candidates() {
        cases.push((PLAN_CASE.into(), plans_agree(&policy).err()));
    }
    if policy.contract().plans_hold() {
        cases.push((HOLD_CASE.into(), plans_hold(&policy).err()));
    }
    let report = GateReport {
        version: Some(policy.version().clone()),
        load_error: None,
        cases,
    };
    let policy = report.passed().then_some(policy);
    (policy, report)
}

/// The name of the gate's `classify-batch` case (`classify-packed-batch`
/// from 0.8.0).
pub const BATCH_CASE: &str =
    "classify-batch: the classify cases in one batch, each as classify answered it";

/// The name of the gate's `classify-packed` case.
pub const PACKED_CASE: &str =
    "classify-packed: the classify cases and sample reports packed, each as classify answered it";

/// Whether `classify-packed` answers each of the corpus's classify cases,
/// and reports of every shape the layout has (nested levels, absent and
/// empty codes, no provider, headers, text that is not ASCII, a clock an
/// HTTP-date wait is read against), as `classify` answers the same report
/// as a record.
fn packed_agrees(policy: &Policy) -> Result<(), PolicyError> {
    let limits = policy.limits();
    let errors = conformance::classify_inputs()
        .into_iter()
        .chain(packed_samples());
    for (index, (error, now_ms)) in errors.enumerate() {
        let report = crate::report::flatten(&error, now_ms, &limits).report;
        let record = policy.classify_record(report.clone())?;
        let packed = policy.classify_plain(report)?;
        if record != packed {
            return Err(PolicyError::InvalidOutput {
                call: "classify-packed",
                problem: format!(
                    "its verdict on report {index} ({packed:?}) is not classify's ({record:?})"
                ),
            });
        }
    }
    Ok(())
}

/// Reports of the shapes the packed layout can take, with their clocks.
fn packed_samples() -> Vec<(crate::provider_error::ProviderError, u64)> {
    use crate::provider_error::ProviderError;
    /// Sun, 06 Nov 1994 08:49:37 GMT less a minute and a half.
    const NOW_MS: u64 = 784_111_687_000;
    vec![
        (ProviderError::default(), NOW_MS),
        (ProviderError::default().with_status(503), NOW_MS),
        // A provider's own wording, read differently for OpenRouter: a
        // module that misreads the provider's absence answers otherwise.
        (ProviderError::message("Key limit exceeded"), NOW_MS),
        (
            ProviderError::message("Service Unavailable")
                .with_header("Retry-After", "Sun, 06 Nov 1994 08:49:37 GMT")
                .with_header("x-request-id", "abc"),
            NOW_MS,
        ),
        (
            ProviderError::message("upstream failed")
                .with_provider("openrouter")
                .with_code("")
                .with_cause(
                    ProviderError::message("{\"error\":{\"code\":429,\"message\":\"quota\"}}")
                        .with_code("RESOURCE_EXHAUSTED")
                        .with_cause(
                            ProviderError::message("socket hang up").with_code("ECONNRESET"),
                        ),
                ),
            NOW_MS + 1,
        ),
        (
            ProviderError::message("余额不足或无可用资源包,请充值。").with_provider("zhipu"),
            NOW_MS,
        ),
        (
            ProviderError::message("This model's maximum context length is 8192 tokens")
                .with_status(400)
                .with_cause(ProviderError::message("overloaded").with_status(529)),
            NOW_MS,
        ),
    ]
}

/// Whether one `classify-batch` of the corpus's classify cases answers
/// each as `classify` does.
fn batch_agrees(policy: &Policy) -> Result<(), PolicyError> {
    let limits = policy.limits();
    let reports: Vec<_> = conformance::classify_inputs()
        .iter()
        .map(|(error, now_ms)| crate::report::flatten(error, *now_ms, &limits))
        .collect();
    let singles = reports
        .iter()
        .map(|report| policy.classify_report(report.clone()))
        .collect::<Result<Vec<_>, _>>()?;
    let batch = policy.classify_batch_strict(reports)?;
    let call = if policy.contract().packs_reports() {
        "classify-packed-batch"
    } else {
        "classify-batch"
    };
    match singles
        .iter()
        .zip(&batch)
        .position(|(one, many)| one != many)
    {
        Some(index) => Err(PolicyError::InvalidOutput {
            call,
            problem: format!(
                "its verdict on report {index} ({:?}) is not classify's ({:?})",
                batch[index], singles[index]
            ),
        }),
        None => Ok(()),
    }
}

/// The gate as one result: the module, or the report of why it was refused.
pub fn admit(
    engine: &PolicyEngine,
    bytes: &[u8],
    limits: Limits,
) -> Result<(Policy, GateReport), Refused> {
    match check(engine, bytes, limits) {
        (Some(policy), report) => Ok((policy, report)),
        (None, report) => Err(Refused(Box::new(report))),
    }
}
