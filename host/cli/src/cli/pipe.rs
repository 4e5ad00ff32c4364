//! A closed output pipe (`failover policy show | head -1`).
//!
//! Rust programs ignore SIGPIPE, so a write to a pipe whose reader has gone
//! fails — and `println!` panics on that failure. The printing commands
//! take SIGPIPE's default back and end quietly when the reader goes, as
//! Unix tools do. `serve` keeps ignoring it: a gateway must not die because
//! whoever read its log went away (its sockets never raise SIGPIPE either
//! way: they write with `MSG_NOSIGNAL`).

/// Ends the process quietly, like `cat`, when its output pipe closes.
pub(crate) fn end_quietly_on_closed_pipe() {
    #[cfg(unix)]
    // SAFETY: called once at start-up, before any other thread exists;
    // installing the default disposition of a signal touches no memory of
    // this program.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
