//! `GET /metrics`: what the gateway did, in Prometheus' text format.
//!
//! Counted as it happens (a [`RunObserver`] on every run): requests by
//! route, model and outcome; provider calls by provider, model and result
//! with their latency; candidates passed over; fallback steps; policy
//! swaps. Read at scrape time: profiles in cooldown or disabled by
//! provider, the active module's calls, traps and instantiations, and
//! served answers whose bookkeeping failed.
//!
//! Labels are bounded by the config: a model (requested or called) is
//! counted by name when the config names it (`auto`, an agent, an alias, a
//! model of a chain, an agent, an alias or a provider's `models` list), as
//! `other` otherwise, and a request refused at admission (its body, its
//! session id, its model) as `-` — a client cannot grow the label set.
//! `outcome` is `served` or the response's HTTP status.

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGaugeVec, Opts, Registry,
    TextEncoder,
};

use std::collections::BTreeSet;

use crate::config::Config;
use crate::runner::clock::now_ms;
use crate::runner::{Attempt, FallbackStep, RunObserver, Target};

/// Upstream latency buckets, in seconds: a cached reply in tens of
/// milliseconds up to a long completion at the two-minute attempt deadline.
const LATENCY_BUCKETS: &[f64] = &[0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0];

/// The gateway's counters and histograms.
pub struct Metrics {
    registry: Registry,
    /// The model names that may be labels (see [`Metrics::label`]).
    named: BTreeSet<String>,
    requests: IntCounterVec,
    calls: IntCounterVec,
    latency: HistogramVec,
    skips: IntCounterVec,
    steps: IntCounterVec,
    swaps: IntCounter,
    profiles: IntGaugeVec,
    policy: IntGaugeVec,
    after_success: IntGaugeVec,
    state_store: IntGaugeVec,
    state_pending: IntGaugeVec,
}

