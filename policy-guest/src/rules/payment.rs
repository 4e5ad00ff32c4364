//! The 402 sub-rules (F-5.7): not every 402 is billing.
//!
//! A 402 whose text says the money is gone (credits, balance, a plan to
//! upgrade, a hard limit) is billing; one whose text is a rate limit or a
//! usage window that resets on its own — a daily or weekly limit, an
//! organisation's or workspace's spend cap, a subscription quota that
//! refreshes — is a rate limit; anything else is billing. A 402 written in
//! the text (`HTTP 402`, `"status": 402`, `got a 402`) is read the same
//! way; a bare `402` at the start of a sentence only when the rest reads as
//! one of those ("402 records processed" is not a payment failure).

use super::evidence;
use super::{implied, specific, LevelFacts, Verdict};
use crate::signals::Signal::*;
use crate::text;
use policy_types::Reason;

/// The verdict of a 402 status (given, or read from the text's start).
/// `None` when a 402 read from the text turns out not to be one: the rest
/// of the text decides.
pub fn decide(facts: &LevelFacts) -> Option<Verdict> {
    if facts.status_from_text {
        return from_text(facts).map(specific);
    }
    if text::without_402_wrapper(facts.message).is_empty() {
        // A 402 that says nothing more is billing, but a nested level that
        // says more speaks louder.
        return Some(implied(Reason::Billing));
    }
    Some(specific(classify(facts)))
}

/// The reason a 402 written in the text gives, if the text has one: a
/// marker anywhere, or a leading `402` followed by payment words or by text
/// that reads as a payment failure.
pub fn from_text(facts: &LevelFacts) -> Option<Reason> {
    let s = facts.signals;
    let leading = facts.leading.filter(|lead| lead.status == 402);
    let marked = s.has(Marker402)
        || (s.has(SoftMarker402) && !evidence::is_prose(facts))
        || leading.is_some_and(|lead| {
            s.has(Billing) || text::starts_with_ignore_case(lead.rest, "payment required")
        });
    if marked || (leading.is_some() && known_signal(facts)) {
        Some(classify(facts))
    } else {
        None
    }
}

/// What the text of a 402 says: billing or a window that resets.
fn classify(facts: &LevelFacts) -> Reason {
    let s = facts.signals;
    if text::without_402_wrapper(facts.message).is_empty() {
        return Reason::Billing;
    }
    if s.has(SubscriptionQuota) && s.has(RefreshWindow) {
        return Reason::RateLimit;
    }
    if explicit_billing(facts) {
        return Reason::Billing;
    }
    if s.has(RateLimit) || s.has(TpmHint) || retryable(facts) {
        return Reason::RateLimit;
    }
    Reason::Billing
}

/// Text that makes a 402 billing for certain.
fn explicit_billing(facts: &LevelFacts) -> bool {
    let s = facts.signals;
    s.has(Hint402)
        || (s.has(PlanHint) && s.has(LimitTerm))
        || s.has(HardLimit)
        || (s.has(MaxAllowed) && s.has(LimitTerm))
}

/// A limit that resets on its own: a retry hint beside a usage limit, a
/// periodic usage or spend limit, a limit that says it resets, an
/// organisation's or workspace's cap. A bare "Weekly/Monthly Limit
/// Exhausted" under a 402 is not enough: plans with monthly allowances say
/// it when the money is gone.
fn retryable(facts: &LevelFacts) -> bool {
    let s = facts.signals;
    let periodic = s.has(PeriodTerm) || s.has(PeriodicLimit);
    (s.has(RetryHint) && s.has(LimitHint))
        || (periodic && (s.has(LimitHint) || s.has(SpendLimit)))
        // "Maximum billing reached … will reset at the beginning of next month".
        || (s.has(ResetHint) && (s.has(LimitTerm) || s.has(ScopedResult)))
        || (s.has(ScopedHint) && s.has(LimitTerm) && (s.has(SpendLimit) || s.has(ScopedResult)))
}

/// Whether a bare leading 402 has text that reads as a payment failure.
fn known_signal(facts: &LevelFacts) -> bool {
    let s = facts.signals;
    (s.has(SubscriptionQuota) && s.has(RefreshWindow))
        || explicit_billing(facts)
        || evidence::rate_limit(s)
        || retryable(facts)
}
