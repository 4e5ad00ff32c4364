//! Looking at the engine from outside, without changing it: what the
//! state says now.
//!
//! - [`status`] — each provider's profile order, each profile's state, the
//!   sessions on a fallback (`failover status`, `GET /status`).
//! - [`readiness`] — whether the default chain can serve now, and per
//!   candidate why or why not (`GET /readyz`, `failover doctor`).

pub mod readiness;
pub mod status;
