//! The 1.0 contract (`wit/policy.wit`) keeps the promises made to
//! policy authors: it parses as `failover:policy@1.0.0`, stays within 450
//! lines and 10 functions, holds no shape that exists only to make calls
//! cheaper, names the reasons of spec F-12.7, carries the structured fields
//! providers send, and states its versioning rule without a history.

use std::collections::BTreeSet;
use std::path::PathBuf;

use wit_parser::{Resolve, Type, TypeDefKind, TypeId};

use crate::support::guests;

/// The contract's file.
fn contract_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("wit/policy.wit")
}

fn contract_text() -> String {
    std::fs::read_to_string(contract_path()).expect("the 1.0 contract is readable")
}

/// The parsed contract and its package.
fn contract() -> (Resolve, wit_parser::PackageId) {
    let mut resolve = Resolve::default();
    let (package, _) = resolve
        .push_dir(contract_path().parent().unwrap())
        .expect("the 1.0 contract parses");
    (resolve, package)
}

/// Every function of every interface, as `interface.function`.
fn functions(resolve: &Resolve) -> Vec<String> {
    resolve
        .interfaces
        .iter()
        .flat_map(|(_, interface)| {
            let owner = interface.name.clone().unwrap_or_default();
            interface
                .functions
                .keys()
                .map(move |name| format!("{owner}.{name}"))
        })
        .collect()
}

/// The named type of the contract, by its WIT name.
fn named_type(resolve: &Resolve, name: &str) -> TypeId {
    resolve
        .types
        .iter()
        .find(|(_, def)| {
            def.name.as_deref() == Some(name) && !matches!(def.kind, TypeDefKind::Type(_))
        })
        .map(|(id, _)| id)
        .unwrap_or_else(|| panic!("the contract defines `{name}`"))
}

fn record_fields(resolve: &Resolve, name: &str) -> BTreeSet<String> {
    match &resolve.types[named_type(resolve, name)].kind {
        TypeDefKind::Record(record) => record.fields.iter().map(|f| f.name.clone()).collect(),
        other => panic!("`{name}` is a record, not {other:?}"),
    }
}

#[test]
fn it_is_failover_policy_1_0_0_with_a_world_that_imports_nothing() {
    let (resolve, package) = contract();
    let name = &resolve.packages[package].name;
    assert_eq!(
        format!("{}:{}", name.namespace, name.name),
        "failover:policy"
    );
    assert_eq!(
        name.version.as_ref().map(ToString::to_string).as_deref(),
        Some("1.0.0")
    );
    let world = resolve
        .select_world(&[package], Some("policy"))
        .expect("the world `policy` exists");
    let world = &resolve.worlds[world];
    assert!(world.imports.keys().all(|key| {
        // Interfaces the exports use are listed as imports only when they
        // come from another package; this contract uses none.
        resolve.name_world_key(key).starts_with("failover:policy/")
    }));
    let exports: BTreeSet<String> = world
        .exports
        .keys()
        .map(|key| resolve.name_world_key(key))
        .collect();
    let expected: BTreeSet<String> = ["types", "classifier", "profiles", "runner", "meta"]
        .iter()
        .map(|interface| format!("failover:policy/{interface}@1.0.0"))
        .collect();
    assert_eq!(exports, expected);
}

#[test]
fn it_stays_within_450_lines_and_10_functions() {
    let lines = contract_text().lines().count();
    assert!(lines <= 450, "the 1.0 contract has {lines} lines");
    let (resolve, _) = contract();
    let functions = functions(&resolve);
    assert!(
        functions.len() <= 10,
        "{} functions: {functions:?}",
        functions.len()
    );
    for decision in [
        "classifier.classify",
        "profiles.order-profiles",
        "profiles.pin-profile",
        "profiles.record-attempt",
        "runner.plan-run",
        "runner.decide-candidate",
        "runner.next-step",
        "runner.summarise",
        "meta.describe",
    ] {
        assert!(
            functions.iter().any(|f| f == decision),
            "{decision} missing: {functions:?}"
        );
    }
}

/// Whether `ty` is, or holds, a list of bytes (a packed encoding).
fn holds_bytes(resolve: &Resolve, ty: &Type) -> bool {
    let Type::Id(id) = ty else { return false };
    match &resolve.types[*id].kind {
        TypeDefKind::List(Type::U8) => true,
        TypeDefKind::List(inner) | TypeDefKind::Option(inner) | TypeDefKind::Type(inner) => {
            holds_bytes(resolve, inner)
        }
        TypeDefKind::Record(record) => record.fields.iter().any(|f| holds_bytes(resolve, &f.ty)),
        TypeDefKind::Tuple(tuple) => tuple.types.iter().any(|t| holds_bytes(resolve, t)),
        TypeDefKind::Variant(variant) => variant
            .cases
            .iter()
            .any(|case| case.ty.as_ref().is_some_and(|t| holds_bytes(resolve, t))),
        _ => false,
    }
}

