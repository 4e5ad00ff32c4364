//! Text evidence: which kinds of phrase occur in an error's text.
//!
//! Every phrase of every rule (`phrases.rs`) is compiled at build time into
//! one Aho-Corasick DFA (see `build.rs`) that matches ASCII
//! case-insensitively and reports every phrase, overlapping ones included.
//! A message is scanned once — one table lookup per byte, whatever the
//! number of rules — and never lowercased or copied. The scan yields a
//! [`Signals`] set; the rules in `rules.rs` only look at that set.

pub use crate::phrases::Signal;
use crate::phrases::{Edge, PHRASES};

/// A set of [`Signal`]s.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Signals(u128);

impl Signals {
    pub fn has(self, signal: Signal) -> bool {
        self.0 & (1 << signal as u8) != 0
    }

    /// Whether no signal is present.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether every signal of `signals` is present.
    #[cfg(test)]
    fn has_all(self, signals: &[Signal]) -> bool {
        signals.iter().all(|s| self.has(*s))
    }
}

/// The set of signals each phrase raises, by the phrase's index in
/// [`PHRASES`]: computed at build time, so recording a match is two 128-bit
/// operations (a shift by a variable amount is a library call in wasm).
const PHRASE_SIGNALS: [u128; PHRASES.len()] = {
    let mut sets = [0u128; PHRASES.len()];
    let mut i = 0;
    while i < PHRASES.len() {
        let raised = PHRASES[i].1;
        let mut j = 0;
        while j < raised.len() {
            sets[i] |= 1 << raised[j] as u8;
            j += 1;
        }
        i += 1;
    }
    sets
};

// CLASS_COUNT, FIRST_MATCH_STATE, MATCH_FLAG, CLASSES, TRANSITION_MASK,
// TRANSITIONS, OUTPUT_STARTS, OUTPUT_PATTERNS: the DFA that build.rs
// generated from the phrase table.
include!(concat!(env!("OUT_DIR"), "/phrase_dfa.rs"));

/// Letters, digits and `_`: `extra_forbidden` is one word, not "forbidden".
fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// Bytes stepped per round of the scan's fast loop: the round has no
/// branches, so the per-block overhead of the sandbox (fuel, epoch checks)
/// is paid once per round rather than once per byte.
const ROUND: usize = 8;

/// Independent DFA runs interleaved over a long text. One run is bound by
/// the latency of its table lookups (each needs the previous state); four
/// runs over four parts of the text keep the CPU busy meanwhile.
const LANES: usize = 4;

/// Texts shorter than this are scanned by one run: splitting them would
/// mostly re-scan warm-up bytes.
const MIN_LANED_LEN: usize = 256;

/// The longest phrase, in bytes.
const MAX_PHRASE_LEN: usize = {
    let mut longest = 0;
    let mut i = 0;
    while i < PHRASES.len() {
        if PHRASES[i].0.len() > longest {
            longest = PHRASES[i].0.len();
        }
        i += 1;
    }
    longest
};

/// How far before its part a lane starts: after this many bytes an
/// Aho-Corasick DFA is in the same state whatever came before, so every
/// phrase that ends inside the part is found.
const WARMUP: usize = MAX_PHRASE_LEN - 1;

/// One DFA step. States are premultiplied by `CLASS_COUNT` and flagged with
/// `MATCH_FLAG` when they report matches (see build.rs); the mask keeps the
/// index in bounds without a branch and drops the flag.
#[inline(always)]
fn step(state: u32, byte: u8) -> u32 {
    TRANSITIONS[(state as usize + usize::from(CLASSES[usize::from(byte)])) & TRANSITION_MASK]
}

fn is_match(state: u32) -> bool {
    state & MATCH_FLAG != 0
}

