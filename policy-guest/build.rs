//! Compiles the phrase table (`src/phrases.rs`) into an Aho-Corasick DFA at
//! build time and writes it as Rust source to `OUT_DIR/phrase_dfa.rs`.
//!
//! Why not build it at run time with the `aho-corasick` crate: inside the
//! component that construction costs ~50 million wasm instructions, paid by
//! the first call of every fresh instance — exactly when a host is
//! recovering from a trap — and its overlapping search runs ~1.5 ns per
//! byte. Why not a serialised `regex-automata` DFA: for these phrases it is
//! 5.9 MB. The table here is ~0.4 MB, needs no construction, and the scan in
//! `src/signals.rs` is one table lookup per byte.
//!
//! The automaton is the textbook one: a trie of the ASCII-lowercased
//! phrases, failure links by breadth-first search, every missing transition
//! resolved through them, and each state's output set merged with its
//! failure state's. Bytes are grouped into classes with identical columns,
//! and states that report matches are numbered last so the scan tests for
//! output with one comparison.

use std::collections::{HashMap, VecDeque};
use std::env;
use std::fmt::Write as _;
use std::path::PathBuf;

#[allow(dead_code)]
mod phrases {
    include!("src/phrases.rs");
}

fn main() {
    println!("cargo:rerun-if-changed=src/phrases.rs");
    println!("cargo:rerun-if-changed=build.rs");
    let patterns: Vec<Vec<u8>> = phrases::PHRASES
        .iter()
        .map(|(phrase, _, _)| phrase.to_ascii_lowercase().into_bytes())
        .collect();
    let dfa = Dfa::build(&patterns);
    let out =
        PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("phrase_dfa.rs");
    std::fs::write(&out, dfa.to_rust()).expect("write the phrase DFA");
}

struct Dfa {
    /// Byte → class.
    classes: [u8; 256],
    class_count: usize,
    /// Premultiplied: `transitions[state + class]` → the next state, where a
    /// state is represented by `id * class_count`. The generated table (see
    /// `to_rust`) lays the rows out by byte offset instead.
    transitions: Vec<u32>,
    /// States at or above this id report matches (written premultiplied).
    first_match_state: usize,
    /// For match state `first_match_state + i`, its patterns are
    /// `patterns[starts[i]..starts[i + 1]]`.
    output_starts: Vec<u16>,
    output_patterns: Vec<u16>,
}

const NONE: u32 = u32::MAX;

impl Dfa {
    fn build(patterns: &[Vec<u8>]) -> Dfa {
        let (raw_class, raw_count) = raw_classes(patterns);
        let (goto, mut outputs) = trie(patterns, &raw_class, raw_count);
        let (delta, breadth_first) = complete(&goto, &mut outputs, raw_count);
        let states = goto.len();
        let (classes, kept_raw) = merge_classes(&delta, &raw_class, raw_count);
        let class_count = kept_raw.len();
        // Number states without output first (the root stays 0: no phrase is
        // empty), each group shallowest first: a scan spends nearly all its
        // steps in the few shallow states, and numbering them together keeps
        // their rows in a few cache lines however large the table grows.
        let mut order: Vec<usize> = breadth_first
            .iter()
            .copied()
            .filter(|&s| outputs[s].is_empty())
            .collect();
        let first_match_state = order.len();
        order.extend(
            breadth_first
                .iter()
                .copied()
                .filter(|&s| !outputs[s].is_empty()),
        );
        assert_eq!(order.len(), states, "every state numbered once");
        let mut new_id = vec![0usize; states];
        for (new, &old) in order.iter().enumerate() {
            new_id[old] = new;
        }
        let mut transitions = Vec::with_capacity(states * class_count);
        for &old in &order {
            for &raw in &kept_raw {
                let next = new_id[delta[old][raw] as usize] * class_count;
                transitions.push(u32::try_from(next).expect("the table fits u32 indices"));
            }
        }
        let mut output_starts = vec![0u16];
        let mut output_patterns = Vec::new();
        for &old in &order[first_match_state..] {
            let mut patterns = outputs[old].clone();
            patterns.sort_unstable();
            patterns.dedup();
            output_patterns.extend(patterns);
            output_starts.push(u16::try_from(output_patterns.len()).expect("outputs fit u16"));
        }
        Dfa {
            classes,
            class_count,
            transitions,
            first_match_state,
            output_starts,
            output_patterns,
        }
    }

