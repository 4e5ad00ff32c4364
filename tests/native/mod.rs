//! The policy core run natively on the same input the component gets. Host
//! and core share the contract's types (`policy-types`), so nothing is
//! converted: the same cases run natively and through the component.
//! Shared by the integration tests and the benchmark (`#[path]`).

use failover::report::FlatReport;

/// The report the core reads: the one the component gets.
pub fn to_core(report: &FlatReport) -> policy_guest::ErrorReport {
    report.report.clone()
}

/// The core's profile functions.
#[allow(unused_imports)] // The benchmark includes this file but uses only `to_core`.
pub mod profiles {
    pub use policy_guest::profiles::{order_profiles, pin_profile, record_failure, record_success};
}

/// The core's runner functions, in the contract's shapes.
#[allow(dead_code, unused_imports)] // The benchmark uses only `to_core`.
pub mod runner {
    use failover::runner::{RunSummary, SummaryRequest};

    pub use policy_guest::runner::{
        decide_candidate, next_step, plan_candidate, plan_run, record_model_attempt,
    };

    pub fn summarise(request: &SummaryRequest) -> RunSummary {
        policy_guest::runner::summarise(&request.attempts, &request.profiles, request.now_ms)
    }
}

/// The default policy's core behind the host's [`Decider`](failover::Decider)
/// trait, called natively: what replay and runs compare the component with.
#[allow(dead_code)] // Each includer uses part of this file.
pub struct Native {
    /// What the host reports as the deciding module.
    pub version: failover::PolicyVersion,
}

#[allow(dead_code)]
mod native_decider {
    use failover::auth::{
        CooldownConfig, FailureEvent, OrderRequest, PinDecision, PinRequest, RankedProfile, Usage,
    };
    use failover::runner::{
        AttemptEnd, CandidateDecision, CandidateRequest, FailedAttempt, ModelHealth,
        RotationConfig, RunPlan, RunRequest, RunStep, RunSummary, SummaryRequest,
    };
    use failover::{Classification, Decider, Limits, PolicyError, ProviderError};
    use failover::{PolicyVersion, Success};

    use super::{profiles, runner, to_core, Native};

    impl Decider for Native {
        fn version(&self) -> &PolicyVersion {
            &self.version
        }
        fn classify(
            &self,
            error: &ProviderError,
            now_ms: u64,
        ) -> Result<Classification, PolicyError> {
            let flat = failover::report::flatten(error, now_ms, &Limits::default());
            Ok(policy_guest::classify(&to_core(&flat)))
        }
        fn order_profiles(
            &self,
            request: &OrderRequest,
        ) -> Result<Vec<RankedProfile>, PolicyError> {
            Ok(profiles::order_profiles(request))
        }
        fn pin_profile(&self, request: &PinRequest) -> Result<PinDecision, PolicyError> {
            Ok(profiles::pin_profile(request))
        }
        fn record_failure(
            &self,
            usage: &Usage,
            event: &FailureEvent,
            config: &CooldownConfig,
        ) -> Result<Usage, PolicyError> {
            Ok(profiles::record_failure(usage, event, config))
        }
        fn record_success(
            &self,
            usage: &Usage,
            success: &Success<'_>,
            _config: &CooldownConfig,
        ) -> Result<Usage, PolicyError> {
            Ok(profiles::record_success(
                usage,
                success.model,
                success.now_ms,
            ))
        }
        fn plan_run(&self, request: &RunRequest) -> Result<RunPlan, PolicyError> {
            Ok(runner::plan_run(request))
        }
        fn decide_candidate(
            &self,
            request: &CandidateRequest,
        ) -> Result<CandidateDecision, PolicyError> {
            Ok(runner::decide_candidate(request))
        }
        fn next_step(
            &self,
            attempt: &FailedAttempt,
            config: &RotationConfig,
        ) -> Result<RunStep, PolicyError> {
            Ok(runner::next_step(attempt, config))
        }
        fn summarise(&self, request: &SummaryRequest) -> Result<RunSummary, PolicyError> {
            Ok(runner::summarise(request))
        }
        fn record_model_attempt(
            &self,
            health: &ModelHealth,
            end: AttemptEnd,
            now_ms: u64,
        ) -> Result<ModelHealth, PolicyError> {
            Ok(runner::record_model_attempt(health, end, now_ms))
        }
    }
}
