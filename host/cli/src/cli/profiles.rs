//! `failover profiles list|add|remove|mark`.
//!
//! Keys are read from stdin (hidden when it is a terminal) or from an
//! environment variable named by `--key-env`, never from the command line,
//! where they would land in shell history and process listings. Nothing
//! here prints a secret: a profile is shown by its fingerprint.

use std::io::{self, IsTerminal, Read};
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context as _};
use serde_json::json;

use super::timefmt::{absolute, now_ms, relative};
use super::Context;
use crate::auth::{CredentialKind, FailureEvent, RecordedReason, Usage};
use crate::names::canonical_provider;
use crate::state::StateError;

/// Longest key accepted on stdin; real keys are well under 1 KiB, and a
/// bound keeps a mistaken pipe from filling memory.
const MAX_KEY_BYTES: u64 = 16 * 1024;

#[derive(Debug, clap::Subcommand)]
pub(crate) enum ProfilesCommand {
    /// The agent's profiles, without secrets.
    List {
        /// One JSON document instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Add (or with --replace, replace) an API-key or token profile.
    Add {
        /// `provider:name`, e.g. `openai:work`.
        id: String,
        /// The provider (default: the id's prefix; `openai-codex` means `openai`).
        #[arg(long)]
        provider: Option<String>,
        /// The credential type.
        #[arg(long = "type", value_enum, default_value = "api_key")]
        kind: StaticKind,
        /// Read the key from this environment variable instead of stdin.
        #[arg(long, value_name = "VAR")]
        key_env: Option<String>,
        /// Replace an existing profile of the same id (its cooldowns and
        /// disables are reset with it).
        #[arg(long)]
        replace: bool,
    },
    /// Remove a profile and its routing state.
    Remove { id: String },
    /// Record a failure or a success against a profile, as a run would.
    Mark(MarkArgs),
    /// Clear a profile's cooldowns, disable and failure counts by hand
    /// (after a top-up, or once a key is fixed): it serves again at once.
    Clear { id: String },
}

/// The credential types a key can be added as.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum StaticKind {
    #[value(name = "api_key")]
    ApiKey,
    Token,
}

#[derive(Debug, clap::Args)]
pub(crate) struct MarkArgs {
    /// The profile.
    id: String,
    /// The failure's reason: rate_limit, overloaded, billing, auth,
    /// auth_permanent, timeout, server_error, tls_certificate, format,
    /// model_not_found, session_expired, context_overflow or unknown.
    #[arg(
        long,
        value_name = "REASON",
        required_unless_present = "success",
        conflicts_with = "success"
    )]
    failure: Option<String>,
    /// Record a success instead.
    #[arg(long)]
    success: bool,
    /// The model called (`provider/model`): scopes rate-limit cooldowns.
    #[arg(long)]
    model: Option<String>,
    /// The provider's Retry-After, in ms: a floor for the window.
    #[arg(long, value_name = "MS")]
    retry_after_ms: Option<u64>,
    /// An exact reset time the provider gave, in ms since the epoch.
    #[arg(long, value_name = "MS")]
    reset_at_ms: Option<u64>,
    /// The clock, in ms since the epoch (default: now).
    #[arg(long, value_name = "MS")]
    now: Option<u64>,
}

pub fn run(context: &Context, command: ProfilesCommand) -> anyhow::Result<ExitCode> {
    match command {
        ProfilesCommand::List { json } => list(context, json),
        ProfilesCommand::Add {
            id,
            provider,
            kind,
            key_env,
            replace,
        } => add(context, &id, provider, kind, key_env.as_deref(), replace),
        ProfilesCommand::Remove { id } => remove(context, &id),
        ProfilesCommand::Mark(args) => mark(context, args),
        ProfilesCommand::Clear { id } => clear(context, &id),
    }
}

