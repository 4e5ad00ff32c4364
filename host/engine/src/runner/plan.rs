//! Where a run starts (§3) and which candidates it has (F-7.3): the
//! session read, the policy's plan (`plan-run`), a stale override cleared,
//! and the configured primary put first once when the plan asks to
//! re-probe it (F-12.2).

use std::borrow::Cow;

use failover_policy::Decider;

use crate::config::{AgentModel, ModelChoice};
use crate::state::SessionEntry;

use super::model::{RunPlan, RunRequest, SelectionSource, SessionOverride};
use super::options::RunOptions;
use super::outcome::RunError;
use super::provider::Provider;
use super::shared::Runner;
use crate::time::Clock;

/// A run's start.
pub(super) struct Plan {
    /// The session as it was when the run started.
    pub(super) session: Option<SessionEntry>,
    /// The model selected.
    pub(super) requested: String,
    /// Why it was selected.
    pub(super) source: SelectionSource,
    /// The candidates, in order.
    pub(super) chain: Vec<String>,
    /// The chain's first candidate is the configured primary, tried once
    /// with one profile before the auto override (F-12.2).
    pub(super) probing_primary: bool,
    /// Candidates the plan holds only as larger models for context
    /// overflows: a run enters them on an overflow's step alone.
    pub(super) overflow_only: Vec<String>,
}

/// An agent's own model: its primary and, when it lists them, fallbacks.
struct AgentChoice {
    primary: Option<String>,
    fallbacks: Option<Vec<String>>,
}

impl<P: Provider, C: Clock> Runner<P, C> {
    /// Plans a run of `options`.
    pub(super) fn plan(
        &self,
        policy: &dyn Decider,
        options: &RunOptions,
    ) -> Result<Plan, RunError> {
        let session = match &options.session {
            Some(id) => Some(self.sessions.get(id)?),
            None => None,
        };
        let agent = self.agent_choice(options);
        let defaults = self.defaults(options);
        let request = self.run_request(options, session.as_ref(), agent, &defaults);
        let mut plan = policy.plan_run(&request)?;
        if plan.clear_override {
            if let Some(id) = &options.session {
                self.sessions
                    .update(id, SessionEntry::clear_model_override)?;
            }
        }
        let requested = plan.candidates.first().cloned().ok_or(RunError::NoModel)?;
        let probing_primary = self.probe_first(options, &mut plan, &defaults)?;
        let overflow_only = (plan.candidates.iter())
            .filter(|model| !failover_policy::routes_to(&request, model))
            .cloned()
            .collect();
        Ok(Plan {
            session,
            requested,
            source: plan.source,
            chain: plan.candidates,
            probing_primary,
            overflow_only,
        })
    }

    /// What the policy's plan reads: the caller's model (a one-off
    /// selection comes with its own fallbacks or none, F-7.6), the
    /// configured, agent, cron and heartbeat models, and the session's
    /// override.
    fn run_request(
        &self,
        options: &RunOptions,
        session: Option<&SessionEntry>,
        agent: AgentChoice,
        defaults: &ModelChoice,
    ) -> RunRequest {
        let session_override = session.and_then(|s| {
            s.model().map(|model| SessionOverride {
                model,
                source: s.model_override.source,
                origin: s.origin(),
            })
        });
        let fallbacks_override = match options.model {
            Some(_) => options.one_off_fallbacks.clone(),
            None => {
                (options.one_off_fallbacks.clone()).or_else(|| options.fallbacks_override.clone())
            }
        };
        RunRequest {
            requested: options.model.clone(),
            configured_primary: defaults.primary.clone(),
            configured_fallbacks: defaults.fallbacks.clone().unwrap_or_default(),
            agent_primary: agent.primary,
            agent_fallbacks: agent.fallbacks,
            cron_model: options.cron.as_ref().map(|c| c.model.clone()),
            cron_fallbacks: options.cron.as_ref().and_then(|c| c.fallbacks.clone()),
            heartbeat: options.heartbeat.is_some(),
            heartbeat_model: options.heartbeat.clone().flatten(),
            now_ms: match session_override {
                Some(_) => self.clock.now_ms(),
                None => 0,
            },
            last_primary_probe_at: session
                .and_then(|s| s.model_override.primary_probe_at)
                .filter(|_| session_override.is_some()),
            session_override,
            fallbacks_override,
            overflow_to: self.config.overflows().to_vec(),
            primary_probe_interval_ms: self.config.primary_probe_interval_ms(),
        }
    }

    /// The run's agent's own model, when `agents.list` gives it one.
    fn agent_choice(&self, options: &RunOptions) -> AgentChoice {
        let model = options
            .agent
            .as_deref()
            .and_then(|id| self.config.agents.list.iter().find(|a| a.id == id))
            .and_then(|a| a.model.clone());
        match model {
            Some(AgentModel::Name(model)) => AgentChoice {
                primary: Some(model),
                fallbacks: None,
            },
            Some(AgentModel::Choice(choice)) => AgentChoice {
                primary: choice.primary,
                fallbacks: choice.fallbacks,
            },
            None => AgentChoice {
                primary: None,
                fallbacks: None,
            },
        }
    }

    /// The configured model and fallbacks: the image model's for an image
    /// run (F-1.2), the text model's otherwise (lent, not copied).
    fn defaults(&self, options: &RunOptions) -> Cow<'_, ModelChoice> {
        if !options.image {
            return Cow::Borrowed(&self.config.agents.defaults.model);
        }
        match &self.config.agents.defaults.image_model {
            Some(AgentModel::Name(model)) => Cow::Owned(ModelChoice {
                primary: Some(model.clone()),
                ..Default::default()
            }),
            Some(AgentModel::Choice(choice)) => Cow::Borrowed(choice),
            None => Cow::Owned(ModelChoice::default()),
        }
    }

    /// F-12.2: puts the configured primary first, once, when the selection
    /// asks for a probe, and notes the probe on the session.
    fn probe_first(
        &self,
        options: &RunOptions,
        plan: &mut RunPlan,
        defaults: &ModelChoice,
    ) -> Result<bool, RunError> {
        let (Some(primary), Some(id)) = (&defaults.primary, &options.session) else {
            return Ok(false);
        };
        if !plan.probe_primary {
            return Ok(false);
        }
        let chain = &mut plan.candidates;
        chain.retain(|model| model != primary);
        chain.insert(0, primary.clone());
        let now = self.clock.now_ms();
        self.sessions.update(id, |e| {
            e.model_override.primary_probe_at = Some(now);
        })?;
        Ok(true)
    }
}
