//! Byte comparison for the default component (see `component::builtins`,
//! which exports it as `memcmp`); here so that it is tested natively.

/// C's `memcmp`, eight bytes a turn: the sign of the first differing byte
/// of `a` and `b` (as unsigned), 0 when their first `n` bytes are equal.
///
/// # Safety
///
/// `a` and `b` are valid for reads of `n` bytes.
#[cfg_attr(
    not(all(target_arch = "wasm32", feature = "component")),
    allow(dead_code)
)]
#[inline(always)]
pub(crate) unsafe fn compare(a: *const u8, b: *const u8, n: usize) -> i32 {
    const WORD: usize = std::mem::size_of::<u64>();
    let mut at = 0;
    while at + WORD <= n {
        // SAFETY: `at + WORD <= n`; unaligned reads are what is asked for.
        let (x, y) = unsafe {
            (
                a.add(at).cast::<u64>().read_unaligned(),
                b.add(at).cast::<u64>().read_unaligned(),
            )
        };
        if x != y {
            // Read as little-endian, the lowest differing byte is the
            // first in memory.
            let first = at + ((u64::from_le(x) ^ u64::from_le(y)).trailing_zeros() / 8) as usize;
            // SAFETY: `first < at + WORD <= n`.
            return unsafe { i32::from(*a.add(first)) - i32::from(*b.add(first)) };
        }
        at += WORD;
    }
    while at < n {
        // SAFETY: `at < n`.
        let (x, y) = unsafe { (*a.add(at), *b.add(at)) };
        if x != y {
            return i32::from(x) - i32::from(y);
        }
        at += 1;
    }
    0
}

#[cfg(test)]
mod tests {
    use super::compare;

    fn sign(a: &[u8], b: &[u8]) -> i32 {
        assert_eq!(a.len(), b.len());
        // SAFETY: both slices hold `a.len()` bytes.
        unsafe { compare(a.as_ptr(), b.as_ptr(), a.len()) }.signum()
    }

    #[test]
    fn agrees_with_slice_order_at_every_length_and_position() {
        for len in 0..40 {
            let base: Vec<u8> = (0..len as u8).map(|i| i.wrapping_mul(37)).collect();
            assert_eq!(sign(&base, &base), 0, "len {len}");
            for at in 0..len {
                for delta in [1u8, 0x80, 0xff] {
                    let mut other = base.clone();
                    other[at] = other[at].wrapping_add(delta);
                    let expected = base.cmp(&other) as i32;
                    assert_eq!(sign(&base, &other), expected, "len {len} at {at} +{delta}");
                    assert_eq!(sign(&other, &base), -expected, "len {len} at {at} +{delta}");
                }
            }
        }
    }

    #[test]
    fn the_first_difference_decides_not_the_largest() {
        // Differences in two bytes of one word: the earlier one wins.
        assert_eq!(sign(b"abcdefgh", b"bbcdefga"), -1);
        assert_eq!(sign(b"abcdefgz", b"abcdefha"), -1);
        assert_eq!(sign(b"openai:k2", b"openai:k1"), 1);
    }
}