/// What one scrape reads besides the counters.
pub struct Snapshot {
    /// `(provider, state, count)`: profiles by routing state now.
    pub profiles: Vec<(String, &'static str, i64)>,
    /// `(name, value)` of the active module's counters (`calls`, `traps`,
    /// `instantiations`).
    pub policy: Vec<(&'static str, u64)>,
    /// `(what, count)` of served answers whose bookkeeping failed.
    pub after_success: Vec<(&'static str, u64)>,
    /// `(backend, healthy, local changes to reconcile)` of the default
    /// agent's state store.
    pub state_store: (&'static str, bool, usize),
}

fn counter(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    let counter = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric");
    registry
        .register(Box::new(counter.clone()))
        .expect("unique metric");
    counter
}

fn gauge(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    let gauge = IntGaugeVec::new(Opts::new(name, help), labels).expect("valid metric");
    registry
        .register(Box::new(gauge.clone()))
        .expect("unique metric");
    gauge
}

impl Metrics {
    /// Every metric at zero, model labels bounded by `config`. (The names
    /// and labels are constants: the `expect`s hold by construction.)
    pub fn new(config: &Config) -> Metrics {
        let registry = Registry::new();
        let requests = counter(
            &registry,
            "failover_requests_total",
            "Client requests by route, requested model and outcome (served, or the error code).",
            &["route", "model", "outcome"],
        );
        let calls = counter(
            &registry,
            "failover_upstream_calls_total",
            "Provider calls by provider, model and result (ok, or the failure's reason).",
            &["provider", "model", "result"],
        );
        let latency = HistogramVec::new(
            HistogramOpts::new(
                "failover_upstream_latency_seconds",
                "Provider call latency until the reply (or its stream's start), by provider and model.",
            )
            .buckets(LATENCY_BUCKETS.to_vec()),
            &["provider", "model"],
        )
        .expect("valid metric");
        registry
            .register(Box::new(latency.clone()))
            .expect("unique metric");
        let skips = counter(
            &registry,
            "failover_candidates_skipped_total",
            "Candidates passed over without a call, by provider, model and reason.",
            &["provider", "model", "reason"],
        );
        let steps = counter(
            &registry,
            "failover_fallback_steps_total",
            "Moves along a chain, by the model left, the failure's reason and the outcome.",
            &["from_model", "reason", "outcome"],
        );
        let swaps = IntCounter::new(
            "failover_policy_swaps_total",
            "Policy module swaps and rollbacks.",
        )
        .expect("valid metric");
        registry
            .register(Box::new(swaps.clone()))
            .expect("unique metric");
        let profiles = gauge(
            &registry,
            "failover_profiles",
            "Auth profiles of the default agent by provider and routing state (ok, cooldown, disabled).",
            &["provider", "state"],
        );
        let policy = gauge(
            &registry,
            "failover_policy_module",
            "The active policy module's counters since it was loaded (calls, traps, instantiations).",
            &["counter"],
        );
        let after_success = gauge(
            &registry,
            "failover_served_with_errors",
            "Served answers whose bookkeeping failed, or whose stream broke after content.",
            &["what"],
        );
        let state_store = gauge(
            &registry,
            "failover_state_store_healthy",
            "1 while the default agent's state store answers, 0 while this replica serves from its local copy.",
            &["backend"],
        );
        let state_pending = gauge(
            &registry,
            "failover_state_store_pending_changes",
            "Local state changes made while the state store was unreachable, not yet merged into it.",
            &["backend"],
        );
        Metrics {
            registry,
            state_store,
            state_pending,
            named: named_models(config),
            requests,
            calls,
            latency,
            skips,
            steps,
            swaps,
            profiles,
            policy,
            after_success,
        }
    }

    /// The label of a model: its name when the config names it, `other`
    /// otherwise — a client cannot grow the label set.
    pub fn label<'a>(&self, model: &'a str) -> &'a str {
        if self.named.contains(model) {
            model
        } else {
            "other"
        }
    }

    /// Counts a client request's end.
    pub fn request(&self, route: &str, model: &str, outcome: &str) {
        self.requests
            .with_label_values(&[route, model, outcome])
            .inc();
    }

    /// Counts a policy swap or rollback.
    pub fn swapped(&self) {
        self.swaps.inc();
    }

    /// The text exposition, with `snapshot`'s gauges set first.
    pub fn render(&self, snapshot: &Snapshot) -> String {
        self.profiles.reset();
        for (provider, state, count) in &snapshot.profiles {
            self.profiles
                .with_label_values(&[provider.as_str(), state])
                .set(*count);
        }
        for (name, value) in &snapshot.policy {
            self.policy
                .with_label_values(&[name])
                .set(i64::try_from(*value).unwrap_or(i64::MAX));
        }
        for (what, value) in &snapshot.after_success {
            self.after_success
                .with_label_values(&[what])
                .set(i64::try_from(*value).unwrap_or(i64::MAX));
        }
        let (backend, healthy, pending) = snapshot.state_store;
        self.state_store
            .with_label_values(&[backend])
            .set(i64::from(healthy));
        self.state_pending
            .with_label_values(&[backend])
            .set(i64::try_from(pending).unwrap_or(i64::MAX));
        let mut out = Vec::new();
        // Encoding in memory into a Vec cannot fail.
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut out);
        String::from_utf8(out).unwrap_or_default()
    }
}

/// Every model name the config gives: the words clients route by (`auto`,
/// the agents, the aliases) and every `provider/model` a chain, an agent,
/// an alias or a provider's `models` list names. Only these become labels.
fn named_models(config: &Config) -> BTreeSet<String> {
    let mut named: BTreeSet<String> = BTreeSet::from(["auto".to_owned()]);
    let add_choice = |choice: &crate::config::ModelChoice, named: &mut BTreeSet<String>| {
        named.extend(choice.primary.iter().cloned());
        named.extend(choice.fallbacks.iter().flatten().cloned());
    };
    add_choice(&config.agents.defaults.model, &mut named);
    for agent in &config.agents.list {
        named.insert(format!("agent:{}", agent.id));
        match &agent.model {
            Some(crate::config::AgentModel::Name(model)) => {
                named.insert(model.clone());
            }
            Some(crate::config::AgentModel::Choice(choice)) => add_choice(choice, &mut named),
            None => {}
        }
    }
    for (alias, target) in &config.models.aliases {
        named.insert(alias.clone());
        named.extend(target.models().iter().cloned());
    }
    for (provider, endpoint) in &config.models.providers {
        for model in endpoint.models.iter().flatten() {
            named.insert(format!("{provider}/{}", model.id()));
        }
    }
    named
}

impl RunObserver for Metrics {
    fn call_ended(&self, target: &Target, at: u64, failure: Option<&Attempt>) {
        let result = failure.map_or("ok", |f| f.reason.as_str());
        let labels = [target.provider.as_str(), self.label(&target.model)];
        self.calls
            .with_label_values(&[labels[0], labels[1], result])
            .inc();
        let seconds = now_ms().saturating_sub(at) as f64 / 1000.0;
        self.latency.with_label_values(&labels).observe(seconds);
    }

    fn skipped(&self, attempt: &Attempt) {
        self.skips
            .with_label_values(&[
                &attempt.provider,
                self.label(&attempt.model),
                attempt.reason.as_str(),
            ])
            .inc();
    }

    fn step(&self, step: &FallbackStep) {
        self.steps
            .with_label_values(&[
                self.label(&step.from_model),
                step.from_failure_reason.as_str(),
                step.final_outcome,
            ])
            .inc();
    }
}