fn list(context: &Context, as_json: bool) -> anyhow::Result<ExitCode> {
    let store = context.store()?;
    let summaries = store.summaries()?;
    if as_json {
        let profiles: Vec<_> = summaries
            .iter()
            .map(crate::inspect::status::summary_json)
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(
                &json!({ "agent": context.agent(), "profiles": profiles })
            )?
        );
        return Ok(ExitCode::SUCCESS);
    }
    if summaries.is_empty() {
        println!(
            "no profiles for agent {} (add one with `failover profiles add ID`)",
            context.agent()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let width = summaries.iter().map(|s| s.id.len()).max().unwrap_or(0);
    let now = now_ms();
    for s in &summaries {
        let expiry = s
            .expires
            .map(|at| format!("  expires {} ({})", absolute(at), relative(at, now)))
            .unwrap_or_default();
        println!(
            "{:<width$}  {:<10} {:<8} {}{}",
            s.id,
            s.provider,
            s.kind.as_str(),
            s.fingerprint,
            expiry
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// What `--json` shows of a profile.
fn add(
    context: &Context,
    id: &str,
    provider: Option<String>,
    kind: StaticKind,
    key_env: Option<&str>,
    replace: bool,
) -> anyhow::Result<ExitCode> {
    crate::names::check_id(id).map_err(|e| anyhow!(e))?;
    let provider = provider.unwrap_or_else(|| {
        let prefix = id.split(':').next().unwrap_or_default();
        canonical_provider(prefix).to_owned()
    });
    let kind = match kind {
        StaticKind::ApiKey => CredentialKind::ApiKey,
        StaticKind::Token => CredentialKind::Token,
    };
    let store = context.store()?;
    // Fail before asking for the key when the add cannot succeed.
    if !replace && store.profiles()?.contains(id) {
        bail!("profile {id} exists; pass --replace to replace it");
    }
    let key = read_key(key_env)?;
    store.update_profiles(|file| {
        if !replace && file.contains(id) {
            return Err(StateError::Refused(format!(
                "profile {id} exists; pass --replace to replace it"
            )));
        }
        file.put_static(id, &provider, kind, &key)
    })?;
    // A new key starts afresh: no cooldown, disable or failure count of
    // the key it replaces (or of a removed one of the same id) carries over.
    let had_state = store.remove_usage(id)?;
    let summary = store
        .summaries()?
        .into_iter()
        .find(|s| s.id == id)
        .ok_or_else(|| anyhow!("profile {id} was written but cannot be read back"))?;
    eprintln!(
        "{} {} ({} {}, {}) in {}{}",
        if replace { "stored" } else { "added" },
        summary.id,
        summary.provider,
        summary.kind.as_str(),
        summary.fingerprint,
        store.paths().profiles.display(),
        if had_state {
            "; its routing state was reset"
        } else {
            ""
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// The key, from the named environment variable or stdin, trimmed.
fn read_key(key_env: Option<&str>) -> anyhow::Result<String> {
    let key = match key_env {
        Some(var) => std::env::var(var)
            .with_context(|| format!("environment variable {var} is not set (or not UTF-8)"))?,
        None if io::stdin().is_terminal() => {
            eprint!("key (input hidden): ");
            rpassword::read_password().context("reading the key from the terminal")?
        }
        None => {
            let mut text = String::new();
            io::stdin()
                .take(MAX_KEY_BYTES + 1)
                .read_to_string(&mut text)
                .context("reading the key from stdin (it must be UTF-8)")?;
            if text.len() as u64 > MAX_KEY_BYTES {
                bail!("the key on stdin is longer than {MAX_KEY_BYTES} bytes");
            }
            text
        }
    };
    let key = key.trim();
    if key.is_empty() {
        bail!("no key given: pipe it on stdin or name a variable with --key-env");
    }
    if key.chars().any(char::is_control) {
        bail!("the key contains control characters or several lines");
    }
    Ok(key.to_owned())
}

fn remove(context: &Context, id: &str) -> anyhow::Result<ExitCode> {
    let store = context.store()?;
    let removed = store.update_profiles(|file| Ok(file.remove(id)))?;
    if !removed {
        bail!("no profile {id} for agent {}", context.agent());
    }
    store.remove_usage(id)?;
    eprintln!("removed {id}");
    Ok(ExitCode::SUCCESS)
}

fn clear(context: &Context, id: &str) -> anyhow::Result<ExitCode> {
    let store = context.store()?;
    if !store.summaries()?.iter().any(|s| s.id == id) {
        bail!("no profile {id} for agent {}", context.agent());
    }
    // Only when it last served is kept: windows, reasons and counts go.
    let after = store.update_profile_usage(id, |before| {
        Ok::<_, std::convert::Infallible>(Usage {
            last_used: before.last_used,
            ..Usage::default()
        })
    })?;
    println!("{id}: {}", super::status::describe_state(&after, now_ms()));
    Ok(ExitCode::SUCCESS)
}

fn mark(context: &Context, args: MarkArgs) -> anyhow::Result<ExitCode> {
    let policy = context.policy()?;
    let config = context.config()?;
    let store = context.store()?;
    let summary = store
        .summaries()?
        .into_iter()
        .find(|s| s.id == args.id)
        .ok_or_else(|| anyhow!("no profile {} for agent {}", args.id, context.agent()))?;
    let now = args.now.unwrap_or_else(now_ms);
    let reason = match args.failure.as_deref() {
        Some(name) => Some(RecordedReason::parse(name).ok_or_else(|| {
            let names: Vec<_> = RecordedReason::ALL.iter().map(|r| r.as_str()).collect();
            anyhow!("unknown reason {name:?}; use one of {}", names.join(", "))
        })?),
        None => None,
    };
    let cooldowns = config.cooldown_config();
    let after: Usage = store.update_profile_usage(&args.id, |before| match reason {
        Some(reason) => policy.record_failure(
            before,
            &FailureEvent {
                provider: summary.provider.clone(),
                reason,
                model: args.model.clone(),
                retry_after_ms: args.retry_after_ms,
                reset_at_ms: args.reset_at_ms,
                now_ms: now,
            },
            &cooldowns,
        ),
        None => {
            let success = crate::Success {
                provider: &summary.provider,
                model: args.model.as_deref(),
                now_ms: now,
            };
            policy.record_success(before, &success, &cooldowns)
        }
    })?;
    println!(
        "{}: {}",
        args.id,
        super::status::describe_state(&after, now)
    );
    Ok(ExitCode::SUCCESS)
}
