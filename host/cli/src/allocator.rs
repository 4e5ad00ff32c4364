//! The process's allocator: small blocks from mimalloc, large ones from
//! the system's malloc.
//!
//! A request allocates and frees over a hundred small blocks; mimalloc's
//! per-thread free lists take a fraction of the instructions glibc's
//! malloc does for each (docs/performance.md). But
//! mimalloc keeps the memory of large blocks once freed: twenty 4 MiB
//! request bodies left a gateway at 180 MiB where glibc's returned to
//! 60 MiB. So a block of more than [`SMALL`] bytes is the system's, and
//! only the small ones, whose memory is reused request after request,
//! are mimalloc's. `GlobalAlloc` hands `dealloc` and `realloc` the layout
//! a block was allocated with, so which allocator owns a block follows
//! from its size alone; a reallocation across the line moves the block.
//!
//! mimalloc is called through its plain entry points for alignments of
//! at most a machine word, which every mimalloc block has (the `mimalloc`
//! crate's allocator sends every request through the aligned ones, which
//! look for a block that happens to be aligned and otherwise
//! over-allocate).

use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::c_void;

use libmimalloc_sys::{
    mi_free, mi_malloc, mi_malloc_aligned, mi_realloc, mi_realloc_aligned, mi_zalloc,
    mi_zalloc_aligned,
};

/// The largest block mimalloc serves: above it, blocks are few a request
/// (bodies, replies, buffers) and their memory should go back when freed.
/// 64 KiB covers a request's small bookkeeping with room.
pub(crate) const SMALL: usize = 64 * 1024;

/// The largest alignment every mimalloc block has: a machine word.
const WORD_ALIGN: usize = std::mem::size_of::<usize>();

/// Small blocks from mimalloc, large ones from [`System`].
pub(crate) struct Allocator;

// SAFETY: a block of at most `SMALL` bytes comes from and goes back to
// mimalloc, a larger one from and to `System`; `GlobalAlloc`'s callers
// pass the layout a block was made with, so both sides agree on its
// owner. Plain mimalloc calls are made only for alignments mimalloc meets
// for every block.
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: `layout` is non-zero-sized, as `GlobalAlloc` requires.
        unsafe {
            match (layout.size() <= SMALL, layout.align() <= WORD_ALIGN) {
                (false, _) => System.alloc(layout),
                (true, true) => mi_malloc(layout.size()).cast(),
                (true, false) => mi_malloc_aligned(layout.size(), layout.align()).cast(),
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        unsafe {
            match (layout.size() <= SMALL, layout.align() <= WORD_ALIGN) {
                (false, _) => System.alloc_zeroed(layout),
                (true, true) => mi_zalloc(layout.size()).cast(),
                (true, false) => mi_zalloc_aligned(layout.size(), layout.align()).cast(),
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated with `layout`, so by its owner.
        unsafe {
            if layout.size() <= SMALL {
                mi_free(ptr.cast::<c_void>());
            } else {
                System.dealloc(ptr, layout);
            }
        }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` was allocated with `layout`; `new_size` is
        // non-zero and fits `layout`'s alignment, as `GlobalAlloc` requires.
        unsafe {
            match (layout.size() <= SMALL, new_size <= SMALL) {
                (false, false) => System.realloc(ptr, layout, new_size),
                (true, true) if layout.align() <= WORD_ALIGN => {
                    mi_realloc(ptr.cast(), new_size).cast()
                }
                (true, true) => mi_realloc_aligned(ptr.cast(), new_size, layout.align()).cast(),
                // Across the line: a block of the other allocator.
                _ => {
                    let moved = Layout::from_size_align_unchecked(new_size, layout.align());
                    let new = self.alloc(moved);
                    if !new.is_null() {
                        std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                    new
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Grows and shrinks a block across the line and back, in both
    /// alignments: the bytes survive each move and each free finds its
    /// owner (a wrong owner aborts the test process).
    #[test]
    fn a_block_keeps_its_bytes_across_the_line() {
        for align in [1, 8, 64] {
            let layout = Layout::from_size_align(100, align).unwrap();
            // SAFETY: each step passes the layout the block has.
            unsafe {
                let mut ptr = Allocator.alloc(layout);
                assert!(!ptr.is_null());
                assert_eq!(ptr as usize % align, 0);
                for i in 0..100 {
                    *ptr.add(i) = i as u8;
                }
                let mut size = 100;
                for new_size in [SMALL, SMALL + 1, 4 * SMALL, SMALL - 1, 200, SMALL + 7] {
                    ptr = Allocator.realloc(
                        ptr,
                        Layout::from_size_align(size, align).unwrap(),
                        new_size,
                    );
                    assert!(!ptr.is_null());
                    assert_eq!(ptr as usize % align, 0);
                    size = new_size;
                    for i in 0..100 {
                        assert_eq!(*ptr.add(i), i as u8, "byte {i} after a move to {new_size}");
                    }
                }
                Allocator.dealloc(ptr, Layout::from_size_align(size, align).unwrap());
                let zeroed = Layout::from_size_align(SMALL + 1, align).unwrap();
                let ptr = Allocator.alloc_zeroed(zeroed);
                assert!((0..SMALL + 1).all(|i| *ptr.add(i) == 0));
                Allocator.dealloc(ptr, zeroed);
            }
        }
    }
}
