//! A list that keeps its first few items in place and moves to the heap
//! only when it outgrows them.
//!
//! Why not `smallvec`, which did this job before: its growth path unwraps a
//! `Result` whose error is formatted with `Debug`, and that brought the
//! formatting machinery for layouts, alignments and hexadecimal numbers
//! into the policy module, ~1,000 lines of wasm that Cranelift compiles on
//! every module admitted (docs/performance.md). This
//! list holds `Copy` items only, so it never drops one, and it grows through
//! `Vec`, whose failure paths the module already has.

use std::fmt;
use std::mem::MaybeUninit;
use std::ops::Deref;

/// Up to `N` items of a `Copy` type inline; more on the heap.
#[derive(Clone)]
pub struct InlineVec<T: Copy, const N: usize> {
    /// How many of `inline` are set, while the items are kept there.
    len: usize,
    /// The items, while there are at most `N` of them.
    inline: [MaybeUninit<T>; N],
    /// The items, once the list has outgrown `inline`; it stays here after,
    /// even if it shrinks again.
    heap: Vec<T>,
    /// Whether the items are in `heap`.
    spilled: bool,
}

impl<T: Copy, const N: usize> InlineVec<T, N> {
    /// An empty list; no allocation.
    pub const fn new() -> Self {
        InlineVec {
            len: 0,
            inline: [const { MaybeUninit::uninit() }; N],
            heap: Vec::new(),
            spilled: false,
        }
    }

    /// Appends `item`.
    #[inline]
    pub fn push(&mut self, item: T) {
        if !self.spilled {
            if let Some(slot) = self.inline.get_mut(self.len) {
                slot.write(item);
                self.len += 1;
                return;
            }
            self.spill(1);
        }
        self.heap.push(item);
    }

    /// Removes the last item and returns it.
    #[inline]
    pub fn pop(&mut self) -> Option<T> {
        if self.spilled {
            return self.heap.pop();
        }
        self.len = self.len.checked_sub(1)?;
        // SAFETY: the first `len + 1` slots were written (push's invariant),
        // and `T: Copy` leaves nothing to drop in the slot read out.
        Some(unsafe { self.inline[self.len].assume_init() })
    }

    /// Removes every item; keeps what the heap holds for the next ones.
    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
        self.heap.clear();
    }

    /// Makes room for `additional` more items: on the heap at once when
    /// they would not fit inline, so a list whose size is known grows once.
    #[inline]
    pub fn reserve(&mut self, additional: usize) {
        if self.spilled {
            self.heap.reserve(additional);
        } else if self.len.saturating_add(additional) > N {
            self.spill(additional);
        }
    }

    /// Whether the list has outgrown its inline room (and allocated).
    pub fn spilled(&self) -> bool {
        self.spilled
    }

    /// The items, in order.
    #[inline]
    pub fn as_slice(&self) -> &[T] {
        if self.spilled {
            &self.heap
        } else {
            // SAFETY: the first `len` slots were written (push's invariant;
            // pop lowers `len` before a slot is given up), and
            // `MaybeUninit<T>` has the layout of `T`.
            unsafe { std::slice::from_raw_parts(self.inline.as_ptr().cast::<T>(), self.len) }
        }
    }

    /// Moves the inline items to the heap with room for `additional` more.
    #[cold]
    #[inline(never)]
    fn spill(&mut self, additional: usize) {
        let mut heap = Vec::with_capacity(self.len.saturating_add(additional).max(2 * N));
        heap.extend_from_slice(self.as_slice());
        self.heap = heap;
        self.spilled = true;
        self.len = 0;
    }
}

impl<T: Copy, const N: usize> Default for InlineVec<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy, const N: usize> Deref for InlineVec<T, N> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T: Copy + fmt::Debug, const N: usize> fmt::Debug for InlineVec<T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl<T: Copy + PartialEq, const N: usize> PartialEq for InlineVec<T, N> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T: Copy + Eq, const N: usize> Eq for InlineVec<T, N> {}

impl<T: Copy, const N: usize> FromIterator<T> for InlineVec<T, N> {
    fn from_iter<I: IntoIterator<Item = T>>(items: I) -> Self {
        let mut list = Self::new();
        for item in items {
            list.push(item);
        }
        list
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every sequence of pushes, pops, reserves and clears up to a few items
    /// past the inline size leaves the list equal to a `Vec` given the same.
    #[test]
    fn behaves_as_a_vec_across_the_inline_size() {
        const N: usize = 3;
        const STEPS: u32 = 7;
        // Each step: 0 push, 1 pop, 2 reserve two, 3 clear.
        for program in 0..4u32.pow(STEPS) {
            let (mut list, mut model) = (InlineVec::<(u32, u16), N>::new(), Vec::new());
            let mut code = program;
            for step in 0..STEPS {
                match code % 4 {
                    0 => {
                        list.push((step, step as u16 * 7));
                        model.push((step, step as u16 * 7));
                    }
                    1 => assert_eq!(list.pop(), model.pop(), "program {program}"),
                    2 => list.reserve(2),
                    _ => {
                        list.clear();
                        model.clear();
                    }
                }
                code /= 4;
                assert_eq!(list.as_slice(), model.as_slice(), "program {program}");
                assert_eq!(list.last(), model.last());
            }
        }
    }

    #[test]
    fn reserving_past_the_inline_size_spills_once_with_room() {
        let mut list = InlineVec::<u64, 4>::new();
        list.push(1);
        list.reserve(10);
        assert!(list.spilled);
        assert!(list.heap.capacity() >= 11);
        let before = list.heap.as_ptr();
        for i in 2..=11 {
            list.push(i);
        }
        assert_eq!(list.heap.as_ptr(), before, "no second allocation");
        assert_eq!(list.as_slice(), (1..=11).collect::<Vec<_>>().as_slice());
    }

    #[test]
    fn reserving_within_the_inline_size_stays_inline() {
        let mut list = InlineVec::<u8, 4>::new();
        list.push(1);
        list.reserve(3);
        assert!(!list.spilled);
        assert_eq!(list.heap.capacity(), 0);
    }

    #[test]
    fn clones_compare_and_print_as_their_items() {
        let inline: InlineVec<u8, 4> = [1, 2].into_iter().collect();
        let spilled: InlineVec<u8, 1> = [1, 2].into_iter().collect();
        assert_eq!(inline.clone(), inline);
        assert_eq!(spilled.clone().as_slice(), inline.as_slice());
        assert_ne!(inline, [1, 3].into_iter().collect());
        assert_eq!(format!("{inline:?}"), "[1, 2]");
        assert_eq!(format!("{spilled:?}"), "[1, 2]");
    }

    #[test]
    fn a_list_of_none_inline_goes_straight_to_the_heap() {
        let mut list = InlineVec::<u8, 0>::new();
        assert_eq!(list.pop(), None);
        list.push(5);
        assert_eq!(list.as_slice(), &[5]);
        assert_eq!(list.pop(), Some(5));
        assert_eq!(list.pop(), None);
    }
}