/// Scans `text` once and returns every signal whose phrase occurs in it.
///
/// Rounds without a match (nearly all) run branch-free; a round that reached
/// a match state is stepped again from its first state to record where. A
/// long text is cut into [`LANES`] parts scanned side by side, each lane
/// starting [`WARMUP`] bytes early; a phrase near a cut may be found by two
/// lanes, which is harmless since signals form a set.
pub fn scan(text: &str) -> Signals {
    let bytes = text.as_bytes();
    let mut signals = Signals::default();
    if bytes.len() < MIN_LANED_LEN {
        scan_from(bytes, 0, bytes.len(), &mut signals);
        return signals;
    }
    let part = bytes.len().div_ceil(LANES);
    let starts: [usize; LANES] = std::array::from_fn(|k| (k * part).saturating_sub(WARMUP));
    let ends: [usize; LANES] = std::array::from_fn(|k| ((k + 1) * part).min(bytes.len()));
    // Every lane steps the same number of bytes side by side; each then
    // finishes its own part alone.
    let common = (0..LANES).map(|k| ends[k] - starts[k]).min().unwrap_or(0);
    let rounds = common / ROUND;
    let mut states = [0u32; LANES];
    for round in 0..rounds {
        let offset = round * ROUND;
        let firsts = states;
        let chunks: [&[u8; ROUND]; LANES] = std::array::from_fn(|k| {
            let at = starts[k] + offset;
            bytes[at..at + ROUND]
                .try_into()
                .expect("a round is ROUND bytes")
        });
        // One load per lane and round, the bytes shifted out of it: in wasm
        // a load costs more than a shift.
        let words: [u64; LANES] = std::array::from_fn(|k| u64::from_le_bytes(*chunks[k]));
        let mut seen = 0u32;
        // Byte by byte, all lanes at each byte: the lanes' lookups overlap.
        for i in 0..ROUND {
            for (state, word) in states.iter_mut().zip(&words) {
                *state = step(*state, (word >> (8 * i)) as u8);
                seen |= *state;
            }
        }
        if is_match(seen) {
            for k in 0..LANES {
                step_recording(
                    bytes,
                    chunks[k],
                    starts[k] + offset,
                    firsts[k],
                    &mut signals,
                );
            }
        }
    }
    for k in 0..LANES {
        let done = starts[k] + rounds * ROUND;
        step_recording(bytes, &bytes[done..ends[k]], done, states[k], &mut signals);
    }
    signals
}

/// Scans `bytes[start..end]` as one run from the initial state.
fn scan_from(bytes: &[u8], start: usize, end: usize, signals: &mut Signals) {
    let mut state = 0u32;
    let mut rounds = bytes[start..end].chunks_exact(ROUND);
    let mut offset = start;
    for round in &mut rounds {
        let first = state;
        let mut seen = 0u32;
        for &byte in round {
            state = step(state, byte);
            seen |= state;
        }
        if is_match(seen) {
            step_recording(bytes, round, offset, first, signals);
        }
        offset += ROUND;
    }
    step_recording(bytes, rounds.remainder(), offset, state, signals);
}

/// Steps `part` (which starts at `offset` in `bytes`) from `state`, recording
/// every match; returns the final state.
fn step_recording(
    bytes: &[u8],
    part: &[u8],
    offset: usize,
    mut state: u32,
    signals: &mut Signals,
) -> u32 {
    for (index, &byte) in part.iter().enumerate() {
        state = step(state, byte);
        if is_match(state) {
            record_matches(bytes, state, offset + index + 1, signals);
        }
    }
    state
}

