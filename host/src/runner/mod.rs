//! The fallback runner's vocabulary: the inputs and outputs of the policy's
//! runner decisions (spec §3, §7, §8, §10). The async runner that drives
//! them against providers builds on these.

pub mod model;

pub use model::*;
