//! The default policy, exported: every decision is the SDK's default.
//! Natively this crate is empty; the component is its wasm32 build.

#[cfg(target_arch = "wasm32")]
failover_policy_sdk::export!(failover_policy_sdk::DefaultPolicy);
