//! A failed provider call as the policy reads it, and its verdict (§5).

/// Why a provider call failed (F-5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "snake_case")
)]
pub enum Reason {
    /// Too many requests, or a usage window is full.
    RateLimit,
    /// The provider is busy.
    Overloaded,
    /// Out of credit or quota.
    Billing,
    /// The credential was refused; maybe a typo or a rotation.
    Auth,
    /// The credential is dead: revoked, deactivated, signed out.
    AuthPermanent,
    /// No answer in time, or a transport failure.
    Timeout,
    /// An untyped failure of the provider's server (a bare 500, a CDN error
    /// page): the endpoint's fault, not the credential's (F-12.7).
    ServerError,
    /// The endpoint's TLS certificate was refused (F-12.7).
    TlsCertificate,
    /// The request is malformed: retrying it fails the same way.
    Format,
    /// The model does not exist or is not available.
    ModelNotFound,
    /// A provider-side session or conversation is gone.
    SessionExpired,
    /// The prompt does not fit the model's context.
    ContextOverflow,
}

impl Reason {
    /// Every reason, in the contract's order.
    pub const ALL: [Reason; 12] = [
        Reason::RateLimit,
        Reason::Overloaded,
        Reason::Billing,
        Reason::Auth,
        Reason::AuthPermanent,
        Reason::Timeout,
        Reason::ServerError,
        Reason::TlsCertificate,
        Reason::Format,
        Reason::ModelNotFound,
        Reason::SessionExpired,
        Reason::ContextOverflow,
    ];

    /// Whether a failure of this reason advances the fallback chain (F-7.4,
    /// F-7.5, F-7.5a): `format` and `session_expired` are surfaced,
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
            Reason::ServerError => "server_error",
            Reason::TlsCertificate => "tls_certificate",
            Reason::Format => "format",
            Reason::ModelNotFound => "model_not_found",
            Reason::SessionExpired => "session_expired",
            Reason::ContextOverflow => "context_overflow",
        }
    }
}

/// A diagnostic label for errors that expose too little (F-5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "snake_case")
)]
pub enum Detail {
    /// The provider answered nothing.
    EmptyResponse,
    /// An error with no message, code or status worth reading.
    NoErrorDetails,
    /// Words no rule knows.
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
    /// HTTP status, 100–599.
    pub status: Option<u16>,
    /// A symbolic code: `ETIMEDOUT`, `rate_limit_exceeded` …
    pub code: Option<String>,
    /// The provider's error type (`invalid_request_error`), evidence like
    /// a code.
    pub error_type: Option<String>,
    /// The request parameter the provider blames (`max_tokens`).
    pub param: Option<String>,
    /// The message text, possibly a raw JSON error body.
    pub message: String,
    /// Structured details the provider attached, as JSON text (Google's
    /// `ErrorInfo` and `RetryInfo`): read like an error body.
    pub details: Option<String>,
    /// Response headers as an HTTP/1.1 header block (`Name: value` lines).
    pub headers: String,
}

/// Appends a header's name or value to a header block with each line break
/// as a space: a break inside one would forge another header.
#[inline]
pub fn push_header_text(block: &mut String, text: &str) {
    if text.contains(['\r', '\n']) {
        block.extend(
            text.chars()
                .map(|c| if c == '\r' || c == '\n' { ' ' } else { c }),
        );
    } else {
        block.push_str(text);
    }
}

/// A failed provider call, flattened for the policy.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ErrorReport {
    /// The provider that was called.
    pub provider: Option<String>,
    /// Never empty: an error with nothing in it is one empty level.
    pub levels: Vec<ErrorLevel>,
    /// Milliseconds since the Unix epoch, for HTTP-date `retry-after` values.
    pub now_ms: u64,
}

/// The verdict on one failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "camelCase")
)]
pub struct Classification {
    /// `None` when no rule names the failure: a transient unknown failure.
    pub reason: Option<Reason>,
    /// Whether the failure advances the fallback chain.
    pub failover: bool,
    /// Why there is little to go on, when that is the case.
    pub detail: Option<Detail>,
    /// How long the provider asked callers to wait, in milliseconds.
    pub retry_after_ms: Option<u64>,
}

/// One level of a report, borrowed from wherever it is kept: an
/// [`ErrorLevel`], or a record a module was handed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LevelRef<'a> {
    /// See [`ErrorLevel::depth`].
    pub depth: u32,
    /// See [`ErrorLevel::status`].
    pub status: Option<u16>,
    /// See [`ErrorLevel::code`].
    pub code: Option<&'a str>,
    /// See [`ErrorLevel::error_type`].
    pub error_type: Option<&'a str>,
    /// See [`ErrorLevel::param`].
    pub param: Option<&'a str>,
    /// See [`ErrorLevel::message`].
    pub message: &'a str,
    /// See [`ErrorLevel::details`].
    pub details: Option<&'a str>,
    /// See [`ErrorLevel::headers`].
    pub headers: &'a str,
}

impl ErrorLevel {
    /// This level, borrowed.
    pub fn borrowed(&self) -> LevelRef<'_> {
        LevelRef {
            depth: self.depth,
            status: self.status,
            code: self.code.as_deref(),
            error_type: self.error_type.as_deref(),
            param: self.param.as_deref(),
            message: &self.message,
            details: self.details.as_deref(),
            headers: &self.headers,
        }
    }
}

impl LevelRef<'_> {
    /// This level, owned.
    pub fn to_level(self) -> ErrorLevel {
        ErrorLevel {
            depth: self.depth,
            status: self.status,
            code: self.code.map(str::to_owned),
            error_type: self.error_type.map(str::to_owned),
            param: self.param.map(str::to_owned),
            message: self.message.to_owned(),
            details: self.details.map(str::to_owned),
            headers: self.headers.to_owned(),
        }
    }
}