    /// Writes the automaton for the scan in `src/signals.rs`.
    ///
    /// A state is the *byte offset* of its row (`CLASS_COUNT` `u32`s), and
    /// an entry is the next state's offset: a step is `state + 4 * class`
    /// and one load, and the multiply by 4 is on the class, which does not
    /// wait for the previous step (wasm has no scaled addressing, so a scale
    /// on the state would lengthen every step's dependency chain).
    ///
    /// States without output fill the rows from offset 0; the states that
    /// report matches start at `MATCH_FLAG`, the first power of two past
    /// them, so a match state is exactly one whose offset has that bit set
    /// (the rows between are zero, never reached).
    ///
    /// Two tables. In `TRANSITIONS`, the one the fast loop steps, a match
    /// state's row leads back to itself whatever the byte: a run that
    /// reaches a match stays there until the end of its round, so the round
    /// tells whether it met a match by its last state alone, with nothing
    /// to accumulate on every step. `MATCH_TRANSITIONS` holds the match
    /// states' real rows; a round that met a match is stepped again through
    /// both tables (the exact automaton), recording where matches end.
    fn to_rust(&self) -> String {
        let stride = self.class_count * 4;
        let plain_bytes = self.first_match_state * stride;
        let match_flag = plain_bytes.next_power_of_two();
        let match_states = self.transitions.len() / self.class_count - self.first_match_state;
        assert!(
            match_states * stride < match_flag,
            "match states must stay below twice the flag"
        );
        let offset_of = |premultiplied: u32| -> u32 {
            let id = premultiplied as usize / self.class_count;
            let offset = if id < self.first_match_state {
                id * stride
            } else {
                match_flag + (id - self.first_match_state) * stride
            };
            u32::try_from(offset).expect("the table fits u32 offsets")
        };
        let total_bytes = match_flag + match_states * stride;
        let mut fast = vec![0u32; total_bytes / 4];
        let mut match_rows = vec![0u32; match_states * self.class_count];
        for (index, &next) in self.transitions.iter().enumerate() {
            let (id, class) = (index / self.class_count, index % self.class_count);
            let row = offset_of((id * self.class_count) as u32) as usize;
            if id < self.first_match_state {
                fast[row / 4 + class] = offset_of(next);
            } else {
                fast[row / 4 + class] = row as u32;
                match_rows[(row - match_flag) / 4 + class] = offset_of(next);
            }
        }
        // Every entry starts a row, so any entry plus any class stays in its
        // table: the scan relies on this to read without bounds checks.
        let starts_a_row = |offset: usize| {
            (offset < plain_bytes && offset.is_multiple_of(stride))
                || (offset >= match_flag
                    && offset < total_bytes
                    && (offset - match_flag).is_multiple_of(stride))
        };
        assert!(
            fast.iter()
                .chain(&match_rows)
                .all(|&next| starts_a_row(next as usize)),
            "every entry starts a row"
        );

        let mut out = String::new();
        writeln!(
            out,
            "// Generated by policy-guest/build.rs from src/phrases.rs. Do not edit."
        )
        .unwrap();
        writeln!(out, "const CLASS_COUNT: usize = {};", self.class_count).unwrap();
        writeln!(out, "const MATCH_FLAG: u32 = {match_flag};").unwrap();
        write_array(&mut out, "CLASSES", "u8", self.classes.iter());
        write_array(&mut out, "TRANSITIONS", "u32", fast.iter());
        write_array(&mut out, "MATCH_TRANSITIONS", "u32", match_rows.iter());
        write_array(&mut out, "OUTPUT_STARTS", "u16", self.output_starts.iter());
        write_array(
            &mut out,
            "OUTPUT_PATTERNS",
            "u16",
            self.output_patterns.iter(),
        );
        out
    }
}

