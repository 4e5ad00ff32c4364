//! The `failover` command line. One file per command; this one parses the
//! arguments, builds the shared [`Context`] and turns errors into exit codes.

mod classify;
mod context;
mod doctor;
mod init;
mod lines;
mod pipe;
mod policy;
mod profiles;
mod replay;
mod run;
mod serve;
mod session;
mod state;
mod status;
mod timefmt;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::config::CONFIG_ENV;
use crate::state::{AGENT_ENV, DEFAULT_AGENT, STATE_DIR_ENV};
pub(crate) use context::Context;

/// Exit status for a run where some input lines failed.
const EXIT_SOME_FAILED: u8 = 1;
/// Exit status for a run that could not start (bad flags, unreadable file,
/// a policy module that was refused).
const EXIT_SETUP: u8 = 2;

/// Keeps LLM calls alive when providers fail.
#[derive(Debug, Parser)]
#[command(name = "failover", version, about, long_about = None)]
pub(crate) struct Cli {
    /// Run this policy component instead of the embedded default.
    #[arg(long, global = true, value_name = "PATH")]
    policy: Option<PathBuf>,

    /// The state directory (default: the per-user state directory, e.g.
    /// ~/.local/state/failover).
    #[arg(long, global = true, value_name = "DIR", env = STATE_DIR_ENV)]
    state_dir: Option<PathBuf>,

    /// The agent whose profiles and state to use.
    #[arg(long, global = true, value_name = "ID", env = AGENT_ENV, default_value = DEFAULT_AGENT)]
    agent: String,

    /// The JSON5 config file (`auth.profiles`, `auth.order`, `auth.cooldowns.*`, …).
    #[arg(long, global = true, value_name = "FILE", env = CONFIG_ENV)]
    config: Option<PathBuf>,

    /// How log events (such as `model_fallback_decision`) are printed on stderr.
    #[arg(long, global = true, value_enum, default_value = "text")]
    log_format: LogFormatArg,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Classify provider errors: JSON Lines in, one verdict per line out.
    Classify(classify::ClassifyArgs),
    /// List, add, remove or mark auth profiles.
    #[command(subcommand)]
    Profiles(profiles::ProfilesCommand),
    /// Each provider's profile order and each profile's state.
    Status(status::StatusArgs),
    /// Show, select the model of, or reset a session.
    #[command(subcommand)]
    Session(session::SessionCommand),
    /// Send one prompt through the chain; the reply on stdout.
    Run(run::RunArgs),
    /// Serve an OpenAI-compatible gateway.
    Serve(serve::ServeArgs),
    /// Check a policy module, or swap / roll back the one a gateway runs.
    #[command(subcommand)]
    Policy(policy::PolicyCommand),
    /// Replay a recorded trace through a policy (no network, virtual clock).
    Replay(replay::ReplayArgs),
    /// Write a commented starter config where failover looks for one.
    Init(init::InitArgs),
    /// Check the config, credentials and providers; say what would serve now.
    Doctor(doctor::DoctorArgs),
    /// Move routing state and sessions between backends (files, Redis).
    #[command(subcommand)]
    State(state::StateCommand),
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormatArg {
    /// Human-readable lines.
    Text,
    /// One JSON object per event, fields flattened.
    Json,
}

impl From<LogFormatArg> for crate::logging::LogFormat {
    fn from(format: LogFormatArg) -> Self {
        match format {
            LogFormatArg::Text => crate::logging::LogFormat::Text,
            LogFormatArg::Json => crate::logging::LogFormat::Json,
        }
    }
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
    if !matches!(cli.command, Command::Serve(_)) {
        pipe::end_quietly_on_closed_pipe();
    }
    crate::logging::init(cli.log_format.into());
    let context = Context::new(cli.policy, cli.state_dir, cli.agent, cli.config);
    match cli.command {
        Command::Classify(args) => classify::run(context.policy()?, args),
        Command::Profiles(command) => profiles::run(&context, command),
        Command::Status(args) => status::run(&context, args),
        Command::Session(command) => session::run(&context, command),
        Command::Run(args) => run::run(&context, args),
        Command::Serve(args) => serve::run(&context, args),
        Command::Policy(command) => policy::run(&context, command),
        Command::Replay(args) => replay::run(&context, args),
        Command::Init(args) => init::run(&context, args),
        Command::Doctor(args) => doctor::run(&context, args),
        Command::State(command) => state::run(&context, command),
    }
}
