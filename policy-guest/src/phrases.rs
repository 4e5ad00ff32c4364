// The phrase table: every phrase the rules know, the signal it raises and
// where it must stand.
//
// This file is self-contained on purpose (plain comments, no `use crate`):
// the crate's build script `include!`s it to compile the phrases into a DFA
// ahead of time, so no instance ever pays to build one, and the library uses
// it to map matches back to signals.

/// A kind of phrase found in an error's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Signal {
    /// The prompt does not fit the model (F-5.9).
    ContextOverflow,
    /// Half of a context-overflow pair: "context window", "context length".
    ContextTerm,
    /// Other half: "exceed", "too long", "overflow".
    OverflowTerm,
    /// Explicit out-of-credit text (F-5.7).
    Billing,
    /// Rate limits and throttling (F-5.2).
    RateLimit,
    /// Half of a usage-window pair: "limit", "quota".
    LimitTerm,
    /// Other half: "daily", "weekly", "per month", ...
    PeriodTerm,
    /// Also pairs with a limit: "resets", "reset at".
    ResetHint,
    /// Organisation or workspace spend caps, retryable by F-5.7.
    SpendLimit,
    /// Credentials refused for good.
    AuthPermanent,
    /// Credentials refused.
    Auth,
    /// Busy provider (F-5.8).
    Overloaded,
    /// Transient transport or server trouble (F-5.5).
    Transient,
    /// OpenAI-compatible stop-reason errors (F-5.4).
    StopReasonError,
    /// The model does not exist.
    ModelNotFound,
    /// Half of a model-missing pair: "model".
    ModelTerm,
    /// Other half: "not found", "does not exist".
    NotFoundTerm,
    /// A provider-side session is gone.
    SessionExpired,
    /// Invalid request shape (F-5.3).
    Format,
    /// OpenRouter's "Key limit exceeded" (billing, for OpenRouter only).
    KeyLimitExceeded,
    /// OpenRouter's bare "Provider returned error" (timeout, for OpenRouter only).
    ProviderReturnedError,
}

/// Where a phrase must stand for it to count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edge {
    /// Anywhere, even inside a longer word ("throttl" in "ThrottlingException").
    Anywhere,
    /// Not preceded or followed by a letter, digit or `_`.
    Word,
    /// Not followed by a letter, digit or `_` ("reason: error" but not "reason: errors in").
    WordEnd,
}

use Edge::{Anywhere, Word, WordEnd};
use Signal::*;

