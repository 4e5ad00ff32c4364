//! The fallback runner (spec §1, §3, §7, §8, §9, §10): runs one request
//! through the candidate chain against a [`Provider`], rotating profiles
//! inside a provider and advancing models as the policy decides.
//!
//! - [`model`] — the inputs and outputs of the policy's runner decisions.
//! - [`Provider`], [`Target`], [`CallError`] — what the runner calls.
//! - [`Clock`] — real or virtual time.
//! - [`HealthBook`] — each model's responsiveness, for slow targets (F-12.3).
//! - [`Counters`] — failures around served replies, for the status report.
//! - [`Runner`] — the driver; [`RunOptions`] are what an agent runtime supplies.
//! - [`RunOutcome`], [`RunError`], [`FallbackSummaryError`] — the results.

pub mod clock;
mod counters;
mod events;
mod health;
pub mod model;
mod outcome;
mod provider;
mod retry_env;
mod run;

pub use clock::{Clock, SystemClock, VirtualClock};
pub use counters::{CounterValues, Counters};
pub use health::HealthBook;
pub use model::*;
pub use outcome::{Attempt, FallbackStep, FallbackSummaryError, RunError, RunOutcome};
pub use provider::{CallError, Provider, Target};
pub use retry_env::{retry_wait_cap_from_env, RETRY_MAX_WAIT_ALIAS_ENV, RETRY_MAX_WAIT_ENV};
pub use run::{
    CronJob, RunOptions, Runner, DEFAULT_RETRY_WAIT_CAP_MS, LAST_USED_WRITE_INTERVAL_MS,
};
