//! The reason one level of an error names (spec §5, F-5.10 precedence).
//!
//! A level is read in this order:
//!
//! 1. an HTML error page behind a transport status (408, 499, 5xx) is what
//!    that status means for a server ([`server_status_reason`]), whatever
//!    the page says;
//! 2. a code naming a credential refused for good (`deactivated_workspace`)
//!    decides, then a parameter the endpoint does not take (a format
//!    error, whatever the status or the parameter's name);
//! 3. the text is read once, in order ([`message`]), for what it says;
//! 4. a decisive HTTP status decides in the light of that reading
//!    ([`status`], with the 402 sub-rules in [`payment`]);
//! 5. then the text when it names the failure outright (context overflow,
//!    billing, rate limits, busy providers, missing models, sessions,
//!    revoked keys), a specific symbolic code, the rest of the text (auth,
//!    transport, format), a catch-all code, and what a status that did not
//!    decide implies by itself.

mod evidence;
mod message;
mod payment;
mod providers;
mod status;

use providers::Stage;
pub use providers::TableSet;

use crate::codes::{self, Code, Weight};
use crate::signals::{Signal, Signals};
use crate::text::{self, Bare, LeadingStatus};
use policy_types::Reason;

/// The provider families whose own codes mean something only from them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Google's Gemini and Vertex APIs: gRPC status names as codes.
    Google,
    /// Anthropic's own API: its error types as codes.
    Anthropic,
    /// OpenAI's API and its Azure deployments.
    OpenAi,
    /// Any other provider.
    Other,
}

/// Codes (folded) that only some families send, with those families: from
/// a provider of another family they are no evidence (`INTERNAL` from
/// OpenAI, `rate_limit_error` from Google, F-12.9).
const OWNED_CODES: &[(&str, &[Family])] = &[
    ("internal", &[Family::Google]),
    ("deadlineexceeded", &[Family::Google]),
    ("unavailable", &[Family::Google]),
    ("apierror", &[Family::Anthropic]),
    ("ratelimiterror", &[Family::Anthropic, Family::OpenAi]),
    ("insufficientquota", &[Family::OpenAi, Family::Other]),
];

/// What the provider called changes about the rules (F-5.6, F-12.9).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProviderScope {
    /// The provider's family, when the provider is known.
    pub family: Option<Family>,
    /// The provider wording tables that apply ([`providers`]).
    pub tables: providers::TableSet,
}

/// Everything known about one level.
#[derive(Debug, Clone, Copy)]
pub struct LevelFacts<'a> {
    /// The level's HTTP status, or its body's, or the status its text
    /// starts with, or the nearest outer level's.
    pub status: Option<u16>,
    /// The status was read from the text (`402 …`), not given.
    pub status_from_text: bool,
    pub message: &'a str,
    /// The status the message starts with, and the text after it.
    pub leading: Option<LeadingStatus<'a>>,
    /// The message is one of the bare messages that say nothing else.
    pub bare: Option<Bare>,
    /// The level's own code followed by its body's codes.
    pub codes: &'a [Code],
    pub signals: Signals,
    pub provider: ProviderScope,
    /// The level's body carries an upstream provider's own body
    /// (OpenRouter's `metadata.raw`).
    pub upstream_body: bool,
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

impl ProviderScope {
    /// Whether `code` is evidence from this provider: a code another
    /// family owns is not.
    pub fn reads(&self, code: &Code) -> bool {
        let Some(family) = self.family else {
            return true;
        };
        OWNED_CODES
            .iter()
            .all(|(owned, owners)| owners.contains(&family) || !code.folds_to(owned))
    }
}

/// Classifies one level: the provider's own wording first, then the
/// rules, then the provider's fallback wording ([`providers`]).
pub fn classify_level(facts: &LevelFacts) -> Verdict {
    if let Some(reason) = providers::decide(facts, Stage::First) {
        return reason.and_then(specific);
    }
    match read_level(facts) {
        None => providers::decide(facts, Stage::Fallback)
            .flatten()
            .and_then(specific),
        verdict => verdict,
    }
}

