//! Decisive HTTP statuses, read in the light of what the text said (F-5.10).
//!
//! Text that names a context overflow, billing or a rate limit beats a
//! generic 4xx/5xx; otherwise the status decides where it is decisive:
//! 429 rate limit (billing when the text is billing, busy when the model is
//! not ready), 402 by its sub-rules, 401/403 auth (revoked keys and refused
//! refreshes are permanent, billing text is billing), 408 timeout, 404
//! missing model, 410 a transport failure unless the text names a session
//! or a credential, a body typed `server_error` under any server status a
//! server error, 503/499 overloaded when the text says so, other server
//! statuses what [`server_status_reason`] says they mean (a timeout for
//! 504, 522, 524, a server error for 500, 502, 503 …), 529 overloaded,
//! 400/422 whatever the text says, else a format error — unless there was
//! no body at all, which says nothing. A 413 whose request asks for more
//! than its limit is a request that cannot fit.

use super::evidence;
use super::message::permanent;
use super::{
    code_is, has_code, implied, payment, server_status_reason, specific, LevelFacts, Verdict,
};
use crate::signals::Signal::{AmbiguousBalance, Busy, Overloaded, RateLimit, TpmHint};
use policy_types::Reason;

/// The verdict a decisive status gives; `None` when the status does not
/// decide and the rest of the evidence is read.
pub fn decide(status: u16, said: Option<Reason>, facts: &LevelFacts) -> Option<Verdict> {
    let strong = said.filter(|r| {
        matches!(
            r,
            Reason::ContextOverflow | Reason::Billing | Reason::RateLimit
        )
    });
    let verdict = match status {
        402 => return payment::decide(facts),
        429 => too_many_requests(said, facts),
        401 | 403 => refused(said, facts),
        408 => match said {
            Some(Reason::RateLimit) => specific(Reason::RateLimit),
            _ => settle(facts, said, Reason::Timeout),
        },
        // Gone: a session, a retired model, a credential; else a transport
        // failure (a 410 with no body is what some proxies answer when the
        // upstream vanished).
        410 => match said {
            Some(
                reason @ (Reason::SessionExpired
                | Reason::ModelNotFound
                | Reason::Billing
                | Reason::AuthPermanent
                | Reason::Auth),
            ) => specific(reason),
            _ => settle(facts, said, Reason::Timeout),
        },
        404 => match said {
            Some(
                reason @ (Reason::ContextOverflow
                | Reason::Format
                | Reason::SessionExpired
                | Reason::Billing
                | Reason::AuthPermanent
                | Reason::Auth),
            ) => specific(reason),
            _ => settle(facts, said, Reason::ModelNotFound),
        },
        413 if crate::text::requested_exceeds_limit(facts.message) => {
            specific(Reason::ContextOverflow)
        }
        529 => match strong.filter(|r| *r != Reason::RateLimit) {
            Some(reason) => specific(reason),
            None => settle(facts, said, Reason::Overloaded),
        },
        499..=599 => failed_server(status, strong, said, facts)?,
        400 | 422 => {
            let server_error_body =
                said == Some(Reason::ServerError) && has_code(facts, "servererror");
            match said.filter(|_| !server_error_body) {
                Some(Reason::Format) => implied(Reason::Format),
                Some(reason) => specific(reason),
                // `ServiceQuotaExceededException` under a 400.
                None if !server_error_body && specific_code(facts).is_some() => {
                    specific_code(facts)?
                }
                // A body-less 400/422 is most often a proxy's hiccup: it
                // says nothing about the request.
                None if says_no_body(facts) => None,
                None => implied(Reason::Format),
            }
        }
        _ => return None,
    };
    Some(verdict)
}

/// A 429: a rate limit, unless the text names an overflow, billing or a
/// busy model.
fn too_many_requests(said: Option<Reason>, facts: &LevelFacts) -> Verdict {
    if said == Some(Reason::ContextOverflow) {
        // Overflow never fails over: it must not be masked.
        specific(Reason::ContextOverflow)
    } else if billing_under_429(facts, said) {
        specific(Reason::Billing)
    } else if busy_under_429(facts) {
        // ModelNotReadyException, "the engine is currently overloaded"
        // arrive as 429s (F-5.8).
        specific(Reason::Overloaded)
    } else {
        settle(facts, said, Reason::RateLimit)
    }
}

/// A 401 or 403: a refused credential, permanent when the text says so,
/// billing or a rate limit when the text names those.
fn refused(said: Option<Reason>, facts: &LevelFacts) -> Verdict {
    if permanent(facts.signals) || code_is(facts, Reason::AuthPermanent) {
        specific(Reason::AuthPermanent)
    } else if said == Some(Reason::Billing) || code_is(facts, Reason::Billing) {
        specific(Reason::Billing)
    } else if facts.signals.has(RateLimit) {
        // GitHub-style "API rate limit exceeded" under a 403.
        specific(Reason::RateLimit)
    } else {
        settle(facts, said, Reason::Auth)
    }
}

/// A failed server's or gateway's status (499, 5xx but 529): text that
/// names an overflow, billing or a rate limit decides, then overload words
/// under a 503 or 499, a body typed `server_error`, then what the status
/// means ([`server_status_reason`]); `None` when the status does not decide.
fn failed_server(
    status: u16,
    strong: Option<Reason>,
    said: Option<Reason>,
    facts: &LevelFacts,
) -> Option<Verdict> {
    let by_status = server_status_reason(status)?;
    let overloaded = matches!(status, 499 | 503)
        && (said == Some(Reason::Overloaded) || code_is(facts, Reason::Overloaded));
    Some(match strong.or(overloaded.then_some(Reason::Overloaded)) {
        Some(reason) => specific(reason),
        None if has_code(facts, "servererror") => specific(Reason::ServerError),
        // The text speaks of server trouble too ("Bad Gateway", "upstream
        // failure"): the status says which kind.
        None if matches!(said, Some(Reason::Timeout | Reason::ServerError)) => specific(by_status),
        None => settle(facts, said, by_status),
    })
}

/// Billing text under a 429 is billing — except "Insufficient account
/// balance", which some gateways send for a rate limit; it is billing when
/// the body's type says so (and from the providers that mean it, by their
/// wording table).
fn billing_under_429(facts: &LevelFacts, said: Option<Reason>) -> bool {
    if code_is(facts, Reason::Billing) {
        return true;
    }
    if said != Some(Reason::Billing) && !evidence::billing(facts) {
        return false;
    }
    !facts.signals.has(AmbiguousBalance)
}

/// A busy provider under a 429: a model that is not ready, or overload
/// words with no rate-limit words beside them.
fn busy_under_429(facts: &LevelFacts) -> bool {
    let s = facts.signals;
    s.has(Busy) || (s.has(Overloaded) && !s.has(RateLimit) && !s.has(TpmHint))
}

/// A status's reason is specific when the level's text or code says the
/// same thing ("429 Too Many Requests"), and only implied when the status
/// stands alone — then a nested level with real evidence speaks louder.
fn settle(facts: &LevelFacts, said: Option<Reason>, reason: Reason) -> Verdict {
    if said == Some(reason) || code_is(facts, reason) {
        specific(reason)
    } else {
        implied(reason)
    }
}

/// The verdict of the level's first specific code that names a failure.
fn specific_code(facts: &LevelFacts) -> Option<Verdict> {
    match super::level_code_reasons(facts).0 {
        Some(Some(reason)) => Some(specific(reason)),
        _ => None,
    }
}

/// The level's text says nothing beyond the status.
fn says_no_body(facts: &LevelFacts) -> bool {
    crate::text::says_no_body(super::page(facts))
}
