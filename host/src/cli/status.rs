//! `failover status`: for each provider, the effective profile order (as the
//! policy decides it) and each profile's state.

use std::collections::BTreeSet;
use std::process::ExitCode;

use serde_json::json;

use super::profiles::summary_json;
use super::timefmt::{absolute, now_ms, relative};
use super::Context;
use crate::auth::{OrderRequest, Usage};
use crate::state::stored_profiles;

#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// One JSON document instead of a table.
    #[arg(long)]
    json: bool,
    /// The clock, in ms since the epoch (default: now).
    #[arg(long, value_name = "MS")]
    now: Option<u64>,
}

/// "ok", "cooldown until … (in 4m 10s) · rate_limit · model m", "disabled until … · billing".
pub fn describe_state(usage: &Usage, now: u64) -> String {
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
        let scope = usage
            .cooldown_model
            .as_deref()
            .map(|m| format!(" · model {m}"))
            .unwrap_or_default();
        parts.push(format!(
            "cooldown until {} ({}) · {reason}{scope}",
            absolute(until),
            relative(until, now)
        ));
    }
    if parts.is_empty() {
        return "ok".into();
    }
    parts.join("; ")
}

fn state_json(usage: &Usage, now: u64) -> serde_json::Value {
    let disabled = usage.disabled_until.filter(|u| *u > now);
    let cooldown = usage.cooldown_until.filter(|u| *u > now);
    let state = if disabled.is_some() {
        "disabled"
    } else if cooldown.is_some() {
        "cooldown"
    } else {
        "ok"
    };
    json!({
        "state": state,
        "disabledUntil": disabled,
        "disabledReason": disabled.and(usage.disabled_reason.map(|r| r.as_str())),
        "cooldownUntil": cooldown,
        "cooldownReason": cooldown.and(usage.cooldown_reason.map(|r| r.as_str())),
        "cooldownModel": cooldown.and(usage.cooldown_model.as_deref()),
        "errorCount": usage.error_count,
        "lastUsed": usage.last_used,
    })
}

pub fn run(context: &Context, args: StatusArgs) -> anyhow::Result<ExitCode> {
    let now = args.now.unwrap_or_else(now_ms);
    let policy = context.policy()?;
    let config = context.config()?;
    let store = context.store()?;
    let summaries = store.summaries()?;
    let usage = store.usage()?;
    let stored = stored_profiles(&summaries, &usage);
    let configured = config.configured_profiles();

    let mut providers: BTreeSet<String> = stored.iter().map(|p| p.provider.clone()).collect();
    providers.extend(configured.iter().map(|c| c.provider.clone()));
    providers.extend(
        config
            .auth
            .order
            .keys()
            .map(|k| crate::state::canonical_provider(k).to_owned()),
    );

    let mut report = Vec::new();
    for provider in &providers {
        let explicit_order = config.explicit_order(provider);
        let source = if explicit_order.as_ref().is_some_and(|o| !o.is_empty()) {
            "auth.order"
        } else if configured.iter().any(|c| &c.provider == provider) {
            "auth.profiles"
        } else {
            "stored profiles, round-robin"
        };
        let ranked = policy.order_profiles(&OrderRequest {
            provider: provider.clone(),
            explicit_order,
            configured: configured.clone(),
            stored: stored.clone(),
            model: None,
            now_ms: now,
        })?;
        let unused: Vec<&str> = stored
            .iter()
            .filter(|p| &p.provider == provider && !ranked.iter().any(|r| r.id == p.id))
            .map(|p| p.id.as_str())
            .collect();
        report.push((provider, source, ranked, unused));
    }

    let on_fallback: Vec<(String, String)> = super::session::sessions(context)?
        .all()?
        .iter()
        .filter_map(|(id, entry)| {
            super::session::fallback_line(entry).map(|line| (id.clone(), line))
        })
        .collect();
    let summary_of = |id: &str| summaries.iter().find(|s| s.id == id);
    let usage_of = |id: &str| usage.get(id).cloned().unwrap_or_default();
    if args.json {
        let providers: Vec<_> = report
            .iter()
            .map(|(provider, source, ranked, unused)| {
                let order: Vec<_> = ranked
                    .iter()
                    .map(|r| {
                        let mut entry = summary_of(&r.id).map(summary_json).unwrap_or_else(|| json!({"id": r.id}));
                        let state = state_json(&usage_of(&r.id), now);
                        if let (Some(entry), Some(state)) = (entry.as_object_mut(), state.as_object()) {
                            entry.extend(state.clone());
                            entry.insert("available".into(), r.available.into());
                        }
                        entry
                    })
                    .collect();
                json!({ "provider": provider, "orderSource": source, "order": order, "notInOrder": unused })
            })
            .collect();
        let version = policy.version();
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "agent": context.agent(),
                "stateDir": context.state_dir()?.root(),
                "now": now,
                "policy": { "name": version.name, "version": version.version, "contract": version.contract, "sha256": version.sha256 },
                "providers": providers,
                "sessionsOnFallback": on_fallback.iter().map(|(id, line)| json!({"session": id, "model": line})).collect::<Vec<_>>(),
            }))?
        );
        return Ok(ExitCode::SUCCESS);
    }

    println!(
        "agent {} · state {} · policy {}",
        context.agent(),
        context.state_dir()?.root().display(),
        policy.version()
    );
    if report.is_empty() {
        println!("\nno profiles (add one with `failover profiles add ID`)");
    }
    for (provider, source, ranked, unused) in &report {
        println!("\n{provider}  (order from {source})");
        let width = ranked.iter().map(|r| r.id.len()).max().unwrap_or(0);
        for (position, entry) in ranked.iter().enumerate() {
            let usage = usage_of(&entry.id);
            let kind = summary_of(&entry.id).map_or("?", |s| s.kind.as_str());
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
    if !on_fallback.is_empty() {
        println!("\nsessions on a fallback");
        for (id, line) in &on_fallback {
            println!("  {id}: {line}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