/// Adds the signals of the phrases that end at `end` in match state `state`,
/// checking each phrase's word edges.
#[cold]
fn record_matches(bytes: &[u8], state: u32, end: usize, signals: &mut Signals) {
    let slot = (state as usize & TRANSITION_MASK) / CLASS_COUNT - FIRST_MATCH_STATE;
    let outputs = usize::from(OUTPUT_STARTS[slot])..usize::from(OUTPUT_STARTS[slot + 1]);
    for &pattern in &OUTPUT_PATTERNS[outputs] {
        let (phrase, _, edge) = PHRASES[usize::from(pattern)];
        let raised = PHRASE_SIGNALS[usize::from(pattern)];
        if signals.0 & raised == raised {
            // Already known: a text that repeats a phrase costs nothing more.
            continue;
        }
        let start = end - phrase.len();
        let stands = match edge {
            Edge::Anywhere => true,
            Edge::Word => {
                (start == 0 || !is_word_byte(bytes[start - 1]))
                    && (end == bytes.len() || !is_word_byte(bytes[end]))
            }
            Edge::WordEnd => end == bytes.len() || !is_word_byte(bytes[end]),
            Edge::WordStart => start == 0 || !is_word_byte(bytes[start - 1]),
        };
        if stands {
            signals.0 |= raised;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Signal::*;

    #[test]
    fn phrases_are_lowercase_and_unique() {
        let mut seen = std::collections::HashSet::new();
        for (phrase, _, _) in PHRASES {
            assert_eq!(*phrase, phrase.to_ascii_lowercase(), "{phrase}");
            assert!(seen.insert(*phrase), "duplicate phrase {phrase}");
        }
        for (_, raised, _) in PHRASES {
            for signal in *raised {
                assert!(
                    (*signal as u32) < u128::BITS,
                    "{signal:?} does not fit the set"
                );
            }
        }
    }

    #[test]
    fn matching_ignores_ascii_case() {
        assert!(scan("ThrottlingException: Rate exceeded").has(RateLimit));
        assert!(scan("OVERLOADED").has(Overloaded));
    }

    #[test]
    fn word_edges_are_respected() {
        assert!(scan("stop reason: error").has(StopReasonError));
        assert!(!scan("Reason: errors in the request body").has(StopReasonError));
        assert!(scan("403 Forbidden").has(Auth));
        assert!(!scan("forbiddenness").has(Auth));
        assert!(!scan(r#"{"type":"extra_forbidden"}"#).has(Auth));
    }

    #[test]
    fn one_phrase_may_raise_several_signals() {
        let s = scan("Your credit balance is too low");
        assert!(s.has(Billing) && s.has(Hint402));
        let s = scan("HTTP 401");
        assert!(s.has(Auth) && s.has(Word401));
    }

    #[test]
    fn word_start_edges_allow_any_end() {
        assert!(scan("Weekly/Monthly Limit Exhausted").has(PeriodicLimit));
        assert!(scan("token expired").has(Auth));
        assert!(!scan("unexpired").has(Auth));
        assert!(scan("UND_ERR_SOCKET").has(Transient));
        assert!(!scan("FOUND_ERR_SOCKET").has(Transient));
    }

    #[test]
    fn chinese_phrases_match_bytewise() {
        assert!(scan("错误：上下文过长，请减少输入").has(ContextOverflow));
        assert!(scan("{\"message\":\"余额不足或无可用资源包,请充值。\"}").has(Billing));
        assert!(scan("您当前使用该API的并发数过高").has(RateLimit));
    }

    #[test]
    fn overlapping_and_nested_phrases_all_report() {
        // "too many concurrent requests" contains no other phrase, but
        // "rate limit" inside "rate limit reached" and "limit" both do.
        let s = scan("Rate limit reached; weekly quota");
        assert!(s.has(RateLimit) && s.has(LimitTerm) && s.has(PeriodTerm));
        // A phrase that is a suffix of another's prefix path (failure links).
        assert!(scan("xxinternal server errorxx").has(InternalServerError));
        assert!(scan("resource_exhausted").has(ResourceExhausted));
    }

    #[test]
    fn every_phrase_is_found_in_any_case_anywhere() {
        for (phrase, raised, edge) in PHRASES {
            let padded = match edge {
                Edge::Anywhere => format!("zz{}zz", phrase.to_ascii_uppercase()),
                _ => format!("zz {} zz", phrase.to_ascii_uppercase()),
            };
            assert!(scan(&padded).has_all(raised), "{phrase:?} in {padded:?}");
        }
    }

    #[test]
    fn non_ascii_text_is_scanned_bytewise() {
        assert!(scan("Überlastet: overloaded — ½ rate limit").has(RateLimit));
        assert_eq!(scan("日本語のエラー"), Signals::default());
    }

    #[test]
    fn matches_across_round_boundaries_and_in_the_tail() {
        // Put a phrase at every offset relative to the 8-byte rounds.
        for pad in 0..2 * ROUND {
            let text = format!("{}overloaded{}", "x".repeat(pad), "y".repeat(pad % 3));
            assert!(scan(&text).has(Overloaded), "{text:?}");
        }
        assert!(scan("etimedout").has(Transient), "shorter than a round");
    }

    #[test]
    fn long_texts_find_phrases_at_every_offset_across_lanes() {
        // Phrases of every length land on lane cuts, warm-up edges and the
        // tail for texts long enough to be split; compare with one run.
        for len in [MIN_LANED_LEN, MIN_LANED_LEN + 1, 1000, 4097] {
            for (phrase, _, _) in PHRASES.iter().step_by(7) {
                for at in (0..len.saturating_sub(phrase.len())).step_by(29) {
                    let mut text = "x".repeat(len);
                    text.replace_range(at..at + phrase.len(), phrase);
                    let mut single = Signals::default();
                    scan_from(text.as_bytes(), 0, text.len(), &mut single);
                    assert_eq!(scan(&text), single, "{phrase:?} at {at} of {len}");
                }
            }
        }
    }

    #[test]
    fn empty_text_has_no_signals() {
        assert_eq!(scan(""), Signals::default());
    }
}
