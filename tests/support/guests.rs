//! Builds guest crates of this repository (the example policies, the
//! fixtures, the SDK's default policy) for wasm32 and encodes them as
//! components, the way `host/sandbox/build.rs` builds the default policy.
//! Two target directories under cargo's test scratch space serve every
//! guest and test binary (see [`target_name`]); a file lock in each keeps
//! one build (and the copy of its output) at a time.

use std::path::{Path, PathBuf};
use std::process::Command;

include!("../../host/sandbox/guest_build_env.rs");

/// The guest crate at `dir` (relative to the repository), built with
/// `features`, as component bytes.
pub fn component(dir: &str, features: &[&str]) -> Vec<u8> {
    wit_component::ComponentEncoder::default()
        .module(&core_module(dir, features))
        .and_then(|encoder| encoder.validate(true).encode())
        .expect("the guest encodes as a component")
}

/// The guest crate at `dir`, built with `features`, as the core module
/// cargo writes (before it is encoded as a component).
pub fn core_module(dir: &str, features: &[&str]) -> Vec<u8> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = root.join(dir).join("Cargo.toml");
    let target_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(target_name(&manifest));
    std::fs::create_dir_all(&target_dir).unwrap();
    let lock = std::fs::File::create(target_dir.join(".build-lock")).unwrap();
    lock.lock().unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .arg("build")
        .arg("--manifest-path")
        .arg(&manifest)
        .args(["--target", "wasm32-unknown-unknown", "--release", "--quiet"]);
    if !features.is_empty() {
        command.arg("--features").arg(features.join(","));
    }
    as_guest_build(&mut command, &target_dir);
    let output = command.output().expect("cargo runs");
    assert!(
        output.status.success(),
        "building {dir} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let name = manifest_name(&manifest).replace('-', "_");
    let module = target_dir
        .join("wasm32-unknown-unknown/release")
        .join(format!("{name}.wasm"));
    let core = std::fs::read(&module).unwrap();
    drop(lock);
    core
}

/// The target directory of a guest: one for the crates that are their own
/// workspace, one for members of this repository's. Cargo names a path
/// dependency's sources relatively in one and absolutely in the other, so
/// in a shared directory each build would rebuild the other's artifacts
/// under the same names.
fn target_name(manifest: &Path) -> &'static str {
    let text = std::fs::read_to_string(manifest).unwrap();
    if text.lines().any(|l| l.trim() == "[workspace]") {
        "guests"
    } else {
        "guests-workspace"
    }
}

fn manifest_name(manifest: &Path) -> String {
    let text = std::fs::read_to_string(manifest).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("name = \""))
        .and_then(|rest| rest.strip_suffix('"'))
        .expect("the manifest names its package")
        .to_owned()
}

/// A cargo command for a nested guest build, building into the target
/// directory of the guests that are their own workspace.
#[allow(dead_code)] // benches/policy_swap.rs includes this file and builds no crate this way.
pub fn nested_build(mut command: Command) -> Command {
    let target_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("guests");
    as_guest_build(&mut command, &target_dir);
    command
}

/// Makes `command` a guest build into `target_dir`: without the outer
/// build's variables, and fast, since guests are tested for behaviour, not
/// speed.
fn as_guest_build(command: &mut Command, target_dir: &Path) {
    for name in OUTER_BUILD_ENV {
        command.env_remove(name);
    }
    command
        .env("CARGO_TARGET_DIR", target_dir)
        .env("CARGO_PROFILE_RELEASE_LTO", "false")
        .env("CARGO_PROFILE_RELEASE_PANIC", "abort")
        .env("CARGO_PROFILE_RELEASE_DEBUG", "false");
}

/// The Python policy `examples/policies/status-only-py` built by the
/// componentize-py at `tool` into `out`; componentize-py's error output
/// when it fails.
#[allow(dead_code)] // benches/policy_swap.rs includes this file and builds no Python.
pub fn python_policy(tool: &Path, out: &Path) -> Result<Vec<u8>, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let output = Command::new(tool)
        .arg("--wit-path")
        .arg(root.join("wit"))
        .args(["--world", "policy", "componentize", "--python-path"])
        .arg(root.join("examples/policies/status-only-py"))
        .args(["app", "--output"])
        .arg(out)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", tool.display()))?;
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    std::fs::read(out).map_err(|e| e.to_string())
}
