//! `failover status`: for each provider, the effective profile order (as the
//! policy decides it) and each profile's state; then whether each model of
//! the default chain can be tried now, and why not.

use std::process::ExitCode;

use serde_json::json;

use super::timefmt::{absolute, now_ms, relative};
use super::Context;
use crate::auth::Usage;
use crate::inspect::status::{ProviderStatus, Status};
use crate::state::BackendStatus;

#[derive(Debug, clap::Args)]
pub(crate) struct StatusArgs {
    /// One JSON document instead of a table.
    #[arg(long)]
    json: bool,
    /// The clock, in ms since the epoch (default: now).
    #[arg(long, value_name = "MS")]
    now: Option<u64>,
}

/// "ok", "cooldown until … (in 4m 10s) · rate_limit · model m", "disabled until … · billing".
pub(crate) fn describe_state(usage: &Usage, now: u64) -> String {
    let mut parts = Vec::new();
    if let Some(until) = usage.disabled_until.filter(|u| *u > now) {
        let reason = usage.disabled_reason.map_or("unknown", |r| r.as_str());
        parts.push(format!(
            "disabled until {} ({}) · {reason}",
            absolute(until),
            relative(until, now)
        ));
    }
    if let Some(until) = usage.cooldown_until.filter(|u| *u > now) {
        let reason = usage.cooldown_reason.map_or("unknown", |r| r.as_str());
        parts.push(format!(
            "cooldown until {} ({}) · {reason}",
            absolute(until),
            relative(until, now)
        ));
    }
    for cooldown in usage.model_cooldowns.iter().filter(|c| c.until > now) {
        parts.push(format!(
            "cooldown until {} ({}) · {} · model {}",
            absolute(cooldown.until),
            relative(cooldown.until, now),
            cooldown.reason.as_str(),
            cooldown.model
        ));
    }
    if parts.is_empty() {
        return "ok".into();
    }
    parts.join("; ")
}

/// The state backend in one line: which, and whether it answers (`now`:
/// the real time, which an outage is measured against).
fn describe_backend(state: &BackendStatus, now: u64) -> String {
    let Some(shared) = &state.shared else {
        return format!("routing state and sessions: {}", state.backend);
    };
    let health = &shared.health;
    if health.healthy {
        return format!("routing state and sessions: redis {} · healthy", shared.url);
    }
    let since = health
        .down_since_ms
        .map(|at| format!(" since {}", relative(at, now)))
        .unwrap_or_default();
    format!(
        "routing state and sessions: redis {} · UNREACHABLE{since} ({}); serving from this \
         process's local copy, {} change(s) to reconcile",
        shared.url,
        health.error.as_deref().unwrap_or("no answer"),
        shared.pending
    )
}

pub fn run(context: &Context, args: StatusArgs) -> anyhow::Result<ExitCode> {
    let now = args.now.unwrap_or_else(now_ms);
    let policy = context.policy()?;
    let status = Status::gather(
        policy,
        context.config()?,
        &context.store()?,
        &super::session::sessions(context)?,
        now,
    )?;
    if args.json {
        let mut report = status.to_json(policy);
        report["agent"] = context.agent().into();
        report["stateDir"] = json!(context.state_dir()?.root());
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(ExitCode::SUCCESS);
    }

    println!(
        "agent {} · state {} · policy {}",
        context.agent(),
        context.state_dir()?.root().display(),
        policy.version()
    );
    println!("{}", describe_backend(&status.state, now_ms()));
    if status.providers.is_empty() {
        println!("\nno profiles (add one with `failover profiles add ID`)");
    }
    for p in &status.providers {
        print_provider(&status, p, now);
    }
    if !status.chain.is_empty() {
        println!("\nthe default chain now");
        let width = status
            .chain
            .iter()
            .map(|c| c.model.len())
            .max()
            .unwrap_or(0);
        for (position, candidate) in status.chain.iter().enumerate() {
            println!(
                "  {}. {:<width$}  {}",
                position + 1,
                candidate.model,
                candidate.why
            );
        }
    }
    if !status.on_fallback.is_empty() {
        println!("\nsessions on a fallback");
        for (id, line) in &status.on_fallback {
            println!("  {id}: {line}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One provider's profiles in order, each with its state.
fn print_provider(status: &Status, p: &ProviderStatus, now: u64) {
    let (provider, source, ranked, unused) =
        (&p.provider, p.order_source, &p.ranked, &p.not_in_order);
    println!("\n{provider}  (order from {source})");
    let width = ranked.iter().map(|r| r.id.len()).max().unwrap_or(0);
    for (position, entry) in ranked.iter().enumerate() {
        let usage = status.usage_of(&entry.id);
        let kind = status.summary(&entry.id).map_or("?", |s| s.kind.as_str());
        let last_used = usage
            .last_used
            .map_or("never".into(), |at| relative(at, now));
        println!(
            "  {}. {:<width$}  {:<8} {} · errors {} · last used {}",
            position + 1,
            entry.id,
            kind,
            describe_state(&usage, now),
            usage.error_count,
            last_used
        );
    }
    if ranked.is_empty() {
        println!("  (no usable profile)");
    }
    if !unused.is_empty() {
        println!("  not in the order: {}", unused.join(", "));
    }
}
