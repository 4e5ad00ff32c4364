//! What a level's text says, read once, most specific first.
//!
//! The order is the reference design's, refined on providers' real
//! wording: a gone session, a missing model and a context overflow before
//! anything else (they change what the caller must do); then money (402
//! sub-rules, OpenRouter's key limit, billing text), usage windows, rate
//! limits and busy providers; then server failures announced as such; then
//! refused credentials, revoked before ambiguous; then transport failures,
//! malformed requests and provider-specific wording last.

use super::evidence::{billing, rate_limit};
use super::{has_code, payment, LevelFacts};
use crate::signals::{Signal::*, Signals};
use crate::text::Bare;
use policy_types::Reason;

/// Statuses that, written at the start of a message, mean a transient
/// server or gateway failure.
fn is_transient_leading_status(status: u16) -> bool {
    matches!(status, 499 | 500 | 502..=505 | 507 | 520..=524 | 529)
}

/// The reason the text names, if any.
pub fn reason(facts: &LevelFacts) -> Option<Reason> {
    let s = facts.signals;
    if facts.bare == Some(Bare::RetryEvidence) {
        return None;
    }
    if (s.has(SessionExpired) && !s.has(MalformedIdVeto))
        || (s.has(ConversationTerm) && (s.has(NotFoundTerm) || s.has(ExpiredTerm)))
    {
        return Some(Reason::SessionExpired);
    }
    if model_not_found(s) {
        return Some(Reason::ModelNotFound);
    }
    if context_overflow(s) {
        return Some(Reason::ContextOverflow);
    }
    if s.has(CertificateRefused) {
        return Some(Reason::TlsCertificate);
    }
    if s.has(IncompleteStream) {
        return Some(Reason::Timeout);
    }
    if let Some(reason) = payment::from_text(facts) {
        return Some(reason);
    }
    let billing = billing(facts);
    let leading = facts.leading.map(|lead| lead.status);
    if billing && leading != Some(429) {
        return Some(Reason::Billing);
    }
    if s.has(PeriodicLimit) {
        return Some(if billing {
            Reason::Billing
        } else {
            Reason::RateLimit
        });
    }
    // "Service unavailable" is how busy providers word it (F-12.8).
    let overloaded = s.has(Overloaded) || s.has(ServiceUnavailable);
    if rate_limit(s) && !(overloaded && only_generic_rate_limit(s)) {
        return Some(Reason::RateLimit);
    }
    if overloaded {
        return Some(Reason::Overloaded);
    }
    if has_code(facts, "servererror") && !billing && !s.has(Auth) && !s.has(AuthPermanent) {
        return Some(Reason::ServerError);
    }
    if let Some(status) = leading.filter(|s| is_transient_leading_status(*s)) {
        return super::server_status_reason(status);
    }
    if s.has(StopReasonServerError) {
        return Some(Reason::ServerError);
    }
    vaguer_reason(facts)
}

/// What the text says when it names nothing more specific: refused
/// credentials, revoked before ambiguous; server trouble in words;
/// malformed requests; transport failures.
fn vaguer_reason(facts: &LevelFacts) -> Option<Reason> {
    let s = facts.signals;
    if refused_refresh(s) || s.has(AuthPermanent) {
        return Some(Reason::AuthPermanent);
    }
    if auth(s) {
        return Some(Reason::Auth);
    }
    let bare = facts.bare;
    if bare == Some(Bare::UnknownErrorOccurred)
        || server_error(s)
        || (has_code(facts, "apierror") && s.has(ApiTransient))
    {
        return Some(Reason::Timeout);
    }
    if s.has(Format) || (s.has(ToolCallIdTerm) && s.has(MustBeTerm)) {
        return Some(Reason::Format);
    }
    if bare == Some(Bare::TransportFailure)
        || s.has(Transient)
        || s.has(StopReasonError)
        || s.has(Aborted)
    {
        return Some(Reason::Timeout);
    }
    if s.has(WorkersAi) && s.has(LimitTerm) {
        return Some(Reason::RateLimit);
    }
    None
}

/// A server failure announced as such, in words (with no status beside
/// them, a timeout: the server's side failed in transit). gRPC's `INTERNAL`
/// counts with a code 500 beside it.
fn server_error(s: Signals) -> bool {
    s.has(ServerError) || s.has(InternalServerError) || (s.has(StatusInternal) && s.has(Code500))
}

/// The model does not exist, was retired, or is not served here.
fn model_not_found(s: Signals) -> bool {
    s.has(ModelNotFound)
        || (s.has(InvalidModel) && !s.has(ModelReferenceVeto))
        || (s.has(ModelTerm) && s.has(NotFoundTerm))
        || (s.has(Word404) && s.has(NotFoundTerm))
        || (s.has(ModelTerm) && s.has(DeprecatedTerm) && s.has(UpgradeToTerm))
}

/// The prompt does not fit: said outright, or a context term next to an
/// overflow term. A tokens-per-minute limit is a rate limit (Groq answers
/// 413 for it), and a context window that is too small is a setup problem.
pub fn context_overflow(s: Signals) -> bool {
    if s.has(TpmHint) {
        return false;
    }
    s.has(ContextOverflow)
        || (s.has(ContextTerm) && s.has(OverflowTerm) && !s.has(OverflowVeto))
        || (s.has(InputLengthTerm) && s.has(ContextWord) && s.has(OverflowTerm))
}

/// The only rate-limit evidence is a generic status word (`RESOURCE_EXHAUSTED`,
/// a 429, an SDK's `RateLimitError` class): the provider's own words about
/// capacity speak louder.
fn only_generic_rate_limit(s: Signals) -> bool {
    !s.has(RateLimit)
        && !s.has(TpmHint)
        && !(s.has(LimitTerm) && (s.has(PeriodTerm) || s.has(ResetHint)))
}

/// An OAuth refresh the provider refused: a person must sign in again.
fn refused_refresh(s: Signals) -> bool {
    s.has(RefreshRefusal) || (s.has(FailedToAuthenticate) && s.has(Word401))
}

/// Credentials refused in a way that may recover.
fn auth(s: Signals) -> bool {
    s.has(Auth) || (s.has(FailedToDecode) && s.has(TokenWord))
}

/// Credentials refused for good: revoked keys, dead accounts, refused refreshes.
pub fn permanent(s: Signals) -> bool {
    s.has(AuthPermanent) || refused_refresh(s)
}
