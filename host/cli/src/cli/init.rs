//! `failover init`: writes a commented starter config where failover looks
//! for one, and says what to do next.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context as _};

use super::Context;
use crate::config::Config;

/// The starter config: a chain, an alias, the cooldowns, each explained.
const STARTER: &str = include_str!("starter.json5");

#[derive(Debug, clap::Args)]
pub(crate) struct InitArgs {
    /// Where to write it (default: the per-user config directory,
    /// e.g. ~/.config/failover/config.json5).
    #[arg(long, value_name = "FILE")]
    path: Option<PathBuf>,
    /// Overwrite a config that is already there.
    #[arg(long)]
    force: bool,
}

pub fn run(context: &Context, args: InitArgs) -> anyhow::Result<ExitCode> {
    let path = match args.path {
        Some(path) => path,
        None => {
            let state_dir = context.state_dir()?;
            Config::default_paths(state_dir.root())
                .into_iter()
                .next()
                .ok_or_else(|| anyhow!("no per-user config directory here; pass --path FILE"))?
        }
    };
    if path.exists() && !args.force {
        bail!("{} exists; pass --force to overwrite it", path.display());
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), PathBuf::from);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // Whole or not at all: a temp file beside it, renamed over it.
    let mut temp = tempfile::NamedTempFile::new_in(&dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    std::io::Write::write_all(&mut temp, STARTER.as_bytes())?;
    temp.as_file().sync_all()?;
    temp.persist(&path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    // What was written must load: a starter that does not is a bug here.
    Config::load(&path)?;
    eprintln!("wrote {}", path.display());
    eprintln!("next:");
    for step in [
        "failover profiles add openai:main --key-env OPENAI_API_KEY",
        "failover profiles add anthropic:main --key-env ANTHROPIC_API_KEY",
        "failover doctor",
        "failover run \"hello\"",
        "failover serve    # then point an OpenAI or Anthropic SDK at http://127.0.0.1:8787/v1",
    ] {
        eprintln!("  {step}");
    }
    Ok(ExitCode::SUCCESS)
}
