//! One check of a state file per run, not one per read.
//!
//! The promise to a run is that every change another process completed
//! before the run began is seen by it. A run reads the same files several
//! times (the routing state and the summaries per candidate, the
//! credential per call), and each read checked the file's stamp again:
//! a `statx` with a walk of the whole path, which was the largest cost of
//! the state on a gateway's request (docs/performance.md). Inside
//! [`reads_of_one_run`], a read may rely on a check that started after the
//! run began — by this run or by another one — instead of making its own.
//! A change that completes while the run is going on is concurrent with it:
//! a read within [`RECHECK_AFTER`] of the last check may miss it, and every
//! read after that window sees it (before, every read after the change
//! did).
//!
//! Outside a run (the command line, status, readiness, a stream's late
//! failure) every read checks the file, as it always did.

use std::future::Future;
use std::time::{Duration, Instant};

/// How long one check of a file answers for the reads of the runs that
/// began before it: far longer than a run's reads take between two
/// candidates (microseconds), far shorter than anything an operator or
/// another process does between two changes; a run that waits (a
/// `Retry-After`, a rotation's backoff) checks again after it.
pub(crate) const RECHECK_AFTER: Duration = Duration::from_millis(5);

tokio::task_local! {
    /// When the run polled in this task began.
    static RUN_BEGAN: Instant;
}

/// `run`, with its state reads relying on checks made since it began.
pub(crate) fn reads_of_one_run<F: Future>(run: F) -> impl Future<Output = F::Output> {
    RUN_BEGAN.scope(Instant::now(), run)
}

/// Whether a check that started at `checked` answers for a read now: in a
/// run that began before it, and within `recheck` of it
/// ([`RECHECK_AFTER`], but in tests).
pub(crate) fn answers_for_this_read(checked: Instant, recheck: Duration) -> bool {
    answers_for_a_read_at(checked, recheck, Instant::now)
}

/// [`answers_for_this_read`] for a read at `now()`, the clock read only
/// when the run began before the check (a caller that needs the time
/// anyway passes the reading it took).
pub(crate) fn answers_for_a_read_at(
    checked: Instant,
    recheck: Duration,
    now: impl FnOnce() -> Instant,
) -> bool {
    RUN_BEGAN
        .try_with(|began| checked >= *began)
        .unwrap_or(false)
        && now().saturating_duration_since(checked) < recheck
}
