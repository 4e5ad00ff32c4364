//! The validation gate every module passes before it is activated: it
//! compiles, imports nothing outside the world (but the WASI imports that
//! get deterministic stand-ins, see [`super::wasi`]), speaks a contract
//! version this host runs, and runs the built-in conformance corpus under
//! production limits without trapping or returning an invalid decision.
//! A refused module never serves.

use std::sync::Arc;

use failover_policy::{Admission, Decider, Limits, PolicyError, PolicyLoader, PolicyVersion};

use super::conformance;
use super::engine::PolicyEngine;
use super::module::Policy;

/// What the gate found.
#[derive(Debug, Clone)]
pub struct GateReport {
    /// The module, once it loaded (compile, imports and contract passed).
    pub version: Option<PolicyVersion>,
    /// Why it did not load, if it did not.
    pub load_error: Option<PolicyError>,
    /// Each conformance case, and how it went.
    pub cases: Vec<CaseOutcome>,
}

/// How one conformance case went.
#[derive(Debug, Clone)]
pub struct CaseOutcome {
    /// What the case checks.
    pub name: String,
    /// The function called and its arguments.
    pub input: String,
    /// Why it failed, if it did.
    pub error: Option<PolicyError>,
}

impl GateReport {
    /// Cases that failed.
    pub fn failures(&self) -> impl Iterator<Item = (&str, &PolicyError)> {
        self.cases
            .iter()
            .filter_map(|case| case.error.as_ref().map(|e| (case.name.as_str(), e)))
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
            let failed: Vec<&CaseOutcome> =
                self.cases.iter().filter(|c| c.error.is_some()).collect();
            for case in &failed {
                if let Some(error) = &case.error {
                    out.push_str(&format!("  FAIL {}: {error}\n", case.name));
                    out.push_str(&format!("       input: {}\n", case.input));
                }
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
    // The corpus asks the module itself, never a kept answer.
    policy.remember(false);
    let cases: Vec<CaseOutcome> = conformance::cases()
        .into_iter()
        .map(|case| {
            let error = run_twice(&case, &policy).err();
            CaseOutcome {
                name: case.name,
                input: case.input,
                error,
            }
        })
        .collect();
    policy.remember(true);
    let report = GateReport {
        version: Some(policy.version().clone()),
        load_error: None,
        cases,
    };
    let policy = report.passed().then_some(policy);
    (policy, report)
}

/// The longest answer a nondeterminism failure shows.
const SHOWN_ANSWER_BYTES: usize = 300;

/// Runs `case` twice: a valid answer, and the same answer again.
fn run_twice(case: &conformance::Case, policy: &Policy) -> Result<(), PolicyError> {
    let first = (case.run)(policy)?;
    let second = (case.run)(policy)?;
    if first == second {
        return Ok(());
    }
    Err(PolicyError::Nondeterministic {
        first: conformance::shortened(first, SHOWN_ANSWER_BYTES),
        second: conformance::shortened(second, SHOWN_ANSWER_BYTES),
    })
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

/// The gate as a [`PolicyLoader`]: what a host that swaps modules while
/// serving is given, so it needs no runtime of its own.
#[derive(Debug, Clone)]
pub struct Loader {
    /// The engine admitted modules are compiled with.
    pub engine: PolicyEngine,
    /// The limits the corpus runs under and admitted modules run with.
    pub limits: Limits,
}

impl PolicyLoader for Loader {
    fn load(&self, module: &[u8]) -> Admission {
        let (policy, report) = check(&self.engine, module, self.limits);
        Admission {
            policy: policy.map(|p| Arc::new(p) as Arc<dyn Decider>),
            report: report.render(),
        }
    }
}
