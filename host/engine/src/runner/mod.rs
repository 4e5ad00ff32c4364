//! The fallback runner (spec §1, §3, §7, §8, §9, §10): runs one request
//! through the candidate chain against a [`Provider`], rotating profiles
//! inside a provider and advancing models as the policy decides.
//!
//! - [`Runner`] — what lasts across runs (`shared`), and the entry points
//!   that start one (`driver`); a run's [`RunOptions`] are what an agent
//!   runtime supplies.
//! - `plan` — where a run starts and its chain; `run` — one run as an
//!   object, in steps (candidate, profiles, attempt, advance, succeed,
//!   exhausted); `ledger` — what a run records and takes back: calls and
//!   the profile state they record, the end of a reply served before it
//!   ended (`ledger::calls`), the session override, the pin and the narrow
//!   rollback (`ledger::session`).
//!
//! The modules stand in layers, each importing only those below: the
//! results and the provider's face (`outcome`, `provider`, `reply_end`),
//! the runner's lasting state (`shared`), what a run asks of it (`plan`,
//! `ledger`), the run (`run`), the entry points
//! (`driver`).
//! - [`RunObserver`] — told every call, skip and step as it happens.
//! - [`model`] — the inputs and outputs of the policy's runner decisions.
//! - [`Provider`], [`Target`], [`CallError`] — what the runner calls.
//! - [`HealthBook`] — each model's responsiveness, for slow targets (F-12.3).
//! - [`Counters`] — failures around served replies, for the status report.
//! - [`RunOutcome`], [`RunError`], [`FallbackSummaryError`] — the results;
//!   [`Unfinished`] and [`Runner::finish_reply`] — a served stream's end,
//!   recorded when it comes.

mod counters;
mod driver;
mod events;
mod health;
mod ledger;
pub mod model;
mod observer;
mod options;
mod order;
mod outcome;
mod plan;
mod provider;
mod reply_end;
mod retry_env;
mod run;
mod shared;

pub use counters::{CounterValues, Counters};
pub use health::HealthBook;
pub use model::*;
pub use observer::RunObserver;
pub use observer::Unobserved;
pub use options::{CronJob, RunOptions};
pub use outcome::{Attempt, RunError};
pub use outcome::{FallbackStep, FallbackSummaryError, RunOutcome};
pub(crate) use provider::UNSUPPORTED_FEATURE;
pub use provider::{CallError, Provider, Target};
pub use reply_end::ReplyEnd;
pub use reply_end::{BrokenReply, Unfinished};
pub use retry_env::retry_wait_cap_from_env;
pub(crate) use shared::DEFAULT_RETRY_WAIT_CAP_MS;
pub use shared::{Runner, LAST_USED_WRITE_INTERVAL_MS};
