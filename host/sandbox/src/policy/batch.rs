//! Classifying many errors: one `classify` call each, so that a report's
//! verdict, or its failure, never depends on the reports beside it.

use super::module::Policy;
use failover_policy::{report::FlatReport, Classification, PolicyError, ProviderError};

/// How many reports a reader hands over at a time: enough to keep the
/// policy busy while the next lines are read, few enough that verdicts are
/// out before a slow reader notices.
pub const MAX_BATCH_REPORTS: usize = 256;

impl Policy {
    /// Classifies `errors`, each flattened and cut as for
    /// [`Policy::classify`]; the answer's item `i` is `errors[i]`'s verdict
    /// or why there is none.
    pub fn classify_many(
        &self,
        errors: &[ProviderError],
        now_ms: u64,
    ) -> Vec<Result<Classification, PolicyError>> {
        errors
            .iter()
            .map(|error| self.classify(error, now_ms))
            .collect()
    }

    /// Classifies already flattened reports (see [`Policy::classify_many`]).
    pub fn classify_reports(
        &self,
        reports: Vec<FlatReport>,
    ) -> Vec<Result<Classification, PolicyError>> {
        reports
            .into_iter()
            .map(|report| self.classify_report(report))
            .collect()
    }
}
