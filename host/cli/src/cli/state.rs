//! `failover state migrate --to redis|files`: moves an agent's routing
//! state and sessions between the backends (`state.backend`).

use std::process::ExitCode;

use anyhow::Context as _;

use super::Context;
use crate::config::BackendKind;
use crate::state::Backend;

#[derive(Debug, clap::Subcommand)]
pub(crate) enum StateCommand {
    /// Copy the agent's routing state and sessions to the other backend,
    /// over the entries of the same ids there. The source is left as it
    /// is (a backup); then set `state.backend` to the target.
    Migrate(MigrateArgs),
}

#[derive(Debug, clap::Args)]
pub(crate) struct MigrateArgs {
    /// The backend to move to; the other one is the source.
    #[arg(long, value_enum)]
    to: Target,
}

/// `--to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Target {
    /// Redis (`state.redis.url` or FAILOVER_REDIS_URL).
    Redis,
    /// The state directory's `auth-state.json` and `sessions.json`.
    Files,
}

pub fn run(context: &Context, command: StateCommand) -> anyhow::Result<ExitCode> {
    match command {
        StateCommand::Migrate(args) => migrate(context, args),
    }
}

fn migrate(context: &Context, args: MigrateArgs) -> anyhow::Result<ExitCode> {
    let config = context.config()?;
    let state_dir = context.state_dir()?;
    let agent = context.agent();
    let redis = Backend::of_kind(config, BackendKind::Redis)
        .context("the migration needs a Redis server")?;
    let shared = redis
        .shared(agent)
        .context("the migration needs a Redis server")?;
    let (store, sessions) =
        Backend::of_kind(config, BackendKind::Files)?.open(&state_dir, agent)?;
    let (target, profiles, session_count) = match args.to {
        Target::Redis => {
            let usage = store.usage()?;
            let all = sessions.all()?;
            shared.import(&usage, &all)?;
            (BackendKind::Redis, usage.len(), all.len())
        }
        Target::Files => {
            let (usage, all) = shared.export()?;
            store.update_usage(|stored| {
                stored.extend(usage.clone());
                Ok(())
            })?;
            sessions.import(&all)?;
            (BackendKind::Files, usage.len(), all.len())
        }
    };
    let (from, to) = match target {
        BackendKind::Redis => ("files".to_owned(), format!("redis {}", shared.url())),
        BackendKind::Files => (format!("redis {}", shared.url()), "files".to_owned()),
    };
    eprintln!(
        "agent {agent}: copied the routing state of {profiles} profile(s) and {session_count} \
         session(s) from {from} to {to}; the source was left as it is"
    );
    if config.state.backend != target {
        let file = context
            .config_file()?
            .map_or("the config".to_owned(), |p| p.display().to_string());
        eprintln!(
            "next: set state.backend to \"{}\" in {file}, then restart the gateways",
            target.name()
        );
    }
    Ok(ExitCode::SUCCESS)
}
