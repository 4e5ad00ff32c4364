//! What a run records, and takes back: its ledger.
//!
//! - `calls` — calling a target and recording how it went: failures
//!   classified and recorded against the profile, successes (coalesced when
//!   they only move `lastUsed`), and the end of a reply served before it
//!   ended;
//! - `session` — what a run writes on its session (the fallback override,
//!   the profile pin, the end of an override) and the narrow rollback of a
//!   failed fallback.

pub(super) mod calls;
pub(super) mod session;
