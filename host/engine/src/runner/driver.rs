//! The entry points that start a run: [`Runner::run`] and its variants,
//! which plan the run and drive it to its outcome.

use failover_policy::Decider;

use super::observer::{RunObserver, Unobserved};
use super::options::RunOptions;
use super::outcome::{RunError, RunOutcome};
use super::provider::Provider;
use super::run::Run;
use super::shared::Runner;
use crate::time::Clock;

impl<P: Provider, C: Clock> Runner<P, C> {
    /// Runs `request` through the chain with the active policy.
    pub async fn run(
        &self,
        options: &RunOptions,
        request: &P::Request,
    ) -> Result<RunOutcome<P::Reply>, RunError> {
        self.run_with(self.policy().as_ref(), options, request)
            .await
    }

    /// Runs `request` through the chain with `policy` deciding every step
    /// (a caller that must say which module decided takes it first with
    /// [`Runner::policy`]).
    pub async fn run_with(
        &self,
        policy: &dyn Decider,
        options: &RunOptions,
        request: &P::Request,
    ) -> Result<RunOutcome<P::Reply>, RunError> {
        self.run_observed(policy, options, request, &Unobserved)
            .await
    }

    /// Like [`Runner::run_with`], telling `observer` every call, skip and
    /// step as it happens.
    pub(crate) async fn run_observed(
        &self,
        policy: &dyn Decider,
        options: &RunOptions,
        request: &P::Request,
        observer: &dyn RunObserver,
    ) -> Result<RunOutcome<P::Reply>, RunError> {
        // The run's state reads share their files' checks (see read_scope).
        // The run's future is boxed, and so is the outcome it leaves the
        // scope with: the scope's future is moved as it starts, and hands
        // its output up through every poll. The run's state is ~4.7 KB and
        // an outcome ~200 bytes; copied by value they would cost a
        // twentieth of the gateway's own instructions.
        let outcome = crate::state::read_scope::reads_of_one_run(Box::pin(async {
            let plan = self.plan(policy, options)?;
            Run::new(self, policy, options, request, observer, plan)
                .drive()
                .await
                .map(Box::new)
        }))
        .await;
        outcome.map(|outcome| *outcome)
    }
}
