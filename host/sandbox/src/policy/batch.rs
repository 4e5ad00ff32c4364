//! Classifying many errors at once: `classify-packed-batch` for modules of
//! contract 0.8.0, `classify-batch` from 0.5.0 to 0.7.0, one `classify`
//! call per report for 0.4.0 modules.
//!
//! A call into the module has a fixed cost of the order of a
//! classification itself (entering the sandbox, setting fuel and deadline,
//! lowering the arguments, lifting the answer); a batch pays it once.
//!
//! A batch runs with one call's fuel and deadline. A report of the
//! reference corpus uses ~7,400 units of fuel on average (24,000 at most)
//! of the 500 million, so a full batch uses well under 1 % of it;
//! a batch that runs out (a report that loops, or many of the largest
//! reports) is redone one report at a time, where each gets what a
//! `classify` call gets. So a report's verdict, or its failure, never
//! depends on the reports batched with it.

use policy_types::{packed, ErrorReport, Mirror};

use super::bindings::Guest;
use super::error::PolicyError;
use super::module::{checked_verdict, with_packing_buffer, Policy};
use crate::classification::Classification;
use crate::provider_error::ProviderError;
use crate::report::{self, FlatReport};

/// Most reports in one `classify-batch` call: enough that the call's fixed
/// cost is spread thin (it is ~1/256 of the batch's), few enough that a
/// batch's verdicts are out before a slow reader notices.
pub const MAX_BATCH_REPORTS: usize = 256;

/// Most bytes of text (messages, header blocks, codes, provider names) in
/// one batch. The whole batch sits in the module's memory at once, capped
/// at [`super::MAX_MEMORY_BYTES`] with the module's own data; a few
/// maximal reports go alone or in small batches.
pub const MAX_BATCH_TEXT_BYTES: usize = 1024 * 1024;

impl Policy {
    /// Classifies `errors`, each flattened and cut as for
    /// [`Policy::classify`]; the answer's item `i` is `errors[i]`'s verdict
    /// or why there is none.
    pub fn classify_many(
        &self,
        errors: &[ProviderError],
        now_ms: u64,
    ) -> Vec<Result<Classification, PolicyError>> {
        let limits = self.limits();
        let reports = errors
            .iter()
            .map(|error| report::flatten(error, now_ms, &limits))
            .collect();
        self.classify_reports(reports)
    }

    /// Classifies already flattened reports (see [`Policy::classify_many`]).
    ///
    /// Batches go to `classify-packed-batch` (`classify-batch` before
    /// 0.8.0); a batch the module fails on (a trap, an answer of the wrong
    /// length or a refused verdict) is classified again one report at a
    /// time, so only the report that causes the failure fails. A 0.4.0
    /// module gets one `classify` call per report.
    pub fn classify_reports(
        &self,
        reports: Vec<FlatReport>,
    ) -> Vec<Result<Classification, PolicyError>> {
        if !self.contract().has_batch() {
            return reports
                .into_iter()
                .map(|report| self.classify_report(report))
                .collect();
        }
        let mut verdicts = Vec::with_capacity(reports.len());
        let mut batch: Vec<ErrorReport> = Vec::new();
        let mut batch_bytes = 0;
        for report in reports {
            let bytes = text_bytes(&report);
            if !batch.is_empty()
                && (batch.len() == MAX_BATCH_REPORTS || batch_bytes + bytes > MAX_BATCH_TEXT_BYTES)
            {
                verdicts.extend(self.classify_batch(&batch));
                batch.clear();
                batch_bytes = 0;
            }
            batch.push(report.report);
            batch_bytes += bytes;
        }
        if !batch.is_empty() {
            verdicts.extend(self.classify_batch(&batch));
        }
        verdicts
    }

    /// `reports` in one batch call, with no fallback: the admission gate's
    /// check of the function itself.
    pub(crate) fn classify_batch_strict(
        &self,
        reports: Vec<FlatReport>,
    ) -> Result<Vec<Classification>, PolicyError> {
        let batch: Vec<ErrorReport> = reports.into_iter().map(|r| r.report).collect();
        self.try_batch(&batch)
    }

    /// One batch call, or single calls when it fails. (A batch of one that
    /// trapped would only trap again alone; one the module answered wrongly
    /// gets its single answer.)
    fn classify_batch(&self, batch: &[ErrorReport]) -> Vec<Result<Classification, PolicyError>> {
        match self.try_batch(batch) {
            Ok(verdicts) => verdicts.into_iter().map(Ok).collect(),
            Err(error @ PolicyError::Trap { .. }) if batch.len() == 1 => vec![Err(error)],
            Err(_) => batch
                .iter()
                .map(|report| self.classify_plain(report.clone()))
                .collect(),
        }
    }

    fn try_batch(&self, batch: &[ErrorReport]) -> Result<Vec<Classification>, PolicyError> {
        let call = if self.contract().packs_reports() {
            "classify-packed-batch"
        } else {
            "classify-batch"
        };
        let verdicts: Vec<Classification> = with_packing_buffer(|bytes| {
            if self.contract().packs_reports() {
                packed::write_batch_count(bytes, batch.len());
                for report in batch {
                    packed::write_report(bytes, report);
                }
            }
            self.call(call, |store, guest| match guest {
                Guest::Current(g) => g
                    .failover_policy_classifier()
                    .call_classify_packed_batch(store, bytes)
                    .map(Mirror::mirror),
                // Earlier contracts' generated types, converted through
                // the host's.
                Guest::V0_7(g) => g
                    .failover_policy_classifier()
                    .call_classify_batch(store, &converted(batch))
                    .map(Mirror::mirror),
                Guest::V0_6(g) => g
                    .failover_policy_classifier()
                    .call_classify_batch(store, &converted(batch))
                    .map(Mirror::mirror),
                Guest::V0_5(g) => g
                    .failover_policy_classifier()
                    .call_classify_batch(store, &converted(batch))
                    .map(Mirror::mirror),
                Guest::V0_4(_) => Err(wasmtime::format_err!(
                    "a 0.4.0 module has no classify-batch"
                )),
            })
        })?;
        if verdicts.len() != batch.len() {
            return Err(PolicyError::InvalidOutput {
                call,
                problem: format!("{} verdicts for {} reports", verdicts.len(), batch.len()),
            });
        }
        verdicts
            .into_iter()
            .map(|verdict| checked_verdict(call, verdict))
            .collect()
    }
}

/// The bytes of text a report carries into the module.
fn text_bytes(report: &FlatReport) -> usize {
    let levels: usize = report
        .levels
        .iter()
        .map(|level| {
            level.message.len() + level.headers.len() + level.code.as_ref().map_or(0, String::len)
        })
        .sum();
    levels + report.provider.as_ref().map_or(0, String::len)
}

/// `batch` in an earlier contract's generated type.
fn converted<T>(batch: &[ErrorReport]) -> Vec<T>
where
    ErrorReport: Mirror<T>,
{
    batch.iter().map(|r| r.clone().mirror()).collect()
}
