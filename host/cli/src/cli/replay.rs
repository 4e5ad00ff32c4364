//! `failover replay TRACE`: a recorded trace through a policy, with a
//! virtual clock — the decision timeline and the final state; `--against`
//! a second module, `--expect` a golden output.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{anyhow, Context as _};

use super::Context;
use crate::policy::gate;
use crate::replay::compare::{diverge, first_difference};
use crate::replay::{replay, Replay, ReplayOptions, Trace, Unrecorded};

/// `--unrecorded`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum UnrecordedArg {
    /// A failure ("no recorded outcome …"), which the policy classifies.
    Error,
    /// A success.
    Success,
}

impl From<UnrecordedArg> for Unrecorded {
    fn from(arg: UnrecordedArg) -> Self {
        match arg {
            UnrecordedArg::Error => Unrecorded::Error,
            UnrecordedArg::Success => Unrecorded::Success,
        }
    }
}
use crate::Decider;

/// Exit status when `--expect` or `--against` found a difference.
const EXIT_DIFFERENT: u8 = 1;

/// Replays with fewer requests finish before a bar is worth drawing.
const PROGRESS_MIN_REQUESTS: usize = 200;

#[derive(Debug, clap::Args)]
pub(crate) struct ReplayArgs {
    /// The trace (JSON Lines).
    trace: PathBuf,
    /// One JSON object per line instead of the readable timeline.
    #[arg(long)]
    json: bool,
    /// Replay through this module too and report where the two diverge.
    #[arg(long, value_name = "PATH")]
    against: Option<PathBuf>,
    /// Compare the `--json` output with this golden file; exit 1 on any
    /// difference, printing the first.
    #[arg(long, value_name = "FILE")]
    expect: Option<PathBuf>,
    /// Skip bad trace lines (and count them) instead of stopping.
    #[arg(long)]
    lenient: bool,
    /// What a call the recording does not cover gets.
    #[arg(long, value_enum, default_value = "error")]
    unrecorded: UnrecordedArg,
    /// The longest wait on a provider's Retry-After when nothing else
    /// remains, in ms (0: never wait). Default: what the trace recorded.
    #[arg(long, value_name = "MS")]
    retry_wait_cap_ms: Option<u64>,
    /// The whole-run deadline of each request, in ms. Default: what the
    /// trace recorded (none for a version 1 trace).
    #[arg(long, value_name = "MS")]
    run_timeout_ms: Option<u64>,
}

pub fn run(context: &Context, args: ReplayArgs) -> anyhow::Result<ExitCode> {
    let trace = Trace::read(&args.trace, args.lenient)?;
    for (line, message) in &trace.skipped {
        eprintln!(
            "failover: {}: line {line} skipped: {message}",
            args.trace.display()
        );
    }
    let ours = run_one(&trace, &args, context.shared_policy()?)?;
    if let Some(other) = &args.against {
        let bytes = std::fs::read(other)
            .with_context(|| format!("cannot read policy module {}", other.display()))?;
        let limits = context.config()?.policy_limits();
        let (theirs_policy, _) = gate::admit(context.engine()?, &bytes, limits)
            .with_context(|| format!("policy module {} refused", other.display()))?;
        let theirs_name = theirs_policy.version().to_string();
        let theirs = run_one(&trace, &args, Arc::new(theirs_policy))?;
        let divergence = diverge(&ours, &theirs);
        let ours_name = context.policy()?.version().to_string();
        let Some(first) = divergence.first else {
            println!("no divergence: {ours_name} and {theirs_name} decide this trace the same way");
            return Ok(ExitCode::SUCCESS);
        };
        println!("the policies diverge\n  A: {ours_name}\n  B: {theirs_name}");
        println!("\nfirst divergence, output line {}:", first.line);
        println!("  A: {}", first.left.as_deref().unwrap_or("(nothing)"));
        println!("  B: {}", first.right.as_deref().unwrap_or("(nothing)"));
        println!("\ndiffering decisions by kind:");
        for (kind, count) in &divergence.counts {
            println!("  {kind}: {count}");
        }
        return Ok(ExitCode::from(EXIT_DIFFERENT));
    }
    if let Some(expected) = &args.expect {
        let text = std::fs::read_to_string(expected)
            .with_context(|| format!("cannot read {}", expected.display()))?;
        let golden: Vec<String> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_owned)
            .collect();
        return Ok(match first_difference(&golden, &ours.json_lines()) {
            None => {
                eprintln!("failover: the replay matches {}", expected.display());
                ExitCode::SUCCESS
            }
            Some(difference) => {
                println!(
                    "the replay differs from {} at line {}:",
                    expected.display(),
                    difference.line
                );
                println!(
                    "  expected: {}",
                    difference.left.as_deref().unwrap_or("(nothing)")
                );
                println!(
                    "  actual:   {}",
                    difference.right.as_deref().unwrap_or("(nothing)")
                );
                ExitCode::from(EXIT_DIFFERENT)
            }
        });
    }
    if args.json {
        for line in ours.json_lines() {
            println!("{line}");
        }
    } else {
        println!(
            "replaying {} ({} requests) through {}\n",
            args.trace.display(),
            trace.requests.len(),
            context.policy()?.version()
        );
        print!("{}", ours.render());
    }
    Ok(ExitCode::SUCCESS)
}

fn run_one(trace: &Trace, args: &ReplayArgs, policy: Arc<dyn Decider>) -> anyhow::Result<Replay> {
    let bar = (std::io::stderr().is_terminal() && trace.requests.len() >= PROGRESS_MIN_REQUESTS)
        .then(|| {
            let bar = indicatif::ProgressBar::new(trace.requests.len() as u64);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{spinner} replaying [{bar:40}] {pos}/{len} requests ({per_sec}, eta {eta})",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar
        });
    // The timeline carries every fallback decision; the runner's own log
    // events would only repeat them on stderr.
    let result =
        tracing::subscriber::with_default(tracing::subscriber::NoSubscriber::default(), || {
            let options = ReplayOptions {
                unrecorded: args.unrecorded.into(),
                retry_wait_cap_ms: args.retry_wait_cap_ms,
                run_timeout_ms: args.run_timeout_ms,
            };
            replay(trace, &args.trace, policy, &options, |done, _| {
                if let Some(bar) = &bar {
                    bar.set_position(done as u64);
                }
            })
        });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    result.map_err(|e| anyhow!(e))
}
