//! What a level's words are evidence of, read by more than one rule: long
//! prose, money, a rate limit.

use super::LevelFacts;
use crate::signals::{Signal::*, Signals};
use crate::text;

/// Messages longer than this are prose (a page, an echoed request) in
/// which billing words are too easily found by chance: only a written 402
/// makes them billing.
const MAX_BILLING_TEXT_BYTES: usize = 512;

/// Whether the level's text is long prose rather than an error message.
pub fn is_prose(facts: &LevelFacts) -> bool {
    facts.message.len() > MAX_BILLING_TEXT_BYTES
}

/// Out of credits, balance or paid usage.
pub fn billing(facts: &LevelFacts) -> bool {
    let s = facts.signals;
    if is_prose(facts) {
        return s.has(Marker402) || s.has(HardBilling);
    }
    s.has(Billing)
        || s.has(SoftMarker402)
        // OpenAI's empty account; Gemini's free tier says the same with a
        // link to its rate-limit docs.
        || (s.has(PlanAndBilling) && !s.has(GeminiDocs))
        || s.has(SpendLimit)
        || (s.has(InsufficientWord) && text::insufficient_word_balance(facts.message))
        || text::billing_head(facts.message)
}

/// Rate limits, throttling and limits that reset on their own.
pub fn rate_limit(s: Signals) -> bool {
    s.has(RateLimit)
        || s.has(Word429)
        || s.has(ResourceExhausted)
        || s.has(TpmHint)
        || (s.has(LimitTerm) && (s.has(PeriodTerm) || s.has(ResetHint)))
}
