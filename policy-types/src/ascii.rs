//! Whether a packed report's text is ASCII, the check that lets a module
//! skip `str::from_utf8` on nearly every text (provider errors nearly all
//! are ASCII).
//!
//! In the sandbox (wasm with SIMD) the standard library's check is a call
//! that takes a word a turn; here sixteen bytes are one load. A long text is
//! taken sixty-four bytes a turn, four loads folded into one test: each
//! turn of a loop also pays wasmtime's fuel count and its check at the
//! loop's head, so fewer turns are fewer instructions a byte (BENCHMARKS.md,
//! issue 16, eighteenth part). The loop's steps are written once over a
//! `chunk::Chunk`: a SIMD register in the module, a `u128` natively, so the
//! tests walk the same steps the module does.

/// Bytes a chunk holds.
const LANES: usize = 16;

/// Chunks a turn of the long loop folds into one test.
const CHUNKS_A_TURN: usize = 4;

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod chunk {
    use std::arch::wasm32::{u8x16_bitmask, v128, v128_load, v128_or};

    /// Sixteen bytes in one SIMD register.
    pub type Chunk = v128;

    /// The sixteen bytes of `bytes` from `at`.
    ///
    /// # Safety
    ///
    /// `at + 16 <= bytes.len()`.
    #[inline(always)]
    pub unsafe fn load(bytes: &[u8], at: usize) -> Chunk {
        debug_assert!(at + super::LANES <= bytes.len());
        // SAFETY: the caller's promise; `v128_load` reads unaligned.
        unsafe { v128_load(bytes.as_ptr().add(at).cast()) }
    }

    /// The bits of both.
    #[inline(always)]
    pub fn or(a: Chunk, b: Chunk) -> Chunk {
        v128_or(a, b)
    }

    /// Whether any byte has its high bit set.
    #[inline(always)]
    pub fn any_high(chunk: Chunk) -> bool {
        u8x16_bitmask(chunk) != 0
    }
}

#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
#[cfg_attr(not(test), allow(dead_code))]
mod chunk {
    /// Sixteen bytes in one integer.
    pub type Chunk = u128;

    /// The sixteen bytes of `bytes` from `at`.
    ///
    /// # Safety
    ///
    /// None: out of bounds it panics. `unsafe` only to have the module's
    /// signature, so the loop calls both alike.
    pub unsafe fn load(bytes: &[u8], at: usize) -> Chunk {
        let sixteen = bytes[at..at + super::LANES]
            .try_into()
            .expect("sixteen bytes");
        u128::from_ne_bytes(sixteen)
    }

    /// The bits of both.
    pub fn or(a: Chunk, b: Chunk) -> Chunk {
        a | b
    }

    /// Whether any byte has its high bit set.
    pub fn any_high(chunk: Chunk) -> bool {
        chunk & u128::from_ne_bytes([0x80; 16]) != 0
    }
}

/// Whether every byte of `bytes` is ASCII.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
#[inline(always)]
pub(crate) fn is_ascii(bytes: &[u8]) -> bool {
    if bytes.len() < LANES {
        short_is_ascii(bytes)
    } else {
        long_is_ascii(bytes)
    }
}

/// Elsewhere the standard library's check is fast enough.
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
pub(crate) fn is_ascii(bytes: &[u8]) -> bool {
    bytes.is_ascii()
}

/// [`is_ascii`] of sixteen bytes or more: sixty-four a turn, then sixteen,
/// then the last sixteen (overlapping what was checked).
///
/// `bytes` must hold at least sixteen bytes: the last load starts at
/// `len - 16`. [`is_ascii`] sends shorter texts to [`short_is_ascii`];
/// only a debug build checks it here, to keep the module's loop lean.
#[cfg_attr(
    not(any(test, all(target_arch = "wasm32", target_feature = "simd128"))),
    allow(dead_code)
)]
#[inline(always)]
fn long_is_ascii(bytes: &[u8]) -> bool {
    use chunk::{any_high, load, or};
    const TURN: usize = LANES * CHUNKS_A_TURN;
    debug_assert!(bytes.len() >= LANES);
    let mut at = 0;
    // SAFETY (every load): each loop's bound keeps its loads inside
    // `bytes`, and the last load starts at `len - 16 >= 0`.
    while at + TURN <= bytes.len() {
        let folded = unsafe {
            or(
                or(load(bytes, at), load(bytes, at + LANES)),
                or(load(bytes, at + 2 * LANES), load(bytes, at + 3 * LANES)),
            )
        };
        if any_high(folded) {
            return false;
        }
        at += TURN;
    }
    while at + LANES <= bytes.len() {
        if any_high(unsafe { load(bytes, at) }) {
            return false;
        }
        at += LANES;
    }
    !any_high(unsafe { load(bytes, bytes.len() - LANES) })
}

/// [`is_ascii`] of fewer than sixteen bytes in at most two loads, the
/// second overlapping the first: in the sandbox the standard library's
/// check is a call, and most of a report's texts are short or empty (its
/// headers, its codes).
#[cfg_attr(
    not(any(test, all(target_arch = "wasm32", target_feature = "simd128"))),
    allow(dead_code)
)]
#[inline(always)]
fn short_is_ascii(bytes: &[u8]) -> bool {
    debug_assert!(bytes.len() < LANES);
    let high = |word: u64| word & u64::from_ne_bytes([0x80; 8]) != 0;
    let len = bytes.len();
    if len >= 8 {
        let first = u64::from_ne_bytes(bytes[..8].try_into().expect("eight bytes"));
        let last = u64::from_ne_bytes(bytes[len - 8..].try_into().expect("eight bytes"));
        return !high(first | last);
    }
    if len >= 4 {
        let first = u32::from_ne_bytes(bytes[..4].try_into().expect("four bytes"));
        let last = u32::from_ne_bytes(bytes[len - 4..].try_into().expect("four bytes"));
        return !high(u64::from(first | last));
    }
    bytes.iter().all(u8::is_ascii)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each check answers the standard library's `is_ascii` for every
    /// length it takes (the long one across several turns of each of its
    /// loops and every tail), with one byte of the high half at each place,
    /// and with none.
    fn finds_a_high_byte_anywhere(check: fn(&[u8]) -> bool, lengths: std::ops::Range<usize>) {
        for len in lengths {
            let plain: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            assert!(check(&plain), "{len}");
            for at in 0..len {
                for high in [0x80, 0xc3, 0xff] {
                    let mut text = plain.clone();
                    text[at] = high;
                    assert!(!check(&text), "{len} {at} {high:#x}");
                }
            }
        }
    }

    #[test]
    fn the_short_check_finds_a_high_byte_anywhere() {
        finds_a_high_byte_anywhere(short_is_ascii, 0..LANES);
    }

    #[test]
    fn the_long_check_finds_a_high_byte_anywhere() {
        finds_a_high_byte_anywhere(long_is_ascii, LANES..3 * LANES * CHUNKS_A_TURN + LANES);
    }

    #[test]
    fn the_check_in_use_answers_as_the_standard_library() {
        for text in [
            "",
            "a",
            "plain ascii, long enough to take a turn or two of the loop..........",
            "é",
            "余额不足 0123456789abcdef0123456789abcdef0123456789abcdef0123456789",
        ] {
            assert_eq!(is_ascii(text.as_bytes()), text.is_ascii(), "{text}");
        }
    }
}
