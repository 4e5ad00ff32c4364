//! The order a candidate's policy is sent: built from the provider's
//! profiles only, and those its explicit order or configured entries name,
//! as the contract says `order-profiles` is sent.

use std::sync::{Arc, Mutex};

use failover::auth::{
    CooldownConfig, FailureEvent, OrderRequest, PinDecision, PinRequest, RankedProfile, Usage,
};
use failover::config::{Config, ProfileMeta};
use failover::runner::{
    AttemptEnd, CandidateDecision, CandidateFacts, CandidatePlan, CandidateRequest, FailedAttempt,
    ModelHealth, RotationConfig, RunPlan, RunRequest, RunStep, RunSummary, Runner, SummaryRequest,
};
use failover::{Classification, Decider, Policy, PolicyError, ProviderError};
use failover::{PolicyVersion, Success};

use super::{config, policy, session, world, Outcome, Scripted, ALL, PRIMARY};

/// The default policy, noting the stored and configured ids of every order
/// it plans.
struct Spy {
    inner: Arc<Policy>,
    orders: Mutex<Vec<(Vec<String>, Vec<String>)>>,
}

impl Decider for Spy {
    fn plan_candidate(
        &self,
        order: &OrderRequest,
        facts: &CandidateFacts,
    ) -> Result<CandidatePlan, PolicyError> {
        let ids = |ids: Vec<&String>| ids.into_iter().cloned().collect();
        self.orders.lock().unwrap().push((
            ids(order.stored.iter().map(|p| &p.id).collect()),
            ids(order.configured.iter().map(|c| &c.id).collect()),
        ));
        Decider::plan_candidate(self.inner.as_ref(), order, facts)
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
        success: &Success<'_>,
        config: &CooldownConfig,
    ) -> Result<Usage, PolicyError> {
        self.inner.record_success(usage, success, config)
    }
    fn plan_run(&self, request: &RunRequest) -> Result<RunPlan, PolicyError> {
        self.inner.plan_run(request)
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
    fn record_model_attempt(
        &self,
        health: &ModelHealth,
        end: AttemptEnd,
        now_ms: u64,
    ) -> Result<ModelHealth, PolicyError> {
        self.inner.record_model_attempt(health, end, now_ms)
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
/// under the spy: the orders it saw and where the runs ended.
async fn runs() -> (Vec<(Vec<String>, Vec<String>)>, Vec<(String, String)>) {
    let w = world(ALL);
    let spy = Arc::new(Spy {
        inner: policy(),
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
async fn a_policy_is_sent_only_what_its_answer_can_depend_on() {
    let (narrowed, served) = runs().await;
    assert_eq!(served.len(), 2);
    assert!(narrowed.len() >= 2, "{narrowed:?}");
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
    // No order carries every stored profile.
    for (stored, _) in &narrowed {
        assert!(stored.len() < ALL.len(), "{stored:?}");
    }
}
