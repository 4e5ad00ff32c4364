//! The validation gate every module passes before it is activated: it
//! compiles, imports nothing outside the world (but the WASI imports that
//! get deterministic stand-ins, see [`super::wasi`]), speaks a contract
//! version this host runs, and runs the built-in conformance corpus under
//! production limits without trapping or returning an invalid decision.
//! A refused module never serves.

use super::conformance;
use super::engine::PolicyEngine;
use super::error::PolicyError;
use super::limits::Limits;
use super::module::{Policy, PolicyVersion};

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
    let cases: Vec<(String, Option<PolicyError>)> = conformance::cases()
        .into_iter()
        .map(|case| {
            let outcome = (case.run)(&policy).err();
            (case.name, outcome)
        })
        .collect();
    let report = GateReport {
        version: Some(policy.version().clone()),
        load_error: None,
        cases,
    };
    let policy = report.passed().then_some(policy);
    (policy, report)
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
