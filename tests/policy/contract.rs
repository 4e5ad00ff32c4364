//! The component honours the contract: it imports exactly what the WIT world
//! declares (nothing, and certainly no WASI), exports the world's interfaces,
//! and describes itself. Modules that break the contract are refused with a
//! message that says why.

use std::collections::BTreeSet;
use std::path::Path;

use failover::policy::{CONTRACT, DEFAULT_POLICY};
use failover::{Limits, Policy, PolicyError};
use wit_parser::Resolve;

use super::support::{default_policy, engine};

/// The import and export names the `policy` world declares.
fn world_names() -> (BTreeSet<String>, BTreeSet<String>) {
    let mut resolve = Resolve::default();
    let (package, _) = resolve
        .push_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("wit"))
        .expect("the WIT parses");
    let world = resolve
        .select_world(&[package], Some("policy"))
        .expect("the world exists");
    names_of(&resolve, world)
}

/// The import and export names of `world`.
fn names_of(resolve: &Resolve, world: wit_parser::WorldId) -> (BTreeSet<String>, BTreeSet<String>) {
    let world = &resolve.worlds[world];
    let names = |keys: Vec<&wit_parser::WorldKey>| -> BTreeSet<String> {
        keys.into_iter()
            .map(|key| resolve.name_world_key(key))
            .collect()
    };
    (
        names(world.imports.keys().collect()),
        names(world.exports.keys().collect()),
    )
}

/// The import and export names the embedded component declares, read from
/// its own type information.
fn component_names() -> (BTreeSet<String>, BTreeSet<String>) {
    let decoded = wit_component::decode(DEFAULT_POLICY).expect("a component");
    let wit_component::DecodedWasm::Component(resolve, world) = decoded else {
        panic!("the default policy is a component, not a WIT package");
    };
    names_of(&resolve, world)
}

#[test]
fn component_imports_exactly_what_the_world_declares() {
    let (world_imports, _) = world_names();
    let (imports, _) = component_names();
    assert_eq!(imports, world_imports);
    assert!(
        imports.iter().all(|name| !name.starts_with("wasi:")),
        "{imports:?}"
    );
    // The world declares no imports at all: a policy is a pure function.
    assert!(imports.is_empty(), "{imports:?}");
}

#[test]
fn component_exports_the_world_interfaces() {
    let (_, world_exports) = world_names();
    let (_, exports) = component_names();
    assert_eq!(exports, world_exports);
    assert!(
        exports.contains("failover:policy/classifier@1.0.0"),
        "{exports:?}"
    );
}

#[test]
fn default_policy_describes_itself() {
    let version = default_policy().version();
    assert_eq!(version.name, "failover-default");
    assert_eq!(version.version, env!("CARGO_PKG_VERSION"));
    assert_eq!(version.contract, CONTRACT);
    assert_eq!(version.sha256.len(), 64);
    assert!(version.sha256.bytes().all(|b| b.is_ascii_hexdigit()));
    assert!(version
        .to_string()
        .starts_with("failover-default 0.1.0 (failover:policy@1.0.0, sha256:"));
}

fn load_wat(wat: &str) -> Result<Policy, PolicyError> {
    let bytes = wat::parse_str(wat).expect("test WAT parses");
    Policy::load(engine(), &bytes, Limits::default())
}

#[test]
fn a_module_importing_what_no_standin_covers_is_refused() {
    for import in [
        "wasi:http/outgoing-handler@0.2.0",
        "wasi:cli/environment@0.3.0",
        "acme:tools/net@1.0.0",
    ] {
        let error =
            load_wat(&format!(r#"(component (import "{import}" (instance)))"#)).unwrap_err();
        assert!(
            matches!(error, PolicyError::ForeignImports { .. }),
            "{error:?}"
        );
        let message = error.to_string();
        assert!(message.contains(import), "{message}");
    }
}

/// A component that exports the contract's interfaces at `version`, with
/// nothing in them: what the host reads of a module's version.
fn exporting(version: &str) -> String {
    let interfaces = ["types", "classifier", "profiles", "runner", "meta"];
    let exports: String = interfaces
        .iter()
        .map(|name| {
            format!(
                r#"(instance ${name}) (export "failover:policy/{name}@{version}" (instance ${name}))"#
            )
        })
        .collect();
    format!("(component {exports})")
}

#[test]
fn a_module_of_the_0_x_line_is_refused_with_the_guide() {
    for version in ["0.8.0", "0.4.0", "0.1.0"] {
        let error = load_wat(&exporting(version)).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("the module was built for failover:policy@{version}, but this host runs failover:policy@1.0.0; docs/contract.md says what changed between them and how to move a module to a version this host runs")
        );
    }
}

#[test]
fn a_module_of_a_later_minor_or_another_major_is_refused() {
    for version in ["1.1.0", "2.0.0"] {
        let error = load_wat(&exporting(version)).unwrap_err();
        assert!(
            matches!(error, PolicyError::ContractMismatch { .. }),
            "{version}: {error:?}"
        );
    }
    // A patch of 1.0 is 1.0: admitted as far as the version goes (these
    // instances are empty, so the exports are then missing).
    let error = load_wat(&exporting("1.0.1")).unwrap_err();
    assert!(matches!(error, PolicyError::MissingExport(_)), "{error:?}");
}

#[test]
fn a_module_without_the_contract_is_refused() {
    let error = load_wat("(component)").unwrap_err();
    assert!(matches!(error, PolicyError::MissingExport(_)), "{error:?}");
}

#[test]
fn bytes_that_are_not_a_component_are_refused() {
    let error = Policy::load(engine(), b"definitely not wasm", Limits::default()).unwrap_err();
    assert!(matches!(error, PolicyError::Compile(_)), "{error:?}");
    // A core module is not a component either.
    let core = wat::parse_str("(module)").unwrap();
    let error = Policy::load(engine(), &core, Limits::default()).unwrap_err();
    assert!(matches!(error, PolicyError::Compile(_)), "{error:?}");
}