fn write_array<T: std::fmt::Display>(
    out: &mut String,
    name: &str,
    ty: &str,
    items: impl ExactSizeIterator<Item = T>,
) {
    writeln!(out, "static {name}: [{ty}; {}] = [", items.len()).unwrap();
    for (i, item) in items.enumerate() {
        write!(out, "{item},").unwrap();
        if i % 32 == 31 {
            out.push('\n');
        }
    }
    writeln!(out, "];").unwrap();
}

/// Raw byte classes: one per distinct byte of the phrases, 0 for the rest;
/// and how many there are.
fn raw_classes(patterns: &[Vec<u8>]) -> ([usize; 256], usize) {
    let mut raw_class = [0usize; 256];
    let mut raw_count = 1;
    for byte in patterns.iter().flatten() {
        if raw_class[usize::from(*byte)] == 0 {
            raw_class[usize::from(*byte)] = raw_count;
            raw_count += 1;
        }
    }
    (raw_class, raw_count)
}

/// The phrases' trie over raw classes: each state's children, and the
/// phrases ending at each state.
fn trie(
    patterns: &[Vec<u8>],
    raw_class: &[usize; 256],
    raw_count: usize,
) -> (Vec<Vec<u32>>, Vec<Vec<u16>>) {
    let mut goto: Vec<Vec<u32>> = vec![vec![NONE; raw_count]];
    let mut outputs: Vec<Vec<u16>> = vec![Vec::new()];
    for (id, pattern) in patterns.iter().enumerate() {
        assert!(!pattern.is_empty(), "empty phrase");
        let mut state = 0usize;
        for byte in pattern {
            let class = raw_class[usize::from(*byte)];
            if goto[state][class] == NONE {
                goto.push(vec![NONE; raw_count]);
                outputs.push(Vec::new());
                goto[state][class] = (goto.len() - 1) as u32;
            }
            state = goto[state][class] as usize;
        }
        outputs[state].push(u16::try_from(id).expect("fewer than 65536 phrases"));
    }
    (goto, outputs)
}

/// Failure links and the full transition function, breadth first: the
/// transitions, and the states in breadth-first order. Each state's
/// outputs gain its failure state's.
fn complete(
    goto: &[Vec<u32>],
    outputs: &mut [Vec<u16>],
    raw_count: usize,
) -> (Vec<Vec<u32>>, Vec<usize>) {
    let states = goto.len();
    let mut delta = vec![vec![0u32; raw_count]; states];
    let mut fail = vec![0usize; states];
    let mut queue = VecDeque::new();
    let mut breadth_first = vec![0usize];
    for class in 0..raw_count {
        let child = goto[0][class];
        if child != NONE {
            delta[0][class] = child;
            queue.push_back(child as usize);
        }
    }
    while let Some(state) = queue.pop_front() {
        breadth_first.push(state);
        let own = outputs[fail[state]].clone();
        outputs[state].extend(own);
        for class in 0..raw_count {
            let child = goto[state][class];
            if child == NONE {
                delta[state][class] = delta[fail[state]][class];
            } else {
                fail[child as usize] = delta[fail[state]][class] as usize;
                delta[state][class] = child;
                queue.push_back(child as usize);
            }
        }
    }
    (delta, breadth_first)
}

/// Byte classes whose columns are identical, merged: each byte's class
/// (ASCII case folded), and the raw class kept for each merged one.
fn merge_classes(
    delta: &[Vec<u32>],
    raw_class: &[usize; 256],
    raw_count: usize,
) -> ([u8; 256], Vec<usize>) {
    let mut merged_of_raw = vec![0usize; raw_count];
    let mut columns: HashMap<Vec<u32>, usize> = HashMap::new();
    let mut kept_raw = Vec::new();
    for raw in 0..raw_count {
        let column: Vec<u32> = delta.iter().map(|row| row[raw]).collect();
        let next = columns.len();
        let merged = *columns.entry(column).or_insert(next);
        if merged == next {
            kept_raw.push(raw);
        }
        merged_of_raw[raw] = merged;
    }
    let mut classes = [0u8; 256];
    for byte in 0..=255u8 {
        let raw = raw_class[usize::from(byte.to_ascii_lowercase())];
        classes[usize::from(byte)] = u8::try_from(merged_of_raw[raw]).expect("at most 256 classes");
    }
    (classes, kept_raw)
}
