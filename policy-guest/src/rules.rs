//! The reason one level of an error names (spec F-5.10 precedence).
//!
//! Order of evidence: context-overflow text first (it never fails over, so it
//! must not be masked); then a decisive HTTP status, refined by text where the
//! spec says so (402 sub-rules, billing text under 401/403, ...); then billing
//! and rate-limit text, which beat codes and generic statuses; then specific
//! symbolic codes; then the rest of the text; then generic codes; then what a
//! non-decisive status implies by itself.

use crate::codes::{self, Weight};
use crate::model::Reason;
use crate::signals::{Signal, Signals};

/// Everything known about one level.
#[derive(Debug, Clone, Copy)]
pub struct LevelFacts<'a> {
    /// The level's HTTP status, or its body's, or the nearest outer level's.
    pub status: Option<u16>,
    /// The level's own code followed by its body's codes.
    pub codes: &'a [&'a str],
    pub signals: Signals,
    /// The provider context is OpenRouter (F-5.6).
    pub openrouter: bool,
    /// The whole message is `An unknown error occurred` (F-5.5).
    pub bare_unknown_error: bool,
}

/// How a level's reason was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evidence {
    /// Text or a code named the failure.
    Specific,
    /// Only a status (or a catch-all code) implied it; a nested level with
    /// specific evidence speaks louder.
    Implied,
}

/// The reason a level names, with how it was reached.
pub type Verdict = Option<(Reason, Evidence)>;

fn specific(reason: Reason) -> Verdict {
    Some((reason, Evidence::Specific))
}

fn implied(reason: Reason) -> Verdict {
    Some((reason, Evidence::Implied))
}

/// Classifies one level.
pub fn classify_level(facts: &LevelFacts) -> Verdict {
    let s = facts.signals;
    if s.context_overflow() {
        return specific(Reason::ContextOverflow);
    }
    if let Some(status) = facts.status {
        if let Some(verdict) = by_status(status, facts) {
            return verdict;
        }
    }
    if let Some(reason) = strong_text(facts) {
        return specific(reason);
    }
    let (specific_code, generic_code) = code_reasons(facts.codes);
    if let Some(reason) = specific_code {
        return match reason {
            // An abort is no failure unless it is shaped like a timeout (F-7.5).
            None if s.has(Signal::Transient) => specific(Reason::Timeout),
            None => None,
            Some(reason) => specific(reason),
        };
    }
    if let Some(reason) = text_reason(facts) {
        // Format is the catch-all of 4xx text ("Bad Request"): a nested level
        // with a specific reason speaks louder.
        return if reason == Reason::Format {
            implied(reason)
        } else {
            specific(reason)
        };
    }
    if let Some(reason) = generic_code {
        return implied(reason);
    }
    facts.status.and_then(implied_by_status).and_then(implied)
}

/// Decisive statuses. `None` means the status does not decide and the rest of
/// the evidence is read.
fn by_status(status: u16, facts: &LevelFacts) -> Option<Verdict> {
    let s = facts.signals;
    let billing = s.has(Signal::Billing);
    let verdict = match status {
        402 => {
            if billing {
                specific(Reason::Billing)
            } else if s.rate_limit() {
                // Usage windows and org spend caps reset on their own (F-5.7).
                specific(Reason::RateLimit)
            } else {
                settle(facts, Reason::Billing)
            }
        }
        401 | 403 => {
            if s.has(Signal::AuthPermanent) || code_is(facts, Reason::AuthPermanent) {
                specific(Reason::AuthPermanent)
            } else if billing
                || (status == 403 && facts.openrouter && s.has(Signal::KeyLimitExceeded))
            {
                specific(Reason::Billing)
            } else if s.rate_limit() {
                specific(Reason::RateLimit)
            } else {
                settle(facts, Reason::Auth)
            }
        }
        429 => {
            if billing || code_is(facts, Reason::Billing) {
                specific(Reason::Billing)
            } else {
                settle(facts, Reason::RateLimit)
            }
        }
        408 => {
            if s.rate_limit() {
                specific(Reason::RateLimit)
            } else {
                settle(facts, Reason::Timeout)
            }
        }
        404 => {
            if billing {
                specific(Reason::Billing)
            } else if s.has(Signal::AuthPermanent) {
                specific(Reason::AuthPermanent)
            } else if s.has(Signal::Auth) {
                specific(Reason::Auth)
            } else if s.has(Signal::SessionExpired) {
                specific(Reason::SessionExpired)
            } else {
                settle(facts, Reason::ModelNotFound)
            }
        }
        500 | 502 | 504 | 520..=524 => match strong_text(facts) {
            Some(reason) => specific(reason),
            None => settle(facts, Reason::Timeout),
        },
        503 | 499 => match strong_text(facts) {
            Some(reason) => specific(reason),
            None if confirms(facts, Reason::Overloaded) => specific(Reason::Overloaded),
            None => settle(facts, Reason::Timeout),
        },
        529 => settle(facts, Reason::Overloaded),
        _ => return None,
    };
    Some(verdict)
}

