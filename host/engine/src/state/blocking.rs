//! State I/O off the async workers.
//!
//! What can wait — the cross-process lock while another process holds it,
//! and every write with its fsyncs — runs, on a multi-threaded tokio
//! runtime, under [`tokio::task::block_in_place`]: the worker hands its
//! other tasks to a fresh worker first, so a held lock or a slow disk
//! stalls only the request that needs it, never the gateway. Elsewhere
//! (the CLI's plain threads, a blocking-pool thread, a current-thread
//! runtime that cannot hand its tasks over) it runs in place.
//!
//! Reads stay where they are: they take no lock (atomic renames keep them
//! whole), read a few KiB the page cache holds, and happen several times a
//! request — handing the worker over for each cost a third of the
//! gateway's throughput (docs/performance.md), for waits of microseconds. An
//! uncontended lock is taken in place too: only a held one is waited for
//! off the workers.

use tokio::runtime::{Handle, RuntimeFlavor};

/// Runs `work`, off the async workers when called on one.
pub(crate) fn off_async<T>(work: impl FnOnce() -> T) -> T {
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        _ => work(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn works_with_and_without_a_runtime() {
        assert_eq!(off_async(|| 1), 1);
        let current = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(current.block_on(async { off_async(|| 2) }), 2);
        let multi = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        assert_eq!(multi.block_on(async { off_async(|| off_async(|| 3)) }), 3);
        let spawned = multi.block_on(async {
            tokio::spawn(async { off_async(|| 4) }).await.unwrap()
                + tokio::task::spawn_blocking(|| off_async(|| 5))
                    .await
                    .unwrap()
        });
        assert_eq!(spawned, 9);
    }
}
