//! The `failover` command line. One file per command; this one parses the
//! arguments and turns errors into exit codes.

mod classify;
mod lines;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::policy::{Limits, Policy, PolicyEngine};

/// Exit status for a run where some input lines failed.
const EXIT_SOME_FAILED: u8 = 1;
/// Exit status for a run that could not start (bad flags, unreadable file,
/// a policy module that was refused).
const EXIT_SETUP: u8 = 2;

/// Keeps LLM calls alive when providers fail.
#[derive(Debug, Parser)]
#[command(name = "failover", version, about, long_about = None)]
pub struct Cli {
    /// Run this policy component instead of the embedded default.
    #[arg(long, global = true, value_name = "PATH")]
    policy: Option<PathBuf>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Classify provider errors: JSON Lines in, one verdict per line out.
    Classify(classify::ClassifyArgs),
}

/// Runs the command line and returns the process's exit status.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("failover: {error:#}");
            ExitCode::from(EXIT_SETUP)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let policy = load_policy(cli.policy.as_deref())?;
    match cli.command {
        Command::Classify(args) => classify::run(&policy, args),
    }
}

fn load_policy(path: Option<&std::path::Path>) -> anyhow::Result<Policy> {
    let engine = PolicyEngine::new()?;
    let policy = match path {
        None => Policy::default_policy(&engine)?,
        Some(path) => {
            let bytes = std::fs::read(path).map_err(|e| {
                anyhow::anyhow!("cannot read policy module {}: {e}", path.display())
            })?;
            Policy::load(&engine, &bytes, Limits::default())
                .map_err(|e| anyhow::anyhow!("policy module {} refused: {e}", path.display()))?
        }
    };
    Ok(policy)
}
