//! Turning a module's bytes into a policy: what a host that swaps policies
//! while serving asks of whoever runs them.

use std::sync::Arc;

use crate::Decider;

/// Checks a policy module and, when it passes, makes it a [`Decider`].
/// The sandbox implements it with a WebAssembly runtime; a host that only
/// swaps policies needs nothing else of the runtime.
pub trait PolicyLoader: Send + Sync {
    /// `module` checked for admission. Slow (a compile and a conformance
    /// run): call it off an async runtime's worker threads.
    fn load(&self, module: &[u8]) -> Admission;
}

/// A loader's answer: the admitted policy, or none, and the admission
/// report in either case, written for an operator.
pub struct Admission {
    /// The policy, when the module was admitted.
    pub policy: Option<Arc<dyn Decider>>,
    /// What the admission checked and found.
    pub report: String,
}
