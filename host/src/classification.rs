//! The host's view of a policy verdict, as it is printed and logged.

use serde::Serialize;

/// Why a provider call failed (spec F-5.1). Serialised in the spec's
/// snake_case names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    RateLimit,
    Overloaded,
    Billing,
    Auth,
    AuthPermanent,
    Timeout,
    Format,
    ModelNotFound,
    SessionExpired,
    ContextOverflow,
}

impl Reason {
    /// Every reason, in the contract's order.
    pub const ALL: [Reason; 10] = [
        Reason::RateLimit,
        Reason::Overloaded,
        Reason::Billing,
        Reason::Auth,
        Reason::AuthPermanent,
        Reason::Timeout,
        Reason::Format,
        Reason::ModelNotFound,
        Reason::SessionExpired,
        Reason::ContextOverflow,
    ];

    /// The spec's snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::RateLimit => "rate_limit",
            Reason::Overloaded => "overloaded",
            Reason::Billing => "billing",
            Reason::Auth => "auth",
            Reason::AuthPermanent => "auth_permanent",
            Reason::Timeout => "timeout",
            Reason::Format => "format",
            Reason::ModelNotFound => "model_not_found",
            Reason::SessionExpired => "session_expired",
            Reason::ContextOverflow => "context_overflow",
        }
    }
}

/// Diagnostic label for errors that expose too little (spec F-5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Detail {
    EmptyResponse,
    NoErrorDetails,
    Unclassified,
}

impl Detail {
    /// The spec's snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Detail::EmptyResponse => "empty_response",
            Detail::NoErrorDetails => "no_error_details",
            Detail::Unclassified => "unclassified",
        }
    }
}

/// A policy's verdict on one failed provider call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Classification {
    /// `None` when no rule names the failure; the runner then treats it as a
    /// transient unknown failure.
    pub reason: Option<Reason>,
    /// Whether the failure advances the fallback chain.
    pub failover: bool,
    pub detail: Option<Detail>,
    /// How long the provider asked callers to wait, in milliseconds.
    pub retry_after_ms: Option<u64>,
}