/// Reads one level.
fn read_level(facts: &LevelFacts) -> Verdict {
    if let Some(status) = facts.status.filter(|s| is_transport_status(*s)) {
        if text::is_html_page(page(facts)) {
            return specific(server_status_reason(status).unwrap_or(Reason::ServerError));
        }
    }
    if code_is(facts, Reason::AuthPermanent) {
        return specific(Reason::AuthPermanent);
    }
    if names_unknown_parameter(facts) && validation_beats_status(facts.status) {
        return specific(Reason::Format);
    }
    let said = message::reason(facts);
    if let Some(status) = facts.status {
        if let Some(verdict) = status::decide(status, said, facts) {
            return verdict;
        }
    }
    let (specific_code, generic_code) = level_code_reasons(facts);
    if let Some(reason) = said.filter(|r| outweighs_codes(*r)) {
        // `insufficient_quota` beside "You exceeded your current quota".
        if reason == Reason::RateLimit && code_is(facts, Reason::Billing) {
            return specific(Reason::Billing);
        }
        return specific(reason);
    }
    if let Some(reason) = specific_code {
        return match reason {
            // An abort is no failure unless it is shaped like a timeout
            // (F-7.5): "This operation was aborted" under an abort code is
            // the caller's own abort.
            None if facts.signals.has(Signal::Transient) => specific(Reason::Timeout),
            None => None,
            Some(reason) => specific(reason),
        };
    }
    if let Some(reason) = said {
        // Format is the catch-all of 4xx text ("Bad Request") and a bare
        // "Request failed" the catch-all of transports: a nested level with
        // a specific reason speaks louder.
        let catch_all = reason == Reason::Format || facts.bare == Some(Bare::TransportFailure);
        return if catch_all {
            implied(reason)
        } else {
            specific(reason)
        };
    }
    if let Some(reason) = generic_code {
        return implied(reason);
    }
    // Anthropic's `api_error` alone: its servers failed (F-5.5).
    if facts.message.is_empty() && has_code(facts, "apierror") {
        return implied(Reason::Timeout);
    }
    facts.status.and_then(implied_by_status).and_then(implied)
}

/// Text that names the failure outright beats a symbolic code; a code beats
/// the vaguer kinds of text (an auth word, a transport word, "bad request").
fn outweighs_codes(reason: Reason) -> bool {
    !matches!(reason, Reason::Auth | Reason::Timeout | Reason::Format)
}

/// Statuses of a failed transport or server: an HTML page behind one is a
/// gateway's or CDN's error page.
fn is_transport_status(status: u16) -> bool {
    status == 408 || status == 499 || (500..600).contains(&status)
}

/// What a failed server's or gateway's status means by itself (F-12.7): the
/// gateway gave up waiting (408, 499, 504 and Cloudflare's 522 and 524) is a
/// timeout, 529 a busy provider, 501 a request the server does not
/// implement (no server failure), any other 5xx an untyped server error.
pub fn server_status_reason(status: u16) -> Option<Reason> {
    match status {
        408 | 499 | 504 | 522 | 524 => Some(Reason::Timeout),
        529 => Some(Reason::Overloaded),
        501 => None,
        500..=599 => Some(Reason::ServerError),
        _ => None,
    }
}

/// Whether a request-validation body decides over the level's status: it
/// does over none, a 400, 404 or 422, and a server error's status (the
/// gateway reports the upstream's refusal as its own failure); a timeout,
/// a busy provider, a refused credential or a rate limit still decide.
fn validation_beats_status(status: Option<u16>) -> bool {
    match status {
        None | Some(400 | 404 | 422) => true,
        Some(status) => server_status_reason(status) == Some(Reason::ServerError),
    }
}

/// The level names a request parameter the endpoint does not take, in its
/// code or its text.
fn names_unknown_parameter(facts: &LevelFacts) -> bool {
    facts.signals.has(Signal::UnknownParameter)
        || has_code(facts, "unknownparameter")
        || has_code(facts, "unsupportedparameter")
}

/// The text of the level after a status it starts with.
fn page<'a>(facts: &LevelFacts<'a>) -> &'a str {
    facts.leading.map_or(facts.message, |lead| lead.rest)
}

/// What a status that is not decisive implies when nothing else speaks.
fn implied_by_status(status: u16) -> Option<Reason> {
    match status {
        // Payload too large: the request does not fit, like a context overflow.
        413 => Some(Reason::ContextOverflow),
        _ => None,
    }
}

/// [`code_reasons`] of the level's codes. A certificate code under an HTTP
/// status is no refused certificate: the server answered.
fn level_code_reasons(facts: &LevelFacts) -> (Option<Option<Reason>>, Option<Reason>) {
    let (specific, generic) = code_reasons(facts.codes);
    let refused_tls = specific == Some(Some(Reason::TlsCertificate));
    if refused_tls && facts.status.is_some() {
        (None, generic)
    } else {
        (specific, generic)
    }
}

/// The first specific and the first generic code reason, in code order.
/// The specific one is `Some(None)` for a known abort.
fn code_reasons(codes: &[Code]) -> (Option<Option<Reason>>, Option<Reason>) {
    let mut generic = None;
    for code in codes {
        match code.known() {
            Some((reason, Weight::Specific)) => return (Some(reason), generic),
            Some((reason, Weight::Generic)) => {
                generic = generic.or(reason);
            }
            None => {}
        }
    }
    (None, generic)
}

/// Whether `code` names a credential refused for good
/// (`deactivated_workspace`, `account_deactivated`).
pub fn names_revoked_credential(code: &str) -> bool {
    matches!(codes::lookup(code), Some((Some(Reason::AuthPermanent), _)))
}

fn code_is(facts: &LevelFacts, wanted: Reason) -> bool {
    facts
        .codes
        .iter()
        .any(|code| matches!(code.known(), Some((Some(reason), _)) if reason == wanted))
}

/// Whether a code of the level, folded, is `folded` (`server_error`,
/// `api_error`: the body's own type).
fn has_code(facts: &LevelFacts, folded: &str) -> bool {
    facts.codes.iter().any(|code| code.folds_to(folded))
}
