//! The order a candidate's policy is sent: built from the provider's
//! profiles only (and those its explicit order or configured entries name)
//! when the policy narrows, with every profile otherwise — the same runs
//! either way.

use std::sync::{Arc, Mutex};

use failover::auth::{
    CooldownConfig, FailureEvent, OrderRequest, PinDecision, PinRequest, RankedProfile, Usage,
};
use failover::config::{Config, ProfileMeta};
use failover::policy::PolicyVersion;
use failover::runner::{
    CandidateDecision, CandidateFacts, CandidatePlan, CandidateRequest, ChainRequest,
    FailedAttempt, FallbackChain, GateDecision, ModelHealth, RotationConfig, RunStep, RunSummary,
    Runner, Selection, SelectionRequest, SummaryRequest,
};
use failover::{Classification, Decider, Policy, PolicyError, ProviderError};

use super::{config, policy, session, world, Outcome, Scripted, ALL, PRIMARY};

/// The default policy, saying it narrows or not as told, and noting the
/// stored and configured ids of every order it plans.
struct Spy {
    inner: Arc<Policy>,
    narrows: bool,
    orders: Mutex<Vec<(Vec<String>, Vec<String>)>>,
}

impl Decider for Spy {
    fn narrows_profiles(&self) -> bool {
        self.narrows
    }
    fn plan_candidate(
        &self,
        order: OrderRequest,
        facts: &CandidateFacts,
    ) -> Result<CandidatePlan, PolicyError> {
        let ids = |ids: Vec<&String>| ids.into_iter().cloned().collect();
        self.orders.lock().unwrap().push((
            ids(order.stored.iter().map(|p| &p.id).collect()),
            ids(order.configured.iter().map(|c| &c.id).collect()),
        ));
        self.inner.plan_candidate(order, facts)
    }
    fn version(&self) -> &PolicyVersion {
        self.inner.version()
    }
    fn classify(&self, error: &ProviderError, now_ms: u64) -> Result<Classification, PolicyError> {
        self.inner.classify(error, now_ms)
    }
    fn order_profiles(&self, request: &OrderRequest) -> Result<Vec<RankedProfile>, PolicyError> {
        self.inner.order_profiles(request)
    }
    fn pin_profile(&self, request: &PinRequest) -> Result<PinDecision, PolicyError> {
        self.inner.pin_profile(request)
    }
    fn record_failure(
        &self,
        usage: &Usage,
        event: &FailureEvent,
        config: &CooldownConfig,
    ) -> Result<Usage, PolicyError> {
        self.inner.record_failure(usage, event, config)
    }
    fn record_success(
        &self,
        usage: &Usage,
        model: Option<&str>,
        now_ms: u64,
    ) -> Result<Usage, PolicyError> {
        self.inner.record_success(usage, model, now_ms)
    }
    fn resolve_selection(&self, request: &SelectionRequest) -> Result<Selection, PolicyError> {
        self.inner.resolve_selection(request)
    }
    fn candidate_chain(&self, request: &ChainRequest) -> Result<FallbackChain, PolicyError> {
        self.inner.candidate_chain(request)
    }
    fn decide_candidate(
        &self,
        request: &CandidateRequest,
    ) -> Result<CandidateDecision, PolicyError> {
        self.inner.decide_candidate(request)
    }
    fn next_step(
        &self,
        attempt: &FailedAttempt,
        config: &RotationConfig,
    ) -> Result<RunStep, PolicyError> {
        self.inner.next_step(attempt, config)
    }
    fn summarise(&self, request: &SummaryRequest) -> Result<RunSummary, PolicyError> {
        self.inner.summarise(request)
    }
    fn model_gate(
        &self,
        health: &ModelHealth,
        others_remain: bool,
        now_ms: u64,
    ) -> Result<GateDecision, PolicyError> {
        Decider::model_gate(self.inner.as_ref(), health, others_remain, now_ms)
    }
    fn record_attempt_end(
        &self,
        health: &ModelHealth,
        hung: bool,
        now_ms: u64,
    ) -> Result<ModelHealth, PolicyError> {
        Decider::record_attempt_end(self.inner.as_ref(), health, hung, now_ms)
    }
}

/// The default chain with an explicit order for openai that names a
/// google profile, and configured entries of two providers.
fn with_orders_and_entries() -> Config {
    let mut config = config();
    let order = vec!["google:a".to_owned(), "openai:a".to_owned()];
    config.auth.order.insert("openai".into(), order);
    for (id, provider) in [("openai:a", "openai"), ("anthropic:b", "anthropic")] {
        let meta = ProfileMeta {
            provider: Some(provider.into()),
            ..ProfileMeta::default()
        };
        config.auth.profiles.insert(id.into(), meta);
    }
    config
}

/// Two runs (the primary rate-limited on both its profiles, then served)
/// under a spy that narrows or not: the orders it saw and where the runs
/// ended.
async fn runs(narrows: bool) -> (Vec<(Vec<String>, Vec<String>)>, Vec<(String, String)>) {
    let w = world(ALL);
    let spy = Arc::new(Spy {
        inner: policy(),
        narrows,
        orders: Mutex::new(Vec::new()),
    });
    let provider = Scripted::default()
        .then(PRIMARY, Outcome::Fail(429, "rate limited"))
        .then(PRIMARY, Outcome::Fail(429, "rate limited"));
    let runner = Runner::new(
        spy.clone(),
        with_orders_and_entries(),
        w.store.clone(),
        w.sessions.clone(),
        provider,
        w.clock.clone(),
    );
    let mut served = Vec::new();
    for _ in 0..2 {
        let outcome = runner.run(&session("s1"), &()).await.unwrap();
        served.push((outcome.model, outcome.profile));
    }
    let orders = spy.orders.lock().unwrap().clone();
    (orders, served)
}

fn strings(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|id| (*id).to_owned()).collect()
}

#[tokio::test]
async fn a_narrowing_policy_is_sent_only_what_its_answer_can_depend_on() {
    let (narrowed, served_narrowed) = runs(true).await;
    let (whole, served_whole) = runs(false).await;
    assert_eq!(served_narrowed, served_whole, "the same runs either way");
    assert_eq!(narrowed.len(), whole.len());
    // Anthropic: its two profiles and its configured entry.
    assert_eq!(
        narrowed[0],
        (
            strings(&["anthropic:a", "anthropic:b"]),
            strings(&["anthropic:b"])
        )
    );
    // OpenAI: its profile, and the google one its explicit order names;
    // its configured entry (google's has none).
    assert_eq!(
        narrowed[1],
        (strings(&["google:a", "openai:a"]), strings(&["openai:a"]))
    );
    // Not narrowing: every stored profile and entry, every time.
    for (stored, configured) in &whole {
        assert_eq!(stored.len(), ALL.len(), "{stored:?}");
        assert_eq!(configured.len(), 2, "{configured:?}");
    }
}
