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
//! `outcome` is `served`, the response's HTTP status, or how a stream
//! ended early (its error code, `499` when the client left): a stream is
//! counted when it ends, and its call too (F-12.12).

use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};

use std::collections::BTreeSet;
use std::sync::Mutex;

use crate::config::Config;
use crate::runner::{Attempt, FallbackStep, RunObserver, Target};
use crate::time::now_ms;

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
    restarts: IntCounterVec,
    gauges: ScrapeGauges,
    /// The series the last served request counted: the next one usually
    /// counts the same, and finding a series by its labels (hashing them,
    /// a lock, a map) cost ~0.6k instructions a request.
    last: Mutex<LastSeries>,
}

/// The last series of a request served and of a provider call that
/// succeeded, with their labels.
#[derive(Default)]
struct LastSeries {
    /// `(route, model, outcome)` and its counter.
    request: Option<([String; 3], IntCounter)>,
    /// `(provider, model)` and its call counter (result `ok`) and latency.
    call: Option<([String; 2], IntCounter, Histogram)>,
}

/// Whether `kept` are `labels`.
fn same_labels<const N: usize>(kept: &[String; N], labels: [&str; N]) -> bool {
    kept.iter().zip(labels).all(|(kept, label)| kept == label)
}

/// The gauges a scrape sets from its [`Snapshot`].
struct ScrapeGauges {
    profiles: IntGaugeVec,
    policy: IntGaugeVec,
    after_success: IntGaugeVec,
    state_store: IntGaugeVec,
    state_pending: IntGaugeVec,
    skipped_events: IntGauge,
}

impl ScrapeGauges {
    fn register(registry: &Registry) -> ScrapeGauges {
        let profiles = gauge(
            registry,
            "failover_profiles",
            "Auth profiles of the default agent by provider and routing state (ok, cooldown, disabled).",
            &["provider", "state"],
        );
        let policy = gauge(
            registry,
            "failover_policy_module",
            "The active policy module's counters since it was loaded (calls, traps, instantiations).",
            &["counter"],
        );
        let after_success = gauge(
            registry,
            "failover_served_with_errors",
            "Served answers whose bookkeeping failed, or whose stream broke after content.",
            &["what"],
        );
        let state_store = gauge(
            registry,
            "failover_state_store_healthy",
            "1 while the default agent's state store answers, 0 while this replica serves from its local copy.",
            &["backend"],
        );
        let state_pending = gauge(
            registry,
            "failover_state_store_pending_changes",
            "Local state changes made while the state store was unreachable, not yet merged into it.",
            &["backend"],
        );
        let skipped_events = IntGauge::new(
            "failover_stream_events_skipped",
            "Unreadable events skipped in served streams since start (a stream breaks past three).",
        )
        .expect("valid metric");
        registry
            .register(Box::new(skipped_events.clone()))
            .expect("unique metric");
        ScrapeGauges {
            profiles,
            policy,
            after_success,
            state_store,
            state_pending,
            skipped_events,
        }
    }
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
    /// Unreadable events skipped in served streams since start.
    pub skipped_events: u64,
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
        let restarts = counter(
            &registry,
            "failover_stream_restarts_total",
            "Streams a provider broke after output that went on from another candidate, by route and requested model.",
            &["route", "model"],
        );
        let gauges = ScrapeGauges::register(&registry);
        Metrics {
            registry,
            gauges,
            named: named_models(config),
            requests,
            calls,
            latency,
            skips,
            steps,
            swaps,
            restarts,
            last: Mutex::default(),
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
        let labels = [route, model, outcome];
        // Another thread counting now: this one looks its series up.
        let Ok(mut last) = self.last.try_lock() else {
            return self.requests.with_label_values(&labels).inc();
        };
        match &last.request {
            Some((kept, counter)) if same_labels(kept, labels) => counter.inc(),
            _ => {
                let counter = self.requests.with_label_values(&labels);
                counter.inc();
                last.request = Some((labels.map(str::to_owned), counter));
            }
        }
    }

    /// Counts a broken stream restarted on another candidate.
    pub(crate) fn stream_restarted(&self, route: &str, model: &str) {
        self.restarts.with_label_values(&[route, model]).inc();
    }

