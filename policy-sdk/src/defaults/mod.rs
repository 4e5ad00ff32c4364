//! The default policy's decisions on the contract's types: each function
//! converts its input to the default policy's own types (`policy-types`),
//! asks the default policy's core (`policy-guest`) and converts the answer
//! back. A [`Policy`](crate::Policy) method that changes a default in part
//! calls the function here and adjusts its answer.

mod classify;
mod convert;
mod profiles;
mod runner;

pub use classify::classify;
pub use profiles::{order_profiles, pin_profile, record_attempt};
pub use runner::{decide_candidate, next_step, plan_run, record_model_attempt, summarise};
