// Shared by `host/sandbox/build.rs` and `tests/support/guests.rs` (both `include!`
// it): the variables of an outer cargo build that must not leak into a
// nested guest build — host flags would break a wasm build, clippy's wrapper
// would lint the guest, and a shared target dir deadlocks on cargo's build
// lock.
const OUTER_BUILD_ENV: &[&str] = &[
    "CARGO_ENCODED_RUSTFLAGS",
    "RUSTFLAGS",
    "RUSTC_WORKSPACE_WRAPPER",
    "RUSTC_WRAPPER",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET",
    "CARGO_BUILD_RUSTFLAGS",
];
