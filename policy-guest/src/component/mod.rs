//! The WIT export glue: the generated bindings, and each exported function
//! as its core function between two conversions (`policy_types::mirror_contract!`
//! writes them all). No policy logic lives here.
//!
//! [`DefaultPolicy`] implements every exported interface. Another guest can
//! reuse it (feature `bindings`): implement the interfaces on its own type,
//! delegate to `DefaultPolicy` for all but the rule it changes, and export
//! with `policy_guest::component::export_policy!(ItsType)`. The default component
//! (feature `component`) exports `DefaultPolicy` itself.

mod arena;
#[cfg(feature = "component")]
mod builtins;

/// The guest allocator the default component uses; another guest built on
/// this crate may install it too (`#[global_allocator]`) or keep its own.
pub use arena::Arena;

/// The default component allocates from the arena (see `arena`).
#[cfg(feature = "component")]
#[global_allocator]
static ALLOCATOR: Arena = Arena::new();

wit_bindgen::generate!({
    world: "policy",
    path: "../wit",
    // Other crates export through this crate's bindings.
    default_bindings_module: "policy_guest::component",
    pub_export_macro: true,
    export_macro_name: "export_policy",
});

use exports::failover::policy::types as wit;
use exports::failover::policy::{classifier, meta, profiles, runner};

policy_types::mirror_contract!(wit);

/// The default policy's implementation of every exported interface.
pub struct DefaultPolicy;

crate::default_policy_glue!(DefaultPolicy, crate::CONTRACT, {
    fn classify_packed(report: Vec<u8>) -> wit::Classification {
        // The host never sends bytes that break the layout (the contract
        // lets a module trap on them).
        crate::classify_packed(&report)
            .unwrap_or_else(|e| panic!("classify-packed: {e}"))
            .mirror()
    }

    fn classify_packed_batch(reports: Vec<u8>) -> Vec<wit::Classification> {
        crate::classify_packed_batch(&reports)
            .unwrap_or_else(|e| panic!("classify-packed-batch: {e}"))
            .mirror()
    }
}, runner {
    fn plan_candidate(order: wit::OrderRequest, facts: wit::CandidateFacts) -> wit::CandidatePlan {
        crate::runner::plan_candidate(&order.mirror(), &facts.mirror()).mirror()
    }
});

#[cfg(feature = "component")]
export_policy!(DefaultPolicy with_types_in self);
