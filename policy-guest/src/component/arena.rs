//! The guest's allocator: a bump arena that starts over whenever nothing
//! in it is live.
//!
//! A policy call allocates its arguments (the host lowers each string and
//! list through `cabi_realloc`), works, allocates its answer, and frees it
//! all by the end of the call's post-return. With Rust's default allocator
//! (dlmalloc) that bookkeeping was a third of the guest's own work on a
//! short classification. Here an allocation is a pointer bump, a free is a
//! count, and when the count reaches zero (between calls) the arena is
//! empty again.
//!
//! What does not fit — a large input, or a call that keeps allocating past
//! [`ARENA_BYTES`] — goes to the system allocator as before. The arena
//! itself takes 1 MiB of the module's memory (capped by the host at
//! 16 MiB) on the first allocation. An allocation that
//! outlives every call only keeps the arena from starting over: the guest
//! is then as fast as with dlmalloc, never wrong.
//!
//! A component instance is single-threaded (no shared memory, no threads),
//! which is what makes the unsynchronised state sound.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;

/// Bytes of the arena: far above a typical call's allocations (a short
/// classification allocates a few KiB; a large order-profiles request some
/// tens), small beside the 16 MiB the host lets a module have.
const ARENA_BYTES: usize = 1 << 20;

/// Alignment of the arena itself; any larger request goes to the system.
const ARENA_ALIGN: usize = 16;

struct State {
    /// First byte of the arena; 0 until the first allocation.
    start: usize,
    /// Where the next allocation may start.
    next: usize,
    /// One past the arena's last byte.
    end: usize,
    /// Allocations in the arena not yet freed.
    live: usize,
}

/// The allocator; see the module docs.
pub struct Arena {
    state: UnsafeCell<State>,
}

// SAFETY: a component instance runs on one thread; nothing else can reach
// the state.
unsafe impl Sync for Arena {}

impl Arena {
    /// An arena that reserves its memory on first use.
    pub const fn new() -> Self {
        Arena {
            state: UnsafeCell::new(State {
                start: 0,
                next: 0,
                end: 0,
                live: 0,
            }),
        }
    }
}

impl Default for Arena {
    fn default() -> Self {
        Self::new()
    }
}

impl State {
    fn contains(&self, ptr: *mut u8) -> bool {
        let at = ptr as usize;
        self.start != 0 && at >= self.start && at < self.end
    }

    /// Room for `layout` in the arena, reserving it on first use.
    unsafe fn bump(&mut self, layout: Layout) -> Option<*mut u8> {
        if layout.align() > ARENA_ALIGN {
            return None;
        }
        if self.start == 0 {
            let arena = Layout::from_size_align(ARENA_BYTES, ARENA_ALIGN).ok()?;
            // SAFETY: a non-zero size.
            let start = unsafe { System.alloc(arena) } as usize;
            if start == 0 {
                return None;
            }
            (self.start, self.next, self.end) = (start, start, start + ARENA_BYTES);
        }
        let at = self.next.checked_add(layout.align() - 1)? & !(layout.align() - 1);
        let next = at.checked_add(layout.size())?;
        if next > self.end {
            return None;
        }
        self.next = next;
        self.live += 1;
        Some(at as *mut u8)
    }

    fn release(&mut self) {
        self.live -= 1;
        if self.live == 0 {
            self.next = self.start;
        }
    }
}

unsafe impl GlobalAlloc for Arena {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: single-threaded (see the `Sync` impl); no reference to
        // the state outlives this call.
        let state = unsafe { &mut *self.state.get() };
        match unsafe { state.bump(layout) } {
            Some(ptr) => ptr,
            None => unsafe { System.alloc(layout) },
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let state = unsafe { &mut *self.state.get() };
        if state.contains(ptr) {
            state.release();
        } else {
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let state = unsafe { &mut *self.state.get() };
        if !state.contains(ptr) {
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        let at = ptr as usize;
        // The newest allocation grows or shrinks in place while it fits;
        // any other shrinks in place (its tail is wasted until the reset).
        if at + layout.size() == state.next && at + new_size <= state.end {
            state.next = at + new_size;
            return ptr;
        }
        if new_size <= layout.size() {
            return ptr;
        }
        // SAFETY: the caller guarantees `new_size` is valid for the
        // alignment (GlobalAlloc::realloc's contract).
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        let moved = unsafe { self.alloc(new_layout) };
        if !moved.is_null() {
            unsafe { std::ptr::copy_nonoverlapping(ptr, moved, layout.size()) };
            unsafe { self.dealloc(ptr, layout) };
        }
        moved
    }
}

impl Arena {
    /// The canonical ABI's `cabi_realloc` on this allocator: what the host
    /// calls to place each string and list it passes in. Empty requests get
    /// a dangling, aligned pointer, as the ABI allows; a failed allocation
    /// traps.
    ///
    /// # Safety
    ///
    /// As for `GlobalAlloc`: `align` is a power of two, and a non-null
    /// `old_ptr` is a live allocation of `old_len` bytes at `align`.
    #[inline]
    pub unsafe fn cabi_realloc(
        &self,
        old_ptr: *mut u8,
        old_len: usize,
        align: usize,
        new_len: usize,
    ) -> *mut u8 {
        let ptr = if old_len == 0 {
            if new_len == 0 {
                return align as *mut u8;
            }
            // SAFETY: a non-zero size; the caller vouches for `align`.
            unsafe { self.alloc(Layout::from_size_align_unchecked(new_len, align)) }
        } else {
            // SAFETY: the caller vouches for the old allocation.
            let old = unsafe { Layout::from_size_align_unchecked(old_len, align) };
            unsafe { self.realloc(old_ptr, old, new_len) }
        };
        if ptr.is_null() {
            std::process::abort();
        }
        ptr
    }
}
