//! Wasmtime's errors as [`PolicyError`]s: the only place that reads them.

use failover_policy::{PolicyError, TrapKind};

/// The engine could not be set up, or an instance's store could not be.
pub(crate) fn engine_error(error: wasmtime::Error) -> PolicyError {
    PolicyError::Engine(format!("{error:#}"))
}

/// The error of a call that stopped; `memory_refused` says the limits
/// refused the module memory during it.
pub(crate) fn trap_error(
    call: &'static str,
    error: &wasmtime::Error,
    memory_refused: bool,
) -> PolicyError {
    let kind = match error.downcast_ref::<wasmtime::Trap>() {
        Some(wasmtime::Trap::OutOfFuel) => TrapKind::OutOfFuel,
        Some(wasmtime::Trap::Interrupt) => TrapKind::Deadline,
        Some(wasmtime::Trap::StackOverflow) => TrapKind::StackOverflow,
        _ if memory_refused => TrapKind::Memory,
        Some(other) => TrapKind::Other(one_line(&other.to_string())),
        // The top message only: the alternate form adds a multi-line
        // wasm backtrace, which is no message.
        None => TrapKind::Other(one_line(&error.to_string())),
    };
    PolicyError::Trap { call, kind }
}

/// The first line of `text`, at most [`MAX_TRAP_MESSAGE`] bytes.
fn one_line(text: &str) -> String {
    /// A trap message is a sentence; more is a dump.
    const MAX_TRAP_MESSAGE: usize = 200;
    let line = text.lines().next().unwrap_or_default().trim();
    let mut end = line.len().min(MAX_TRAP_MESSAGE);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    line[..end].to_owned()
}
