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

// CLASS_COUNT, MATCH_FLAG, CLASSES, TRANSITIONS, MATCH_TRANSITIONS,
// OUTPUT_STARTS, OUTPUT_PATTERNS: the DFA that build.rs generated from the
// phrase table. A state is the byte offset of its row; match states are
// those with MATCH_FLAG set. In TRANSITIONS a match state leads back to
// itself; MATCH_TRANSITIONS holds its real row (see build.rs, `to_rust`).
include!(concat!(env!("OUT_DIR"), "/phrase_dfa.rs"));

/// Bytes of one row of the transition tables.
const ROW_BYTES: usize = CLASS_COUNT * 4;

/// Letters, digits and `_`: `extra_forbidden` is one word, not "forbidden".
fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// Bytes stepped per round of the scan's fast loops: a round has no
/// branches, so the per-block overhead of the sandbox (fuel, epoch checks)
/// is paid once per round rather than once per byte.
const ROUND: usize = 8;

/// Independent DFA runs interleaved over a long text. One run is bound by
/// the latency of its table lookups (each needs the previous state); four
/// runs over four parts of the text keep the CPU busy meanwhile. The laned
/// loop names its four states one by one (see [`scan_laned`]).
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

/// Reads the entry at byte `offset` of `table`.
///
/// # Safety
///
/// `offset` is a multiple of 4 below `4 * table.len()`.
#[inline(always)]
unsafe fn entry(table: &[u32], offset: usize) -> u32 {
    debug_assert!(offset.is_multiple_of(4) && offset < table.len() * 4);
    // SAFETY: the caller keeps `offset` an aligned entry inside `table`.
    unsafe { table.as_ptr().cast::<u8>().add(offset).cast::<u32>().read() }
}

/// A byte's class, as the byte offset of its column in a row.
#[inline(always)]
fn column(byte: u8) -> usize {
    4 * usize::from(CLASSES[usize::from(byte)])
}

/// One step of the fast loops, through [`TRANSITIONS`]: exact until a match
/// state, which it then never leaves. The dependency chain from one step to
/// the next is one add and one load.
#[inline(always)]
fn step(state: u32, byte: u8) -> u32 {
    // SAFETY: `state` starts a row of `TRANSITIONS`: it is the initial state
    // 0 or an entry of a table, and build.rs checked that every entry starts
    // a row (the test `every_entry_starts_a_row` checks it again). A class
    // is below `CLASS_COUNT`, so the offset is a whole entry of the row. Read
    // unchecked: this is the scan's inner loop, where a bounds check per
    // byte would cost more than the lookup.
    unsafe { entry(&TRANSITIONS, state as usize + column(byte)) }
}

/// One step of the exact automaton: a match state's real row is in
/// [`MATCH_TRANSITIONS`].
#[inline(always)]
fn step_exact(state: u32, byte: u8) -> u32 {
    if is_match(state) {
        // SAFETY: a match state is `MATCH_FLAG` plus the offset of its row
        // in `MATCH_TRANSITIONS` (see `step` for the rest).
        unsafe {
            entry(
                &MATCH_TRANSITIONS,
                (state - MATCH_FLAG) as usize + column(byte),
            )
        }
    } else {
        step(state, byte)
    }
}

fn is_match(state: u32) -> bool {
    state & MATCH_FLAG != 0
}

/// Scans `text` once and returns every signal whose phrase occurs in it.
///
/// Rounds without a match (nearly all) run branch-free; a round that met a
/// match is stepped again exactly from its first state to record where. A
/// long text is cut into [`LANES`] parts scanned side by side (see
/// [`scan_laned`]).
///
/// Kept out of line: inlined into the classifier, the laned loop competed
/// for registers with everything around it.
#[inline(never)]
pub fn scan(text: &str) -> Signals {
    let bytes = text.as_bytes();
    let mut signals = Signals::default();
    if bytes.len() < MIN_LANED_LEN {
        scan_from(bytes, 0, bytes.len(), &mut signals);
    } else {
        scan_laned(bytes, &mut signals);
    }
    signals
}

/// The `ROUND` bytes of `bytes` from `at`.
#[inline(always)]
fn round_at(bytes: &[u8], at: usize) -> &[u8; ROUND] {
    bytes[at..at + ROUND]
        .try_into()
        .expect("a round is ROUND bytes")
}

