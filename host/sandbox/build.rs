//! Builds the default policy component that the host embeds.
//!
//! `policy-sdk/default-policy` (the SDK's defaults, which are
//! `policy-guest`'s core) is compiled for `wasm32-unknown-unknown` by a
//! nested cargo and its core module is encoded into a component with
//! `wit-component`. The
//! result lands in `OUT_DIR/default-policy.wasm`, which `src/policy/mod.rs`
//! includes, so the `failover` binary needs no files at run time.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The guest is always built optimised: the policy runs on every failed call,
/// and an unoptimised guest is ten times slower under Cranelift. It may use
/// wasm's 128-bit SIMD, which wasmtime runs by default: `memchr` and the
/// compiler's own vector loops then take 16 bytes a step.
const GUEST_PROFILE_ENV: &[(&str, &str)] = &[
    ("CARGO_PROFILE_RELEASE_OPT_LEVEL", "3"),
    ("CARGO_PROFILE_RELEASE_LTO", "true"),
    ("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "1"),
    ("CARGO_PROFILE_RELEASE_PANIC", "abort"),
    ("CARGO_PROFILE_RELEASE_DEBUG", "false"),
    ("CARGO_PROFILE_RELEASE_STRIP", "debuginfo"),
    (
        "CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS",
        "-C target-feature=+simd128",
    ),
];

include!("guest_build_env.rs");

const GUEST_TARGET: &str = "wasm32-unknown-unknown";

fn main() {
    // The workspace root: this crate lives in `host/sandbox/`.
    let root =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"))
            .join("../..");
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let guest_dir = root.join("policy-sdk/default-policy");

    // The guest crate, the SDK it exports, and the workspace crates they
    // build on (sources, build scripts, manifests).
    for watched in [
        "policy-sdk",
        "policy-guest",
        "policy-types",
        "wit",
        "Cargo.lock",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }

    ensure_target_installed();
    let core_module = build_guest(&guest_dir, &out_dir);
    let component = encode_component(&core_module);
    let dest = out_dir.join("default-policy.wasm");
    std::fs::write(&dest, component)
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", dest.display()));
}

/// Fails early with the one command that fixes a missing wasm target.
fn ensure_target_installed() {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(output) = Command::new(&rustc).args(["--print", "sysroot"]).output() else {
        return; // Let the nested build report whatever is wrong.
    };
    let sysroot = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let target_lib = Path::new(&sysroot).join("lib/rustlib").join(GUEST_TARGET);
    if !sysroot.is_empty() && !target_lib.exists() {
        panic!(
            "\n\nThe default policy is built for {GUEST_TARGET}, which this Rust toolchain lacks.\n\
             Install it once with:\n\n    rustup target add {GUEST_TARGET}\n\n"
        );
    }
}

fn build_guest(guest_dir: &Path, out_dir: &Path) -> Vec<u8> {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let target_dir = out_dir.join("guest-target");
    let mut command = Command::new(cargo);
    command
        .arg("build")
        .arg("--manifest-path")
        .arg(guest_dir.join("Cargo.toml"))
        .args(["--target", GUEST_TARGET, "--release"])
        .arg("--target-dir")
        .arg(&target_dir);
    for name in OUTER_BUILD_ENV {
        command.env_remove(name);
    }
    for (name, value) in GUEST_PROFILE_ENV {
        command.env(name, value);
    }
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run cargo to build the policy guest: {e}"));
    if !output.status.success() {
        panic!(
            "building the policy guest failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let module = target_dir
        .join(GUEST_TARGET)
        .join("release")
        .join("failover_default_policy.wasm");
    std::fs::read(&module).unwrap_or_else(|e| panic!("cannot read {}: {e}", module.display()))
}

fn encode_component(core_module: &[u8]) -> Vec<u8> {
    wit_component::ComponentEncoder::default()
        .module(core_module)
        .and_then(|encoder| encoder.validate(true).encode())
        .unwrap_or_else(|e| panic!("cannot encode the policy guest as a component: {e:#}"))
}
