//! The core's own data types. They mirror the WIT records one to one, so the
//! component glue only moves values across and the native build needs no
//! bindings at all.

/// Why a provider call failed (spec F-5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
    /// Whether a failure of this reason advances the fallback chain (spec
    /// F-7.4, F-7.5, F-7.5a). `format` and `session_expired` are surfaced,
    /// `context_overflow` stays with compaction.
    pub fn advances_chain(self) -> bool {
        !matches!(
            self,
            Reason::Format | Reason::SessionExpired | Reason::ContextOverflow
        )
    }

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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

/// One level of a nested provider error, in depth-first order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ErrorLevel {
    /// 0 for the outermost error, 1 for its `error`/`cause`, and so on.
    pub depth: u32,
    pub status: Option<u16>,
    pub code: Option<String>,
    pub message: String,
    /// Response headers as an HTTP/1.1 header block (`Name: value` lines).
    pub headers: String,
}

/// A failed provider call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ErrorReport {
    pub provider: Option<String>,
    pub levels: Vec<ErrorLevel>,
    /// Milliseconds since the Unix epoch, for HTTP-date `retry-after` values.
    pub now_ms: u64,
}

/// The verdict on one failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Classification {
    pub reason: Option<Reason>,
    pub failover: bool,
    pub detail: Option<Detail>,
    pub retry_after_ms: Option<u64>,
}
