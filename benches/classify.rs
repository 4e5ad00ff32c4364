//! Classification throughput: through the component (the host's whole path:
//! flatten, cut, cross into the guest, classify, come back) versus the same
//! core called natively on the already flattened input. Measured on one
//! typical short error and on the case corpus at its own message lengths and
//! padded to 1 KiB and 4 KiB. Run with `cargo bench --bench classify`; the
//! summary at the end prints the ratios of this one run (see docs/performance.md).
//!
//! With `FAILOVER_BENCH_ONLY=component` (or `batch`, or `native`) it
//! classifies the reference corpus [`ONLY_REPEATS`] times that way only,
//! untimed, and prints nothing: the form to count instructions in, which
//! machine noise does not move —
//! `valgrind --tool=callgrind --toggle-collect='classify::counted' <bench binary> --bench`.
//! `FAILOVER_BENCH_INPUT` picks another input for it (`typical`, `corpus`,
//! `corpus-1KiB`, `corpus-4KiB`): the padded two give the count per byte.
//! `FAILOVER_BENCH_TIMED=1` also times each pass and prints the fastest.

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, Throughput};
use failover::report::flatten;
use failover::{Limits, Policy, PolicyEngine, ProviderError};

#[path = "../tests/native/mod.rs"]
mod native;

const CORPUS: &str = include_str!("../tests/cases/classify.jsonl");

/// The reference implementation's own expectations (184 errors in the
/// `failover classify` input form): the corpus the per-call target is about.
const REFERENCE: &str = include_str!("../tests/cases/classify-reference.jsonl");

/// The clock every benchmark runs at.
const NOW_MS: u64 = 1_700_000_000_000;

/// Filler appended to messages: ordinary log-like text that no rule names,
/// so the scan runs its full length.
const FILLER: &str = " request id 7f3a9c2e-41d0-4b8e-9f6a-0c1d2e3f4a5b; region us-east-1;";

/// One benchmark's inputs, in both forms.
struct Inputs {
    label: &'static str,
    errors: Vec<ProviderError>,
    native: Vec<policy_guest::ErrorReport>,
}

impl Inputs {
    fn new(label: &'static str, errors: Vec<ProviderError>) -> Self {
        let native = errors
            .iter()
            .map(|e| native::to_core(&flatten(e, NOW_MS, &Limits::default())))
            .collect();
        Inputs {
            label,
            errors,
            native,
        }
    }

    fn group(&self) -> String {
        format!("classify-{}", self.label)
    }

    /// Average bytes of message text per error, as the guest sees it.
    fn average_text_bytes(&self) -> f64 {
        let total: usize = self
            .native
            .iter()
            .flat_map(|r| &r.levels)
            .map(|l| l.message.len())
            .sum();
        total as f64 / self.native.len() as f64
    }
}

/// One typical short error: what the "under 0.7 µs" target is about.
fn typical() -> ProviderError {
    ProviderError::message("Rate limit reached for requests per minute. Please try again in 2s.")
        .with_provider("openai")
        .with_status(429)
        .with_header("retry-after", "2")
}

/// The corpus's errors, padded to `pad_to` bytes of message when given.
fn corpus(pad_to: Option<usize>) -> Vec<ProviderError> {
    CORPUS
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).expect("corpus line");
            let mut error = ProviderError::from_json(&value["input"]).expect("corpus input");
            if let Some(target) = pad_to {
                while error.message.len() < target {
                    error.message.push_str(FILLER);
                }
                error.message.truncate(target);
            }
            error
        })
        .collect()
}

/// The reference corpus's errors, as `failover classify` reads them.
fn reference() -> Vec<ProviderError> {
    REFERENCE
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).expect("reference line");
            ProviderError::from_json(&value).expect("reference input")
        })
        .collect()
}

fn all_inputs() -> Vec<Inputs> {
    vec![
        Inputs::new("typical", vec![typical()]),
        Inputs::new("reference", reference()),
        Inputs::new("corpus", corpus(None)),
        Inputs::new("corpus-1KiB", corpus(Some(1024))),
        Inputs::new("corpus-4KiB", corpus(Some(4096))),
    ]
}

fn bench(c: &mut Criterion, policy: &Policy, inputs: &[Inputs]) {
    for input in inputs {
        let mut group = c.benchmark_group(input.group());
        group.throughput(Throughput::Elements(input.errors.len() as u64));
        group.bench_function("component", |b| {
            b.iter(|| {
                for error in &input.errors {
                    black_box(
                        policy
                            .classify(black_box(error), NOW_MS)
                            .expect("classifies"),
                    );
                }
            })
        });
        // The same errors through `classify-batch` (flattened in the
        // loop, as for single calls): what `failover classify` over a
        // file pays per line for the policy.
        group.bench_function("batch", |b| {
            b.iter(|| {
                for verdict in policy.classify_many(black_box(&input.errors), NOW_MS) {
                    black_box(verdict.expect("classifies"));
                }
            })
        });
        group.bench_function("native", |b| {
            b.iter(|| {
                for report in &input.native {
                    black_box(policy_guest::classify(black_box(report)));
                }
            })
        });
        group.finish();
    }
}