/// Scans a text of at least [`MIN_LANED_LEN`] bytes as four runs over its
/// four parts, each starting [`WARMUP`] bytes early; a phrase near a cut may
/// be found by two lanes, which is harmless since signals form a set.
///
/// The four states are four variables stepped byte by byte in turn, so the
/// compiled code keeps them in registers and the lanes' lookups overlap. A
/// round's steps feed nothing but the next step: whether it met a match is
/// read from its last states (see [`step`]).
fn scan_laned(bytes: &[u8], signals: &mut Signals) {
    let part = bytes.len().div_ceil(LANES);
    let starts: [usize; LANES] = std::array::from_fn(|k| (k * part).saturating_sub(WARMUP));
    let ends: [usize; LANES] = std::array::from_fn(|k| ((k + 1) * part).min(bytes.len()));
    // Every lane steps the same number of bytes side by side; each then
    // finishes its own part alone.
    let common = (0..LANES).map(|k| ends[k] - starts[k]).min().unwrap_or(0);
    let rounds = common / ROUND;
    // Every lane's rounds lie inside the text: checked once here, so the
    // loop reads its bytes without a check per round.
    assert!(starts
        .iter()
        .all(|&start| start + rounds * ROUND <= bytes.len()));
    let (mut s0, mut s1, mut s2, mut s3) = (0u32, 0u32, 0u32, 0u32);
    for round in 0..rounds {
        let offset = round * ROUND;
        // SAFETY: `start + offset + ROUND <= start + rounds * ROUND`, which
        // the assertion above keeps within `bytes`.
        let (p0, p1, p2, p3) = unsafe {
            let at = bytes.as_ptr().add(offset);
            (
                at.add(starts[0]),
                at.add(starts[1]),
                at.add(starts[2]),
                at.add(starts[3]),
            )
        };
        let (f0, f1, f2, f3) = (s0, s1, s2, s3);
        for i in 0..ROUND {
            // SAFETY: `i < ROUND`, and each lane's round is in `bytes` (above).
            unsafe {
                s0 = step(s0, *p0.add(i));
                s1 = step(s1, *p1.add(i));
                s2 = step(s2, *p2.add(i));
                s3 = step(s3, *p3.add(i));
            }
        }
        if is_match(s0 | s1 | s2 | s3) {
            // The first states go into an array only here: built before the
            // round, it was written to memory on every round.
            [s0, s1, s2, s3] = record_round(bytes, &starts, offset, [f0, f1, f2, f3], signals);
        }
    }
    let states = [s0, s1, s2, s3];
    for k in 0..LANES {
        let done = starts[k] + rounds * ROUND;
        step_recording(bytes, &bytes[done..ends[k]], done, states[k], signals);
    }
}

/// Steps a round of every lane again, exactly, from its first state,
/// recording where matches end; returns the lanes' exact states. Rare, and
/// out of the laned loop's way.
#[cold]
#[inline(never)]
fn record_round(
    bytes: &[u8],
    starts: &[usize; LANES],
    offset: usize,
    firsts: [u32; LANES],
    signals: &mut Signals,
) -> [u32; LANES] {
    std::array::from_fn(|k| {
        let at = starts[k] + offset;
        step_recording(bytes, round_at(bytes, at), at, firsts[k], signals)
    })
}

/// Scans `bytes[start..end]` as one run from the initial state.
fn scan_from(bytes: &[u8], start: usize, end: usize, signals: &mut Signals) {
    let mut state = 0u32;
    let mut rounds = bytes[start..end].chunks_exact(ROUND);
    let mut offset = start;
    for round in &mut rounds {
        let first = state;
        for &byte in round {
            state = step(state, byte);
        }
        if is_match(state) {
            state = step_recording(bytes, round, offset, first, signals);
        }
        offset += ROUND;
    }
    step_recording(bytes, rounds.remainder(), offset, state, signals);
}