#[test]
fn it_has_no_shape_that_only_makes_calls_cheaper() {
    let (resolve, _) = contract();
    for name in functions(&resolve) {
        for speed_word in ["packed", "batch", "plan-candidate", "model-gate"] {
            assert!(!name.contains(speed_word), "{name} is a speed-only twin");
        }
    }
    for (_, interface) in resolve.interfaces.iter() {
        for (name, function) in &interface.functions {
            let params = function.params.iter().map(|p| &p.ty);
            let result = function.result.iter();
            assert!(
                !params.chain(result).any(|ty| holds_bytes(&resolve, ty)),
                "{name} carries a byte encoding"
            );
        }
    }
    for (_, def) in resolve.types.iter() {
        if let TypeDefKind::Record(record) = &def.kind {
            for field in &record.fields {
                assert!(
                    !["holds", "reads-last-used", "until-valid"].contains(&field.name.as_str()),
                    "{:?}.{} is a validity claim",
                    def.name,
                    field.name
                );
            }
        }
    }
}

#[test]
fn it_names_the_server_and_certificate_reasons() {
    let (resolve, _) = contract();
    let TypeDefKind::Enum(reasons) = &resolve.types[named_type(&resolve, "failure-reason")].kind
    else {
        panic!("failure-reason is an enum");
    };
    let cases: BTreeSet<&str> = reasons.cases.iter().map(|c| c.name.as_str()).collect();
    for reason in [
        "server-error",
        "tls-certificate",
        "rate-limit",
        "billing",
        "unknown",
    ] {
        assert!(cases.contains(reason), "{reason} missing from {cases:?}");
    }
}

#[test]
fn its_reports_carry_the_structured_fields_providers_send() {
    let (resolve, _) = contract();
    let level = record_fields(&resolve, "error-level");
    for field in [
        "depth",
        "status",
        "code",
        "error-type",
        "param",
        "message",
        "details",
        "headers",
    ] {
        assert!(
            level.contains(field),
            "error-level lacks {field}: {level:?}"
        );
    }
    let usage = record_fields(&resolve, "usage");
    assert!(usage.contains("model-cooldowns"), "{usage:?}");
}

#[test]
fn its_header_states_the_versioning_rule_and_no_history() {
    let text = contract_text();
    let header: String = text
        .lines()
        .take_while(|line| !line.starts_with("package "))
        .collect::<Vec<_>>()
        .join("\n");
    for rule in [
        "semver",
        "A 1.x host runs every 1.y module with y <= x",
        "anything else is 2.0",
    ] {
        assert!(header.contains(rule), "the header does not say {rule:?}");
    }
    for word in ["0.8", "0.7", "0.6", "0.5", "0.4", "wit/legacy", "over 0."] {
        assert!(
            !text.contains(word),
            "the contract narrates history: {word:?}"
        );
    }
}

/// The import and export names of a decoded world.
fn world_names(resolve: &Resolve, world: wit_parser::WorldId) -> (Vec<String>, BTreeSet<String>) {
    let world = &resolve.worlds[world];
    let imports = world
        .imports
        .keys()
        .map(|key| resolve.name_world_key(key))
        .collect();
    let exports = world
        .exports
        .keys()
        .map(|key| resolve.name_world_key(key))
        .collect();
    (imports, exports)
}

/// Checks that `bytes` is a component that imports nothing and exports
/// exactly the 1.0 world and its functions.
pub(crate) fn assert_exports_the_contract(bytes: &[u8]) {
    let (contract, package) = contract();
    let world = contract.select_world(&[package], Some("policy")).unwrap();
    let (_, expected) = world_names(&contract, world);
    let wit_component::DecodedWasm::Component(resolve, world) =
        wit_component::decode(bytes).expect("the module decodes")
    else {
        panic!("the module is a component");
    };
    let (imports, exports) = world_names(&resolve, world);
    assert!(imports.is_empty(), "a policy imports nothing: {imports:?}");
    assert_eq!(exports, expected);
    let built: BTreeSet<String> = functions(&resolve).into_iter().collect();
    let declared: BTreeSet<String> = functions(&contract).into_iter().collect();
    assert_eq!(built, declared, "the module exports every decision");
}

#[test]
fn a_module_written_from_the_contract_alone_builds_into_its_world() {
    assert_exports_the_contract(&guests::component("examples/policies/from-the-wit", &[]));
}