/// A status's reason is specific when the level's own text or code says the
/// same thing ("429 Too Many Requests"), and only implied when the status
/// stands alone — then a nested level with real evidence speaks louder.
fn settle(facts: &LevelFacts, reason: Reason) -> Verdict {
    if confirms(facts, reason) {
        specific(reason)
    } else {
        implied(reason)
    }
}

/// Whether the text or a code of the level names `reason`.
fn confirms(facts: &LevelFacts, reason: Reason) -> bool {
    let s = facts.signals;
    let by_text = match reason {
        Reason::RateLimit => s.rate_limit(),
        Reason::Overloaded => s.has(Signal::Overloaded),
        Reason::Billing => s.has(Signal::Billing),
        Reason::Auth => s.has(Signal::Auth),
        Reason::AuthPermanent => s.has(Signal::AuthPermanent),
        Reason::Timeout => s.has(Signal::Transient) || s.has(Signal::StopReasonError),
        Reason::ModelNotFound => s.model_not_found(),
        Reason::SessionExpired => s.has(Signal::SessionExpired),
        Reason::Format => s.has(Signal::Format),
        Reason::ContextOverflow => s.context_overflow(),
    };
    by_text || code_is(facts, reason)
}

/// What a status that is not decisive implies when nothing else speaks.
fn implied_by_status(status: u16) -> Option<Reason> {
    match status {
        400 | 422 => Some(Reason::Format),
        // Payload too large: the request does not fit, like a context overflow.
        413 => Some(Reason::ContextOverflow),
        _ => None,
    }
}

/// Billing and rate-limit text beat codes and generic statuses (F-5.10).
fn strong_text(facts: &LevelFacts) -> Option<Reason> {
    let s = facts.signals;
    if s.has(Signal::Billing) {
        Some(Reason::Billing)
    } else if s.rate_limit() {
        Some(Reason::RateLimit)
    } else if facts.openrouter && s.has(Signal::KeyLimitExceeded) {
        Some(Reason::Billing)
    } else {
        None
    }
}

/// The rest of the text, most specific first.
fn text_reason(facts: &LevelFacts) -> Option<Reason> {
    let s = facts.signals;
    if s.has(Signal::AuthPermanent) {
        Some(Reason::AuthPermanent)
    } else if s.has(Signal::Overloaded) {
        Some(Reason::Overloaded)
    } else if s.has(Signal::SessionExpired) {
        Some(Reason::SessionExpired)
    } else if s.model_not_found() {
        Some(Reason::ModelNotFound)
    } else if s.has(Signal::Auth) {
        Some(Reason::Auth)
    } else if s.has(Signal::Transient)
        || s.has(Signal::StopReasonError)
        || facts.bare_unknown_error
        || (facts.openrouter && s.has(Signal::ProviderReturnedError))
    {
        Some(Reason::Timeout)
    } else if s.has(Signal::Format) {
        Some(Reason::Format)
    } else {
        None
    }
}

/// The first specific and the first generic code reason, in code order.
/// The specific one is `Some(None)` for a known abort.
fn code_reasons(codes: &[&str]) -> (Option<Option<Reason>>, Option<Reason>) {
    let mut generic = None;
    for code in codes {
        match codes::lookup(code) {
            Some((reason, Weight::Specific)) => return (Some(reason), generic),
            Some((reason, Weight::Generic)) => {
                generic = generic.or(reason);
            }
            None => {}
        }
    }
    (None, generic)
}

fn code_is(facts: &LevelFacts, wanted: Reason) -> bool {
    facts
        .codes
        .iter()
        .any(|code| matches!(codes::lookup(code), Some((Some(reason), _)) if reason == wanted))
}
