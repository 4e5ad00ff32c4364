//! The integration tests, as one binary: every test module links the host
//! and wasmtime, and one link is a fraction of fifteen.
//!
//! - `support`, `harness`, `upstream`, `native` — shared helpers: the
//!   binary, guest components, the gateway harness with its fault-injecting
//!   upstream, the native policy core behind the host's types.
//! - One module per area: the CLI, the policy component, the runner, the
//!   state files, the gateway (routes, streams, limits, blocking, secrets),
//!   hot swap, hostile modules, replay.

mod support {
    pub mod binary;
    pub mod guests;
    pub mod redis;
}
#[path = "gateway/emulation.rs"]
mod emulation;
#[path = "gateway/faults.rs"]
mod faults;
#[path = "gateway/harness.rs"]
mod harness;
mod native;
#[path = "gateway/upstream.rs"]
mod upstream;

mod cli;
mod code_shape;
mod gateway;
mod gateway_blocking;
mod gateway_deadlines;
mod gateway_fault_scenarios;
mod gateway_faults;
mod gateway_limits;
mod gateway_metrics;
mod gateway_recovery;
mod gateway_redirects;
mod gateway_shapes;
mod gateway_streams;
mod gateway_truncated;
mod hostile;
mod import_circles;
mod onboarding;
mod policy;
mod properties;
mod replay;
mod runner;
mod sdk;
mod secrets;
mod serve_cli;
mod shared_state;
mod state;
mod swap;
