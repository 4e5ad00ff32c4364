//! Two entry points every default-component call goes through many times,
//! defined here instead of taken from the toolchain.
//!
//! - `cabi_realloc`: wit-bindgen's goes through a C shim, its own Rust
//!   function, the `__rust_alloc` shims and then the allocator — five wasm
//!   calls for a pointer bump, ~200 instructions each time the host lowers a
//!   string or a list (36 times per replayed request, BENCHMARKS.md). Its C
//!   definition is weak; this one goes straight to the arena.
//! - `memcmp`: the toolchain's for wasm compares a byte per loop turn, ~290
//!   instructions for a profile id; order-profiles compares ids and
//!   providers a dozen times a call. This one compares eight bytes a turn.
//!   (The toolchain's mem functions are weak symbols for this purpose.)

use super::ALLOCATOR;

/// See the module docs.
///
/// # Safety
///
/// The canonical ABI's contract for `cabi_realloc` (see
/// [`super::Arena::cabi_realloc`]).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cabi_realloc(
    old_ptr: *mut u8,
    old_len: usize,
    align: usize,
    new_len: usize,
) -> *mut u8 {
    // SAFETY: the host keeps the ABI's contract.
    unsafe { ALLOCATOR.cabi_realloc(old_ptr, old_len, align, new_len) }
}

/// C's `memcmp`: the sign of the first differing byte of `a` and `b` (as
/// unsigned), 0 when their first `n` bytes are equal.
///
/// # Safety
///
/// `a` and `b` are valid for reads of `n` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    // SAFETY: the caller vouches for `n` bytes at each pointer.
    unsafe { crate::bytes::compare(a, b, n) }
}
