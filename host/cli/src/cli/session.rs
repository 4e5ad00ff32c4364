//! `failover session show|set-model|reset --session ID` (spec §9).

use std::process::ExitCode;

use anyhow::bail;
use serde_json::json;

use super::Context;
use crate::auth::PinSource;
use crate::names::split_model;
use crate::runner::OverrideSource;
use crate::state::{SessionEntry, SessionStore};

#[derive(Debug, clap::Subcommand)]
pub(crate) enum SessionCommand {
    /// The session's model, and the fallback it is on and why, if any.
    Show {
        #[arg(long, value_name = "ID")]
        session: String,
        /// One JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Pin the session to a model: no fallback to others while it is set.
    /// `provider/model@profile` also pins the credential to use.
    SetModel {
        #[arg(long, value_name = "ID")]
        session: String,
        /// `provider/model` or `provider/model@profile`.
        model: String,
    },
    /// Start the session over: forget its model and credential choices.
    Reset {
        #[arg(long, value_name = "ID")]
        session: String,
    },
}

pub fn run(context: &Context, command: SessionCommand) -> anyhow::Result<ExitCode> {
    let sessions = sessions(context)?;
    match command {
        SessionCommand::Show { session, json } => show(context, &sessions, &session, json),
        SessionCommand::SetModel { session, model } => {
            let (model, profile) = match model.split_once('@') {
                Some((model, profile)) => (model, Some(profile)),
                None => (model.as_str(), None),
            };
            let (provider, name) = split_model(model);
            if provider.is_empty() || name.is_empty() {
                bail!("{model:?} is not `provider/model`");
            }
            if let Some(profile) = profile {
                crate::names::check_id(profile).map_err(|e| anyhow::anyhow!(e))?;
            }
            sessions.update(&session, |e| {
                e.clear_model_override();
                e.model_override.provider = Some(provider.to_owned());
                e.model_override.model = Some(name.to_owned());
                e.model_override.source = Some(OverrideSource::User);
                e.live_switch_pending = true;
                if let Some(profile) = profile {
                    e.profile_pin.profile = Some(profile.to_owned());
                    e.profile_pin.source = Some(PinSource::User);
                    e.profile_pin.compaction_count = None;
                }
            })?;
            eprintln!("session {session} now uses {model} (your selection: no fallback will answer for it)");
            Ok(ExitCode::SUCCESS)
        }
        SessionCommand::Reset { session } => {
            sessions.update(&session, SessionEntry::reset)?;
            eprintln!("session {session} reset: back to the configured default");
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The agent's session store, on the configured backend.
pub fn sessions(context: &Context) -> anyhow::Result<SessionStore> {
    Ok(context.stores()?.1)
}

fn show(
    context: &Context,
    sessions: &SessionStore,
    id: &str,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let entry = sessions.get(id)?;
    let configured = context.config()?.agents.defaults.model.primary.clone();
    let (selected, why) = match entry.model_override.source {
        Some(OverrideSource::User) => (entry.model(), "your selection"),
        None if entry.model_override.model.is_some() => {
            (entry.model(), "selected (legacy override)")
        }
        _ => (configured.clone(), "configured default"),
    };
    if as_json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "session": id,
                "selectedModel": selected,
                "selectedBecause": why,
                "activeModel": if entry.model_override.source == Some(OverrideSource::Auto) { entry.model() } else { selected.clone() },
                "fallbackFrom": entry.origin(),
                "fallbackReason": entry.model_override.reason.map(|r| r.as_str()),
                "profile": entry.profile_pin.profile,
                "profileSource": entry.profile_pin.source,
            }))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!("session {id} (agent {})", context.agent());
    let selected_text = selected.as_deref().unwrap_or("none configured");
    match crate::inspect::status::fallback_line(&entry) {
        Some(line) => {
            println!("model: {line}");
            println!("selected: {selected_text} ({why})");
        }
        None => println!("model: {selected_text} ({why})"),
    }
    if let Some(profile) = &entry.profile_pin.profile {
        let source = match entry.profile_pin.source {
            Some(PinSource::User) => "pinned by you",
            _ => "pinned automatically",
        };
        println!("profile: {profile} ({source})");
    }
    Ok(ExitCode::SUCCESS)
}
