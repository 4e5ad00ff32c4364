//! The default policy's decisions on the contract's types: each function
//! converts its input to the default policy's own types (`policy-types`),
//! asks the default policy's core (`policy-guest`) and converts the answer
//! back. A [`Policy`](crate::Policy) method that changes a default in part
//! calls the function here and adjusts its answer.
//!
//! The core has no `server-error` or `tls-certificate` reason. Where one
//! reaches it (a reason another module recorded, a skip, a summary), it is
//! read as `timeout`, the lane that also advances the chain; an attempt
//! that failed with either leaves the credential as it was (spec F-12.7).

mod classify;
mod convert;
mod profiles;
mod runner;

pub use classify::classify;
pub use profiles::{order_profiles, pin_profile, record_attempt};
pub use runner::{decide_candidate, next_step, plan_run, record_model_attempt, summarise};