/// Steps `part` (which starts at `offset` in `bytes`) exactly from `state`,
/// recording every match; returns the final state.
fn step_recording(
    bytes: &[u8],
    part: &[u8],
    offset: usize,
    mut state: u32,
    signals: &mut Signals,
) -> u32 {
    for (index, &byte) in part.iter().enumerate() {
        state = step_exact(state, byte);
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
    let slot = (state - MATCH_FLAG) as usize / ROW_BYTES;
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
        assert!(scan("stop reason: error").has(StopReasonServerError));
        assert!(!scan("Reason: errors in the request body").has(StopReasonServerError));
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
    fn every_entry_starts_a_row() {
        // What `step` and `step_exact` read unchecked relies on: from any
        // entry, any class stays inside the table the entry's row is in.
        let match_rows_bytes = MATCH_TRANSITIONS.len() * 4;
        for (index, &next) in TRANSITIONS.iter().chain(&MATCH_TRANSITIONS).enumerate() {
            let (row, table_bytes) = if is_match(next) {
                ((next - MATCH_FLAG) as usize, match_rows_bytes)
            } else {
                (next as usize, MATCH_FLAG as usize)
            };
            assert_eq!(row % ROW_BYTES, 0, "entry {index} = {next}");
            assert!(row + ROW_BYTES <= table_bytes, "entry {index} = {next}");
        }
        assert_eq!(
            TRANSITIONS.len() * 4,
            MATCH_FLAG as usize + match_rows_bytes,
            "the fast table holds every match state's row"
        );
        assert!(usize::from(*CLASSES.iter().max().unwrap()) < CLASS_COUNT);
        assert_eq!(
            usize::from(*OUTPUT_STARTS.last().unwrap()),
            OUTPUT_PATTERNS.len()
        );
        assert_eq!(
            (OUTPUT_STARTS.len() - 1) * ROW_BYTES,
            match_rows_bytes,
            "one output list per match state"
        );
    }

    #[test]
    fn the_fast_table_keeps_a_run_in_the_match_it_reached() {
        for (index, &next) in MATCH_TRANSITIONS.iter().enumerate() {
            let state = MATCH_FLAG + (index / CLASS_COUNT * ROW_BYTES) as u32;
            let byte = CLASSES
                .iter()
                .position(|&class| usize::from(class) == index % CLASS_COUNT)
                .map(|b| b as u8);
            if let Some(byte) = byte {
                assert_eq!(step(state, byte), state);
                assert_eq!(step_exact(state, byte), next);
            }
        }
    }

    #[test]
    fn dense_matches_in_every_round_are_all_found() {
        // Rounds that start in a match state, and matches in consecutive
        // rounds of every lane: the fast loop hands each such round over.
        let text = "overloaded rate limit ".repeat(40);
        let mut single = Signals::default();
        scan_from(text.as_bytes(), 0, text.len(), &mut single);
        assert_eq!(scan(&text), single);
        assert!(single.has(Overloaded) && single.has(RateLimit));
    }

    /// Every phrase looked for at every position, edges checked: what
    /// `scan` must find, by the plainest means.
    fn scan_naively(text: &str) -> Signals {
        let lower = text.as_bytes().to_ascii_lowercase();
        let mut signals = Signals::default();
        for (index, (phrase, _, edge)) in PHRASES.iter().enumerate() {
            let phrase = phrase.as_bytes();
            for start in 0..=lower.len().saturating_sub(phrase.len()) {
                let end = start + phrase.len();
                if end > lower.len() || &lower[start..end] != phrase {
                    continue;
                }
                let before = start == 0 || !is_word_byte(lower[start - 1]);
                let after = end == lower.len() || !is_word_byte(lower[end]);
                let stands = match edge {
                    Edge::Anywhere => true,
                    Edge::Word => before && after,
                    Edge::WordEnd => after,
                    Edge::WordStart => before,
                };
                if stands {
                    signals.0 |= PHRASE_SIGNALS[index];
                }
            }
        }
        signals
    }

    #[test]
    fn agrees_with_a_naive_search_on_mixed_texts() {
        // Phrases (some cut short, some upper-cased) between filler, at
        // lengths on both sides of the laned threshold.
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move |bound: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % bound as u64) as usize
        };
        let fillers = [" ", "x", "_", "; id 7f3a ", "\n", "é", "—", "429"];
        for case in 0..400 {
            let target = [40, 250, 300, 700, 1500][case % 5];
            let mut text = String::new();
            while text.len() < target {
                let (phrase, _, _) = PHRASES[next(PHRASES.len())];
                let piece = match next(4) {
                    0 => phrase.to_ascii_uppercase(),
                    1 => phrase[..phrase.floor_char_boundary(phrase.len() / 2)].to_string(),
                    _ => phrase.to_string(),
                };
                text.push_str(&piece);
                for _ in 0..next(3) {
                    text.push_str(fillers[next(fillers.len())]);
                }
                if next(3) == 0 {
                    text.push_str(&"lorem ipsum ".repeat(next(12)));
                }
            }
            assert_eq!(scan(&text), scan_naively(&text), "{text:?}");
        }
    }

    #[test]
    fn empty_text_has_no_signals() {
        assert_eq!(scan(""), Signals::default());
    }
}
