//! `failover policy new NAME` and `failover policy build [DIR]`: a policy
//! crate on the SDK scaffolded, and built into a component in one command.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{bail, Context as _};

use super::encode_and_check;
use crate::cli::Context;

/// The SDK this binary was built beside: the default for `--sdk`.
const BUILT_SDK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/policy-sdk");

/// The target the SDK's policies are built for.
const GUEST_TARGET: &str = "wasm32-unknown-unknown";

/// Longest crate name accepted: a name, not a sentence.
const MAX_NAME_BYTES: usize = 64;

/// Writes a new policy crate named `name` into `dir` (default `./NAME`).
pub fn new(name: &str, dir: Option<PathBuf>, sdk: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    check_name(name)?;
    let sdk = sdk_dir(sdk)?;
    let dir = dir.unwrap_or_else(|| PathBuf::from(name));
    if dir.exists() {
        bail!(
            "{} already exists; `policy new` writes a new directory and never into one",
            dir.display()
        );
    }
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    // Written whole beside its destination, then renamed into place: an
    // interrupted scaffold leaves nothing half-written under `dir`.
    let staging = tempfile::Builder::new()
        .prefix(".policy-new-")
        .tempdir_in(&parent)
        .with_context(|| format!("cannot write into {}", parent.display()))?;
    for (path, text) in scaffold(name, &sdk) {
        let file = staging.path().join(path);
        std::fs::create_dir_all(
            file.parent()
                .expect("every scaffold file is in a directory"),
        )?;
        std::fs::write(&file, text).with_context(|| format!("cannot write {}", file.display()))?;
    }
    std::fs::rename(staging.keep(), &dir)
        .with_context(|| format!("cannot create {}", dir.display()))?;
    println!(
        "created {} (policy `{name}`, SDK {})",
        dir.display(),
        sdk.display()
    );
    println!(
        "build it into a component: failover policy build {}",
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Builds the policy crate at `dir` for wasm32, encodes it as
/// `DIR/NAME.wasm` and runs the gate on it.
pub fn build(context: &Context, dir: &Path) -> anyhow::Result<ExitCode> {
    let manifest = dir.join("Cargo.toml");
    if !manifest.is_file() {
        bail!(
            "{} has no Cargo.toml: `policy build` takes a policy crate's directory",
            dir.display()
        );
    }
    let package = metadata(&manifest)?;
    let status = Command::new(cargo())
        .args([
            "build",
            "--release",
            "--target",
            GUEST_TARGET,
            "--manifest-path",
        ])
        .arg(&manifest)
        .status()
        .context("cannot run cargo")?;
    if !status.success() {
        bail!(
            "cargo could not build {} for {GUEST_TARGET} (`rustup target add {GUEST_TARGET}` installs the target)",
            dir.display()
        );
    }
    let core = package
        .target_dir
        .join(GUEST_TARGET)
        .join("release")
        .join(format!("{}.wasm", package.lib_name));
    encode_and_check(context, &core, &dir.join(format!("{}.wasm", package.name)))
}

/// A policy crate's name and where cargo puts what it builds.
struct Package {
    name: String,
    lib_name: String,
    target_dir: PathBuf,
}

/// The package of `manifest` in `cargo metadata`'s output: in a workspace
/// every member is listed, and the one wanted need not be the first.
fn package_of<'v>(metadata: &'v serde_json::Value, manifest: &Path) -> &'v serde_json::Value {
    let canonical = |path: &Path| path.canonicalize().unwrap_or_else(|_| path.to_owned());
    let wanted = canonical(manifest);
    let packages = metadata["packages"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    let listed = |package: &&serde_json::Value| {
        (package["manifest_path"].as_str()).is_some_and(|path| canonical(Path::new(path)) == wanted)
    };
    static NONE: serde_json::Value = serde_json::Value::Null;
    packages
        .iter()
        .find(listed)
        .or(packages.first())
        .unwrap_or(&NONE)
}

/// Reads the package of `manifest` through `cargo metadata`.
fn metadata(manifest: &Path) -> anyhow::Result<Package> {
    let output = Command::new(cargo())
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--manifest-path",
        ])
        .arg(manifest)
        .output()
        .context("cannot run cargo")?;
    if !output.status.success() {
        bail!(
            "cargo cannot read {}: {}",
            manifest.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let value: serde_json::Value = serde_json::from_slice(&output.stdout)
        .context("cargo metadata printed something other than JSON")?;
    let package = package_of(&value, manifest);
    let name = package["name"].as_str().unwrap_or_default().to_owned();
    let lib = package["targets"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| {
            t["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == "cdylib"))
        });
    let Some(lib) = lib else {
        bail!(
            "{} builds no cdylib, which a policy component is made of",
            manifest.display()
        );
    };
    Ok(Package {
        name,
        lib_name: lib["name"].as_str().unwrap_or_default().replace('-', "_"),
        target_dir: PathBuf::from(value["target_directory"].as_str().unwrap_or("target")),
    })
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// A crate name cargo accepts and a file name can carry.
fn check_name(name: &str) -> anyhow::Result<()> {
    let starts_well = name.chars().next().is_some_and(|c| c.is_ascii_lowercase());
    let rest_fine = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if !starts_well || !rest_fine || name.len() > MAX_NAME_BYTES {
        bail!(
            "NAME {name:?} is not a policy name: use lowercase letters, digits, `-` and `_`, starting with a letter, at most {MAX_NAME_BYTES} bytes"
        );
    }
    Ok(())
}

/// The SDK directory the new crate depends on, made absolute.
fn sdk_dir(sdk: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    let given = sdk.is_some();
    let dir = sdk.unwrap_or_else(|| PathBuf::from(BUILT_SDK));
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap_or_default();
    if !manifest.contains("name = \"failover-policy-sdk\"") {
        let hint = if given {
            "--sdk must name the policy-sdk directory of a failover checkout"
        } else {
            "this binary was built elsewhere; pass --sdk with the policy-sdk directory of a failover checkout"
        };
        bail!("no policy SDK at {}: {hint}", dir.display());
    }
    dir.canonicalize()
        .with_context(|| format!("cannot resolve {}", dir.display()))
}

/// The new crate's files, by path inside it.
fn scaffold(name: &str, sdk: &Path) -> Vec<(&'static str, String)> {
    let sdk = sdk.display().to_string().replace('\\', "/");
    vec![
        (
            "Cargo.toml",
            include_str!("template/Cargo.toml.in")
                .replace("{name}", name)
                .replace("{sdk}", &sdk),
        ),
        (
            "src/lib.rs",
            include_str!("template/lib.rs.in").replace("{name}", name),
        ),
        (
            "README.md",
            include_str!("template/README.md.in").replace("{name}", name),
        ),
        (".gitignore", "/target\n/*.wasm\n".to_owned()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_crate_names() {
        for good in ["mine", "status-only", "p2_x"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", "Mine", "2fast", "a b", "../up", "x".repeat(65).as_str()] {
            let error = check_name(bad).unwrap_err().to_string();
            assert!(error.contains("NAME"), "{error}");
        }
    }

    #[test]
    fn the_scaffold_names_the_policy_and_the_sdk() {
        let files = scaffold("mine", Path::new("/somewhere/policy-sdk"));
        let manifest = &files.iter().find(|(p, _)| *p == "Cargo.toml").unwrap().1;
        assert!(manifest.contains("name = \"mine\""), "{manifest}");
        assert!(
            manifest.contains("path = \"/somewhere/policy-sdk\""),
            "{manifest}"
        );
        let lib = &files.iter().find(|(p, _)| *p == "src/lib.rs").unwrap().1;
        assert!(lib.contains("\"mine\""), "{lib}");
        assert!(!files.iter().any(|(_, text)| text.contains("{name}")));
    }

    #[test]
    fn a_workspace_members_own_package_is_the_one_read() {
        let dir = tempfile::tempdir().unwrap();
        let member = dir.path().join("policy/Cargo.toml");
        std::fs::create_dir_all(member.parent().unwrap()).unwrap();
        std::fs::write(&member, "").unwrap();
        let metadata = serde_json::json!({"packages": [
            {"name": "the-workspace-root", "manifest_path": dir.path().join("Cargo.toml")},
            {"name": "my-policy", "manifest_path": member},
        ]});
        assert_eq!(package_of(&metadata, &member)["name"], "my-policy");
        let elsewhere = dir.path().join("other/Cargo.toml");
        assert_eq!(
            package_of(&metadata, &elsewhere)["name"],
            "the-workspace-root"
        );
        assert!(package_of(&serde_json::json!({}), &member).is_null());
    }
}