    /// Counts a policy swap or rollback.
    pub fn swapped(&self) {
        self.swaps.inc();
    }

    /// The text exposition, with `snapshot`'s gauges set first.
    pub fn render(&self, snapshot: &Snapshot) -> String {
        self.gauges.profiles.reset();
        for (provider, state, count) in &snapshot.profiles {
            self.gauges
                .profiles
                .with_label_values(&[provider.as_str(), state])
                .set(*count);
        }
        for (name, value) in &snapshot.policy {
            self.gauges
                .policy
                .with_label_values(&[name])
                .set(i64::try_from(*value).unwrap_or(i64::MAX));
        }
        for (what, value) in &snapshot.after_success {
            self.gauges
                .after_success
                .with_label_values(&[what])
                .set(i64::try_from(*value).unwrap_or(i64::MAX));
        }
        (self.gauges.skipped_events)
            .set(i64::try_from(snapshot.skipped_events).unwrap_or(i64::MAX));
        let (backend, healthy, pending) = snapshot.state_store;
        self.gauges
            .state_store
            .with_label_values(&[backend])
            .set(i64::from(healthy));
        self.gauges
            .state_pending
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

impl Metrics {
    /// Counts a provider call that took `latency_ms` until its reply (or
    /// its stream's start).
    fn count_call(&self, target: &Target, latency_ms: u64, failure: Option<&Attempt>) {
        let labels = [target.provider.as_str(), self.label(&target.model)];
        let seconds = latency_ms as f64 / 1000.0;
        let last = self.last.try_lock();
        let (Some(mut last), None) = (last.ok(), failure) else {
            let result = failure.map_or("ok", |f| f.reason.as_str());
            let call = [labels[0], labels[1], result];
            self.calls.with_label_values(&call).inc();
            self.latency.with_label_values(&labels).observe(seconds);
            return;
        };
        if !last
            .call
            .as_ref()
            .is_some_and(|(kept, ..)| same_labels(kept, labels))
        {
            let counter = self.calls.with_label_values(&[labels[0], labels[1], "ok"]);
            let latency = self.latency.with_label_values(&labels);
            last.call = Some((labels.map(str::to_owned), counter, latency));
        }
        if let Some((_, counter, latency)) = &last.call {
            counter.inc();
            latency.observe(seconds);
        }
    }
}

impl RunObserver for Metrics {
    fn call_ended(&self, target: &Target, at: u64, failure: Option<&Attempt>) {
        self.count_call(target, now_ms().saturating_sub(at), failure);
    }

    fn reply_ended(&self, target: &Target, _at: u64, answered_ms: u64, failure: Option<&Attempt>) {
        // The latency is the call's until it started answering.
        self.count_call(target, answered_ms, failure);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn target(provider: &str) -> Target {
        Target {
            provider: provider.into(),
            model: format!("{provider}/m"),
            profile: format!("{provider}:a"),
        }
    }

    /// The kept series count only for their own labels, whatever order
    /// the requests and calls come in.
    #[test]
    fn kept_series_count_for_their_own_labels_only() {
        let metrics = Metrics::new(&Config::default());
        for (route, model) in [
            ("chat", "auto"),
            ("chat", "auto"),
            ("messages", "auto"),
            ("chat", "x"),
        ] {
            metrics.request(route, model, "served");
        }
        metrics.request("chat", "auto", "429");
        for provider in ["openai", "openai", "groq", "openai"] {
            metrics.call_ended(&target(provider), now_ms(), None);
        }
        let series = |labels: [&str; 3]| metrics.requests.with_label_values(&labels).get();
        assert_eq!(series(["chat", "auto", "served"]), 2);
        assert_eq!(series(["messages", "auto", "served"]), 1);
        assert_eq!(series(["chat", "x", "served"]), 1);
        assert_eq!(series(["chat", "auto", "429"]), 1);
        // Models the config does not name count as `other`.
        let calls = |provider| (metrics.calls.with_label_values(&[provider, "other", "ok"])).get();
        assert_eq!((calls("openai"), calls("groq")), (3, 1));
        let latency = metrics.latency.with_label_values(&["openai", "other"]);
        assert_eq!(latency.get_sample_count(), 3);
    }
}