/// Every phrase, lowercase, with the signal it raises. Kept in one table so the
/// whole vocabulary can be reviewed at a glance.
pub const PHRASES: &[(&str, Signal, Edge)] = &[
    // Context overflow (F-5.9).
    ("request_too_large", ContextOverflow, Anywhere),
    ("prompt is too long", ContextOverflow, Anywhere),
    ("prompt too long", ContextOverflow, Anywhere),
    ("input is too long", ContextOverflow, Anywhere),
    ("input too long", ContextOverflow, Anywhere),
    (
        "exceeds the maximum number of tokens",
        ContextOverflow,
        Anywhere,
    ),
    (
        "exceeds the maximum number of input tokens",
        ContextOverflow,
        Anywhere,
    ),
    ("maximum prompt length", ContextOverflow, Anywhere),
    (
        "reduce the length of the messages",
        ContextOverflow,
        Anywhere,
    ),
    (
        "tokens in the prompt cannot exceed",
        ContextOverflow,
        Anywhere,
    ),
    ("context_overflow", ContextOverflow, Anywhere),
    ("context overflow", ContextOverflow, Anywhere),
    ("context window", ContextTerm, Anywhere),
    ("context_window", ContextTerm, Anywhere),
    ("context length", ContextTerm, Anywhere),
    ("context_length", ContextTerm, Anywhere),
    ("context size", ContextTerm, Anywhere),
    ("context limit", ContextTerm, Anywhere),
    ("maximum context", ContextTerm, Anywhere),
    ("exceed", OverflowTerm, Anywhere),
    ("too long", OverflowTerm, Anywhere),
    ("too large", OverflowTerm, Anywhere),
    ("overflow", OverflowTerm, Anywhere),
    ("maximum context length is", OverflowTerm, Anywhere),
    // Billing (F-5.7).
    ("insufficient credit", Billing, Anywhere),
    ("insufficient_credit", Billing, Anywhere),
    ("insufficient balance", Billing, Anywhere),
    ("insufficient_balance", Billing, Anywhere),
    ("insufficient funds", Billing, Anywhere),
    ("insufficient_quota", Billing, Anywhere),
    ("credit balance", Billing, Anywhere),
    ("out of credits", Billing, Anywhere),
    ("requires more credits", Billing, Anywhere),
    ("can only afford", Billing, Anywhere),
    ("credits have been exhausted", Billing, Anywhere),
    ("credits are exhausted", Billing, Anywhere),
    ("credits are depleted", Billing, Anywhere),
    ("payment required", Billing, Anywhere),
    ("payment_required", Billing, Anywhere),
    ("billing hard limit", Billing, Anywhere),
    ("plans & billing", Billing, Anywhere),
    ("purchase credits", Billing, Anywhere),
    ("purchase more credits", Billing, Anywhere),
    ("used all available credits", Billing, Anywhere),
    ("billing_not_active", Billing, Anywhere),
    ("billing is not active", Billing, Anywhere),
    ("account balance", Billing, Anywhere),
    // Rate limits (F-5.2).
    ("rate limit", RateLimit, Anywhere),
    ("rate_limit", RateLimit, Anywhere),
    ("rate-limit", RateLimit, Anywhere),
    ("ratelimit", RateLimit, Anywhere),
    ("too many requests", RateLimit, Anywhere),
    ("too_many_requests", RateLimit, Anywhere),
    ("too many concurrent requests", RateLimit, Anywhere),
    ("concurrency limit", RateLimit, Anywhere),
    ("throttl", RateLimit, Anywhere),
    ("resource exhausted", RateLimit, Anywhere),
    ("resource_exhausted", RateLimit, Anywhere),
    ("resource has been exhausted", RateLimit, Anywhere),
    ("quota exceeded", RateLimit, Anywhere),
    ("quota_exceeded", RateLimit, Anywhere),
    ("exceeded quota", RateLimit, Anywhere),
    ("quota limit exceeded", RateLimit, Anywhere),
    // OpenAI says it for an empty account (code `insufficient_quota`, which
    // the billing rules catch), Gemini for a per-minute free-tier quota.
    ("exceeded your current quota", RateLimit, Anywhere),
    ("tokens per min", RateLimit, Anywhere),
    ("requests per min", RateLimit, Anywhere),
    ("(tpm)", RateLimit, Anywhere),
    ("(rpm)", RateLimit, Anywhere),
    ("usage limit", RateLimit, Anywhere),
    ("slow down", RateLimit, Word),
    ("model_cooldown", RateLimit, Anywhere),
    ("cooling down", RateLimit, Anywhere),
    ("limit", LimitTerm, Anywhere),
    ("quota", LimitTerm, Anywhere),
    ("daily", PeriodTerm, Word),
    ("weekly", PeriodTerm, Word),
    ("monthly", PeriodTerm, Word),
    ("hourly", PeriodTerm, Word),
    ("per day", PeriodTerm, Word),
    ("per hour", PeriodTerm, Word),
    ("per week", PeriodTerm, Word),
    ("per month", PeriodTerm, Word),
    ("5-hour", PeriodTerm, Word),
    ("5 hour", PeriodTerm, Word),
    ("usage window", PeriodTerm, Anywhere),
    ("resets", ResetHint, Word),
    ("reset at", ResetHint, Word),
    ("reset in", ResetHint, Word),
    ("will reset", ResetHint, Word),
    ("spending limit", SpendLimit, Anywhere),
    ("spend limit", SpendLimit, Anywhere),
    ("spending cap", SpendLimit, Anywhere),
    ("budget has been exceeded", SpendLimit, Anywhere),
    ("budget exceeded", SpendLimit, Anywhere),
    ("exceeded budget", SpendLimit, Anywhere),
    // Permanent credential failures.
    ("invalid api key", AuthPermanent, Anywhere),
    ("invalid api-key", AuthPermanent, Anywhere),
    ("invalid_api_key", AuthPermanent, Anywhere),
    ("invalid x-api-key", AuthPermanent, Anywhere),
    ("incorrect api key", AuthPermanent, Anywhere),
    ("api key not valid", AuthPermanent, Anywhere),
    ("api_key_invalid", AuthPermanent, Anywhere),
    ("api key is invalid", AuthPermanent, Anywhere),
    ("api key expired", AuthPermanent, Anywhere),
    ("api key revoked", AuthPermanent, Anywhere),
    ("api key has been revoked", AuthPermanent, Anywhere),
    ("key has been revoked", AuthPermanent, Anywhere),
    ("key has been disabled", AuthPermanent, Anywhere),
    ("key has been deleted", AuthPermanent, Anywhere),
    ("key was disabled", AuthPermanent, Anywhere),
    ("has been deactivated", AuthPermanent, Anywhere),
    ("account deactivated", AuthPermanent, Anywhere),
    ("account has been suspended", AuthPermanent, Anywhere),
    ("account suspended", AuthPermanent, Anywhere),
    ("has been suspended", AuthPermanent, Anywhere),
    ("account disabled", AuthPermanent, Anywhere),
    ("organization has been disabled", AuthPermanent, Anywhere),
    ("not allowed for this organization", AuthPermanent, Anywhere),
    ("does not have permission", AuthPermanent, Anywhere),
    ("permission_error", AuthPermanent, Anywhere),
    ("user not found", AuthPermanent, Anywhere),
    (
        "security token included in the request is invalid",
        AuthPermanent,
        Anywhere,
    ),
    // Credential failures that may recover.
    ("unauthorized", Auth, Anywhere),
    ("unauthenticated", Auth, Anywhere),
    ("authentication", Auth, Anywhere),
    ("not authenticated", Auth, Anywhere),
    ("re-authenticate", Auth, Anywhere),
    ("reauthenticate", Auth, Anywhere),
    ("invalid token", Auth, Anywhere),
    ("invalid_token", Auth, Anywhere),
    ("invalid bearer", Auth, Anywhere),
    ("token expired", Auth, Anywhere),
    ("token has expired", Auth, Anywhere),
    ("expired token", Auth, Anywhere),
    ("token is expired", Auth, Anywhere),
    ("oauth token", Auth, Anywhere),
    ("refresh token", Auth, Anywhere),
    ("invalid credentials", Auth, Anywhere),
    ("no auth credentials", Auth, Anywhere),
    ("missing api key", Auth, Anywhere),
    ("no api key", Auth, Anywhere),
    ("api key is missing", Auth, Anywhere),
    ("forbidden", Auth, Word),
    ("access denied", Auth, Anywhere),
    ("permission denied", Auth, Anywhere),
    ("permission_denied", Auth, Anywhere),
    // Busy provider (F-5.8).
    ("overloaded", Overloaded, Anywhere),
    ("server is busy", Overloaded, Anywhere),
    ("server busy", Overloaded, Anywhere),
    ("capacity exceeded", Overloaded, Anywhere),
    ("servers are busy", Overloaded, Anywhere),
    ("currently busy", Overloaded, Anywhere),
    ("high demand", Overloaded, Anywhere),
    ("over capacity", Overloaded, Anywhere),
    ("at capacity", Overloaded, Anywhere),
    ("no capacity", Overloaded, Anywhere),
    ("insufficient capacity", Overloaded, Anywhere),
    ("capacity constraints", Overloaded, Anywhere),
    ("modelnotready", Overloaded, Anywhere),
    ("model is loading", Overloaded, Anywhere),
    ("currently loading", Overloaded, Anywhere),
    // Transient transport and server trouble (F-5.5).
    ("timeout", Transient, Anywhere),
    ("timed out", Transient, Anywhere),
    ("timed_out", Transient, Anywhere),
    ("deadline exceeded", Transient, Anywhere),
    ("deadline_exceeded", Transient, Anywhere),
    ("etimedout", Transient, Word),
    ("econnreset", Transient, Word),
    ("econnrefused", Transient, Word),
    ("econnaborted", Transient, Word),
    ("eai_again", Transient, Word),
    ("socket hang up", Transient, Anywhere),
    ("connection reset", Transient, Anywhere),
    ("connection refused", Transient, Anywhere),
    ("connection closed", Transient, Anywhere),
    ("connection aborted", Transient, Anywhere),
    ("connection error", Transient, Anywhere),
    ("network error", Transient, Anywhere),
    ("fetch failed", Transient, Anywhere),
    ("other side closed", Transient, Anywhere),
    ("premature close", Transient, Anywhere),
    ("unexpected eof", Transient, Anywhere),
    ("internal server error", Transient, Anywhere),
    ("internal_server_error", Transient, Anywhere),
    ("internal error", Transient, Anywhere),
    ("server had an error", Transient, Anywhere),
    ("server_error", Transient, Anywhere),
    ("unknown error, 520", Transient, Anywhere),
    ("upstream error", Transient, Anywhere),
    ("upstream connect error", Transient, Anywhere),
    ("backend error", Transient, Anywhere),
    ("bad gateway", Transient, Anywhere),
    ("gateway timeout", Transient, Anywhere),
    ("service unavailable", Transient, Anywhere),
    ("temporarily unavailable", Transient, Anywhere),
    ("without sending any chunks", Transient, Anywhere),
    // Stop-reason errors (F-5.4): covers "stop reason: error" and
    // "Unhandled stop reason: error".
    ("reason: error", StopReasonError, WordEnd),
    // Missing models.
    ("model not found", ModelNotFound, Anywhere),
    ("model_not_found", ModelNotFound, Anywhere),
    ("model does not exist", ModelNotFound, Anywhere),
    (
        "does not exist or you do not have access",
        ModelNotFound,
        Anywhere,
    ),
    ("unknown model", ModelNotFound, Anywhere),
    ("no such model", ModelNotFound, Anywhere),
    ("invalid model", ModelNotFound, Anywhere),
    ("is not a valid model", ModelNotFound, Anywhere),
    ("no endpoints found", ModelNotFound, Anywhere),
    ("has been decommissioned", ModelNotFound, Anywhere),
    ("model", ModelTerm, Anywhere),
    ("not found", NotFoundTerm, Anywhere),
    ("does not exist", NotFoundTerm, Anywhere),
    // Provider-side sessions.
    ("session expired", SessionExpired, Anywhere),
    ("session has expired", SessionExpired, Anywhere),
    ("session_expired", SessionExpired, Anywhere),
    ("session not found", SessionExpired, Anywhere),
    ("session is no longer valid", SessionExpired, Anywhere),
    ("invalid session", SessionExpired, Anywhere),
    ("conversation not found", SessionExpired, Anywhere),
    // Malformed requests (F-5.3).
    ("invalid request", Format, Anywhere),
    ("invalid_request", Format, Anywhere),
    ("bad request", Format, Anywhere),
    ("string should match pattern", Format, Anywhere),
    ("tool_use.id", Format, Anywhere),
    ("tool_use_id", Format, Anywhere),
    ("tool_call_id", Format, Anywhere),
    ("validation error", Format, Anywhere),
    ("validationexception", Format, Anywhere),
    ("malformed", Format, Anywhere),
    ("invalid parameter", Format, Anywhere),
    ("invalid_parameter", Format, Anywhere),
    ("unsupported parameter", Format, Anywhere),
    ("invalid value", Format, Anywhere),
    ("extra inputs are not permitted", Format, Anywhere),
    ("content_filter", Format, Anywhere),
    // Provider-scoped (F-5.6).
    ("key limit exceeded", KeyLimitExceeded, Anywhere),
    ("provider returned error", ProviderReturnedError, Anywhere),
];
