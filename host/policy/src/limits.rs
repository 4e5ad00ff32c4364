//! The bounds every policy call runs under: sandbox limits and input sizes.
//!
//! Each default is a named constant with the reason for its number. The
//! input bounds are applied by the host *before* anything crosses into the
//! guest, and the fuel budget is sized so that the largest input those bounds
//! allow classifies with a wide margin (see `docs/performance.md` for the measured
//! fuel of the worst case).

use std::time::Duration;

/// Longest message text, per error level, that reaches the policy. Provider
/// error bodies that matter are a few hundred bytes; anything past 64 KiB is
/// an HTML page or an echoed prompt, and the first 64 KiB say what failed.
/// Longer messages are cut at a character boundary before matching.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// Most nested levels (`error` / `cause`) handed to the policy, depth-first.
/// Real errors nest two or three deep; deeper levels are dropped.
pub const MAX_LEVELS: usize = 16;

/// Most headers per level. Only a handful (`retry-after`, rate-limit resets)
/// matter; a response with more is cut.
pub const MAX_HEADERS: usize = 64;

/// Longest header name or value, and longest code or provider name.
pub const MAX_SHORT_TEXT_BYTES: usize = 1024;

/// Fuel per call. The worst input the other bounds allow for the default
/// policy (16 levels of 64 KiB, dense with phrases that settle nothing, so
/// every level is scanned) measures about 48 M units (`tests/policy/sandbox.rs`
/// keeps it under a quarter of this); 500 M leaves room for a policy that
/// does more work, while a runaway loop still stops within a second or so.
pub const FUEL_PER_CALL: u64 = 500_000_000;

/// Linear memory per instance. The default policy needs about 2 MiB for its
/// phrase automaton and a worst-case input; 16 MiB contains a memory bomb
/// long before it hurts the host.
pub const MAX_MEMORY_BYTES: usize = 16 * 1024 * 1024;

/// Wall-clock backstop per call, behind fuel: a call that is slow for a
/// reason fuel does not count (a host under heavy load) still ends.
pub const CALL_DEADLINE: Duration = Duration::from_secs(2);

/// Limits for one policy module. `Limits::default()` is production's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Fuel per call ([`FUEL_PER_CALL`]).
    pub fuel_per_call: u64,
    /// Linear memory per instance ([`MAX_MEMORY_BYTES`]).
    pub max_memory_bytes: usize,
    /// Wall-clock backstop per call ([`CALL_DEADLINE`]).
    pub call_deadline: Duration,
    /// Longest message per error level ([`MAX_MESSAGE_BYTES`]).
    pub max_message_bytes: usize,
    /// Most error levels ([`MAX_LEVELS`]).
    pub max_levels: usize,
    /// Most headers per level ([`MAX_HEADERS`]).
    pub max_headers: usize,
    /// Longest header, code or provider name ([`MAX_SHORT_TEXT_BYTES`]).
    pub max_short_text_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            fuel_per_call: FUEL_PER_CALL,
            max_memory_bytes: MAX_MEMORY_BYTES,
            call_deadline: CALL_DEADLINE,
            max_message_bytes: MAX_MESSAGE_BYTES,
            max_levels: MAX_LEVELS,
            max_headers: MAX_HEADERS,
            max_short_text_bytes: MAX_SHORT_TEXT_BYTES,
        }
    }
}
