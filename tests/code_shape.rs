//! The shape the code keeps: no function over [`MAX_FUNCTION_LINES`]
//! lines, in the product, its tests, benchmarks and examples alike; and no
//! WebAssembly runtime under the engine or the policy interface.

use std::path::{Path, PathBuf};

/// A function longer than this does more than one thing; split it.
const MAX_FUNCTION_LINES: usize = 80;

/// The workspace's source directories (the fuzz workspace's too).
const SOURCE_DIRS: &[&str] = &[
    "host",
    "policy-guest",
    "policy-types",
    "policy-sdk",
    "tests",
    "benches",
    "examples",
    "fuzz",
];

/// Every `.rs` file under `dir`, build output left out.
fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() && name != "target" {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// The name of the function a line starts (`fn`, with any qualifiers),
/// and its indentation; `None` for a declaration without a body.
fn function_start(line: &str) -> Option<(&str, &str)> {
    let code = line.trim_start();
    let indent = &line[..line.len() - code.len()];
    let mut words = code.split_whitespace().peekable();
    while let Some(word) = words.next() {
        match word {
            "pub" | "const" | "async" | "unsafe" | "extern" | "\"C\"" => continue,
            w if w.starts_with("pub(") => continue,
            "fn" => {
                let name = words.next()?;
                let name = name.split(['(', '<']).next().unwrap_or(name);
                return (!line.trim_end().ends_with(';')).then_some((name, indent));
            }
            _ => return None,
        }
    }
    None
}

/// Each function of `text` over the bound: its line and name and length.
/// A rustfmt'd function ends at the first `}` at its own indentation.
fn long_functions(text: &str) -> Vec<(usize, String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut long = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        let Some((name, indent)) = function_start(line) else {
            continue;
        };
        let close = format!("{indent}}}");
        let end = (start + 1..lines.len()).find(|&i| lines[i] == close);
        let length = end.map_or(0, |end| end - start + 1);
        if length > MAX_FUNCTION_LINES {
            long.push((start + 1, name.to_owned(), length));
        }
    }
    long
}

#[test]
fn no_function_is_longer_than_the_bound() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in SOURCE_DIRS {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 100, "found only {} files", files.len());
    let mut too_long = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (line, name, length) in long_functions(&text) {
            let file = file.strip_prefix(root).unwrap_or(file).display();
            too_long.push(format!("{file}:{line} {name}: {length} lines"));
        }
    }
    assert!(
        too_long.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines:\n{}",
        too_long.join("\n")
    );
}

#[test]
fn the_scan_finds_a_long_function_and_passes_a_short_one() {
    let body = "    let x = 1;\n".repeat(MAX_FUNCTION_LINES);
    let long = format!("pub(crate) async fn long(a: u8) -> u8 {{\n{body}}}\n");
    assert_eq!(
        long_functions(&long),
        [(1, "long".to_owned(), MAX_FUNCTION_LINES + 2)]
    );
    let short = "fn short() {\n    let x = 1;\n}\nfn declared();\n";
    assert!(long_functions(short).is_empty());
}

/// The crates that must not link a WebAssembly runtime: the engine decides
/// through the policy interface alone, and the interface is plain Rust.
const RUNTIME_FREE_CRATES: &[&str] = &["failover-engine", "failover-policy"];

/// The normal (not dev, not build) dependencies of `package`, one name a
/// line, as `cargo tree` resolves them from the lockfile.
fn normal_dependencies(package: &str) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let output = std::process::Command::new(cargo)
        .args([
            "tree", "--locked", "-e", "normal", "--prefix", "none", "-p", package,
        ])
        .arg("--manifest-path")
        .arg(&manifest)
        .output()
        .expect("cargo tree runs");
    assert!(
        output.status.success(),
        "cargo tree -p {package} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).expect("cargo tree writes UTF-8");
    let names = text.lines().filter_map(|l| l.split_whitespace().next());
    names.map(str::to_owned).collect()
}

#[test]
fn the_engine_and_the_policy_interface_link_no_wasm_runtime() {
    for package in RUNTIME_FREE_CRATES {
        let dependencies = normal_dependencies(package);
        assert!(
            dependencies.iter().any(|d| d == "policy-types"),
            "{package}'s tree should hold policy-types: {dependencies:?}"
        );
        let runtime: Vec<&String> = (dependencies.iter())
            .filter(|d| d.starts_with("wasmtime") || d.starts_with("cranelift"))
            .collect();
        assert!(runtime.is_empty(), "{package} links {runtime:?}");
    }
    let sandbox = normal_dependencies("failover-sandbox");
    assert!(
        sandbox.iter().any(|d| d == "wasmtime"),
        "the check reads names the way cargo tree writes them: {sandbox:?}"
    );
}
