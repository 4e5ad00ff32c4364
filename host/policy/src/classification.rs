//! A policy's verdict on a failed provider call: the contract's types,
//! from `policy-types`.

pub use policy_types::{Classification, Detail, Reason};
