//! No import circle inside a crate: the modules of each crate stand in
//! layers, a module's paths (`crate::…`, `super::…`, `self::…`) reaching
//! only modules below it, its own children or its ancestors. A fast path
//! that needs its general path's helpers is that path's child, so it
//! reaches them as an ancestor's.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each crate's source root.
const CRATE_ROOTS: &[&str] = &[
    "host/policy/src",
    "host/sandbox/src",
    "host/engine/src",
    "host/cli/src",
    "policy-types/src",
    "policy-guest/src",
    "policy-sdk/src",
];

/// A module by its path inside its crate (`["runner", "run"]`).
type Module = Vec<String>;

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// The module a file under `root` is (`a/mod.rs` and `a.rs` are `a`).
fn module_of(root: &Path, file: &Path) -> Module {
    let relative = file.strip_prefix(root).unwrap().with_extension("");
    let mut parts: Module = (relative.iter())
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The code of a file: line comments dropped (a doc link is no import),
/// and nothing from its first `#[cfg(test)]` on (tests reach anywhere).
fn code_of(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    let lines = text.lines().filter(|l| !l.trim_start().starts_with("//"));
    lines.collect::<Vec<_>>().join("\n")
}

/// The identifiers after `at` in `code`, `::`-separated; a `{` group
/// yields each of its members' paths after the common prefix.
fn paths_at(code: &str, at: usize) -> Vec<Vec<String>> {
    let mut prefix = Vec::new();
    let mut rest = &code[at..];
    loop {
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if end > 0 {
            prefix.push(rest[..end].to_owned());
        }
        rest = &rest[end..];
        if let Some(after) = rest.strip_prefix("::") {
            rest = after;
            if let Some(group) = rest.strip_prefix('{') {
                return group_members(group)
                    .into_iter()
                    .map(|m| prefix.iter().cloned().chain(m).collect())
                    .collect();
            }
        } else {
            return vec![prefix];
        }
    }
}

/// The first segments of each member of a `{…}` group (up to its `}`).
fn group_members(group: &str) -> Vec<Vec<String>> {
    let mut depth = 0usize;
    let end = (group.char_indices())
        .find(|&(_, c)| {
            depth = match c {
                '{' => depth + 1,
                '}' if depth == 0 => return true,
                '}' => depth - 1,
                _ => depth,
            };
            false
        })
        .map_or(group.len(), |(i, _)| i);
    let members = group[..end].split(',').map(str::trim);
    let first = |m: &str| m.split("::").map(|s| s.trim().to_owned()).collect();
    members.filter(|m| !m.is_empty()).map(first).collect()
}

/// The modules `module` reaches through its `crate::`, `super::` and
/// `self::` paths, but itself and its ancestors.
fn reached(module: &Module, code: &str, modules: &BTreeSet<Module>) -> BTreeSet<Module> {
    let mut found = BTreeSet::new();
    for head in ["crate::", "super::", "self::"] {
        for (at, _) in code.match_indices(head) {
            let boundary = code[..at].chars().last();
            if boundary.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            for path in paths_at(code, at) {
                let target = resolve(module, &path, modules);
                let ancestor = target.len() <= module.len() && module.starts_with(&target);
                if !ancestor {
                    found.insert(target);
                }
            }
        }
    }
    found
}

/// The longest module `path` (as written in `module`) names.
fn resolve(module: &Module, path: &[String], modules: &BTreeSet<Module>) -> Module {
    let mut base: Module = Vec::new();
    let mut segments = path.iter().peekable();
    match segments.next().map(String::as_str) {
        Some("self") => base = module.clone(),
        Some("super") => {
            base = module.clone();
            base.pop();
            while segments.next_if(|s| *s == "super").is_some() {
                base.pop();
            }
        }
        _ => {}
    }
    let full: Module = base.iter().cloned().chain(segments.cloned()).collect();
    (0..=full.len())
        .rev()
        .map(|k| full[..k].to_vec())
        .find(|candidate| modules.contains(candidate))
        .unwrap_or_default()
}

/// The crate's modules and what each reaches.
fn graph_of(files: &[(Module, String)]) -> BTreeMap<Module, BTreeSet<Module>> {
    let modules: BTreeSet<Module> = files.iter().map(|(m, _)| m.clone()).collect();
    (files.iter())
        .map(|(m, text)| (m.clone(), reached(m, &code_of(text), &modules)))
        .collect()
}

/// Every module reachable from `start`.
fn reachable(graph: &BTreeMap<Module, BTreeSet<Module>>, start: &Module) -> BTreeSet<Module> {
    let mut seen = BTreeSet::new();
    let mut stack: Vec<&Module> = graph[start].iter().collect();
    while let Some(next) = stack.pop() {
        if seen.insert(next.clone()) {
            stack.extend(graph.get(next).into_iter().flatten());
        }
    }
    seen
}

/// Each circle: the modules that reach one another, by name.
fn circles(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<String>> {
    let reach: BTreeMap<&Module, BTreeSet<Module>> =
        graph.keys().map(|m| (m, reachable(graph, m))).collect();
    let mut placed = BTreeSet::new();
    let mut found = Vec::new();
    for (module, reaches) in &reach {
        if !reaches.contains(*module) || placed.contains(*module) {
            continue;
        }
        let circle: Vec<&Module> = (reaches.iter())
            .filter(|other| reach[other].contains(*module))
            .collect();
        placed.extend(circle.iter().map(|m| (*m).clone()));
        found.push(circle.iter().map(|m| m.join("/")).collect());
    }
    found
}

#[test]
fn no_crate_has_an_import_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for crate_root in CRATE_ROOTS {
        let dir = root.join(crate_root);
        let mut paths = Vec::new();
        rust_files(&dir, &mut paths);
        assert!(!paths.is_empty(), "no sources under {crate_root}");
        let files: Vec<(Module, String)> = (paths.iter())
            .map(|p| (module_of(&dir, p), std::fs::read_to_string(p).unwrap()))
            .collect();
        for circle in circles(&graph_of(&files)) {
            found.push(format!("{crate_root}: {}", circle.join(" ↔ ")));
        }
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn the_check_finds_a_circle_and_passes_a_child_reaching_its_parent() {
    let file = |module: &str, text: &str| {
        let module = module.split('/').filter(|s| !s.is_empty());
        (module.map(str::to_owned).collect(), text.to_owned())
    };
    let circle = [
        file("", "mod a; mod b;"),
        file("a", "use super::b::{Thing, other::More};"),
        file("b", "use crate::a::Item;"),
        file("b/other", ""),
    ];
    assert_eq!(circles(&graph_of(&circle)), [vec!["a", "b"]]);
    let layered = [
        file("", "mod a; mod b;"),
        file("a", "pub(crate) mod fast; pub fn helper() {}"),
        file("a/fast", "use super::helper; use super::super::b::Leaf;"),
        file("b", "// use crate::a::helper;\n"),
    ];
    assert!(circles(&graph_of(&layered)).is_empty());
}