/// Mean time of one criterion benchmark, in nanoseconds, from its report.
fn mean_ns(group: &str, function: &str) -> Option<f64> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/criterion")
        .join(group)
        .join(function)
        .join("new/estimates.json");
    let text = std::fs::read_to_string(path).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    value["mean"]["point_estimate"].as_f64()
}

fn summarise(inputs: &[Inputs]) {
    println!("\nsummary (this run; per classification):");
    println!(
        "{:<12} {:>6} {:>11} {:>11} {:>11} {:>7} {:>13} {:>10}",
        "input", "cases", "component", "batch", "native", "ratio", "component/s", "avg bytes"
    );
    for input in inputs {
        let group = input.group();
        let (Some(component), Some(batch), Some(native)) = (
            mean_ns(&group, "component"),
            mean_ns(&group, "batch"),
            mean_ns(&group, "native"),
        ) else {
            println!(
                "{:<12} (no criterion estimates: filtered out?)",
                input.label
            );
            continue;
        };
        let cases = input.errors.len() as f64;
        let (component, batch, native) = (component / cases, batch / cases, native / cases);
        println!(
            "{:<12} {:>6} {:>8.0} ns {:>8.0} ns {:>8.0} ns {:>6.2}x {:>13.0} {:>10.0}",
            input.label,
            cases,
            component,
            batch,
            native,
            component / native,
            1e9 / component,
            input.average_text_bytes()
        );
    }
    println!("(ratio: component over native; per-byte cost: difference of the padded rows over the difference of their bytes)");
}

/// Names the one way `counted` classifies.
const ONLY_VAR: &str = "FAILOVER_BENCH_ONLY";

/// How often `counted` goes over the reference corpus: enough that the
/// first call's set-up is a small part of the count. A longer input is
/// gone over as much fewer times as its texts are longer.
const ONLY_REPEATS: usize = 1000;

/// The reference corpus's texts are about this long; see [`ONLY_REPEATS`].
const REFERENCE_TEXT_BYTES: usize = 50;

/// Names the input `counted` classifies (default: the reference corpus).
const INPUT_VAR: &str = "FAILOVER_BENCH_INPUT";

/// An input classified `ONLY_REPEATS` times, one way. With
/// `FAILOVER_BENCH_TIMED` set, each pass over the input is timed and the
/// fastest and the median pass are printed, per classification: the fastest
/// is the figure a noisy machine disturbs least.
#[inline(never)]
fn counted(policy: &Policy, input: &Inputs, only: &str) {
    let bytes = (input.average_text_bytes() as usize).max(REFERENCE_TEXT_BYTES);
    let timed = std::env::var_os(TIMED_VAR).is_some();
    let mut passes = Vec::new();
    for _ in 0..ONLY_REPEATS * REFERENCE_TEXT_BYTES / bytes {
        let start = std::time::Instant::now();
        one_pass(policy, input, only);
        if timed {
            passes.push(start.elapsed().as_nanos() as f64 / input.errors.len() as f64);
        }
    }
    if timed {
        passes.sort_by(f64::total_cmp);
        println!(
            "{} {only}: fastest {:.0} ns, median {:.0} ns a classification ({} passes)",
            input.label,
            passes[0],
            passes[passes.len() / 2],
            passes.len()
        );
    }
}

/// Names the switch that makes `counted` time its passes.
const TIMED_VAR: &str = "FAILOVER_BENCH_TIMED";

/// Classifies every error of `input` once, one way.
fn one_pass(policy: &Policy, input: &Inputs, only: &str) {
    match only {
        "component" => {
            for error in &input.errors {
                black_box(policy.classify(error, NOW_MS).expect("classifies"));
            }
        }
        "batch" => {
            for verdict in policy.classify_many(&input.errors, NOW_MS) {
                black_box(verdict.expect("classifies"));
            }
        }
        "native" => {
            for report in &input.native {
                black_box(policy_guest::classify(report));
            }
        }
        other => panic!("{ONLY_VAR}={other}: expected component, batch or native"),
    }
}

fn main() {
    let engine = PolicyEngine::new().expect("engine");
    let policy = Policy::default_policy(&engine).expect("default policy");
    if let Some(only) = std::env::var_os(ONLY_VAR) {
        let wanted = std::env::var(INPUT_VAR).unwrap_or_else(|_| "reference".into());
        let Some(reference) = all_inputs().into_iter().find(|i| i.label == wanted) else {
            panic!("{INPUT_VAR}={wanted}: expected typical, reference, corpus, corpus-1KiB or corpus-4KiB");
        };
        // One warm call first: instantiation is not what is counted.
        policy
            .classify(&reference.errors[0], NOW_MS)
            .expect("classifies");
        counted(&policy, &reference, &only.to_string_lossy());
        return;
    }
    let inputs = all_inputs();
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    bench(&mut criterion, &policy, &inputs);
    criterion.final_summary();
    summarise(&inputs);
}
