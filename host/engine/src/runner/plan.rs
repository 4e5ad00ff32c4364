//! Where a run starts (§3) and which candidates it has (F-7.3): the
//! session read, the model selected (a one-off explicit model is the
//! user's, strict, F-7.6), a stale override cleared, the chain decided, and
//! the configured primary put first once when an auto override is due to
//! re-probe it (F-12.2).

use std::borrow::Cow;

use failover_sandbox::policy::Decider;

use crate::config::{AgentModel, ModelChoice};
use crate::state::SessionEntry;

use super::clock::Clock;
use super::driver::Runner;
use super::model::{ChainRequest, Selection, SelectionRequest, SelectionSource, SessionOverride};
use super::options::RunOptions;
use super::outcome::RunError;
use super::provider::Provider;

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
        let mut selection = self.select(policy, options, session.as_ref(), &agent, &defaults)?;
        if selection.clear_override {
            if let Some(id) = &options.session {
                self.sessions
                    .update(id, SessionEntry::clear_model_override)?;
            }
        }
        let requested = selection.model.take().ok_or(RunError::NoModel)?;
        let source_fallbacks = match selection.source {
            SelectionSource::AgentPrimary => agent.fallbacks,
            SelectionSource::CronJob => options.cron.as_ref().and_then(|c| c.fallbacks.clone()),
            _ => None,
        };
        // The request owns the model only while it is asked: taken back
        // after, not copied.
        let question = ChainRequest {
            requested,
            source: selection.source,
            configured_primary: defaults.primary.clone(),
            configured_fallbacks: defaults.fallbacks.clone().unwrap_or_default(),
            source_fallbacks,
            fallbacks_override: options
                .one_off_fallbacks
                .clone()
                .or_else(|| options.fallbacks_override.clone()),
        };
        let mut chain = policy.candidate_chain(&question)?.candidates;
        let requested = question.requested;
        let probing_primary = self.probe_first(options, &selection, &defaults, &mut chain)?;
        Ok(Plan {
            session,
            requested,
            source: selection.source,
            chain,
            probing_primary,
        })
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

    /// The model the run starts with and why.
    fn select(
        &self,
        policy: &dyn Decider,
        options: &RunOptions,
        session: Option<&SessionEntry>,
        agent: &AgentChoice,
        defaults: &ModelChoice,
    ) -> Result<Selection, RunError> {
        if let Some(model) = &options.model {
            // F-7.6: a one-off explicit selection is the user's, and strict —
            // unless it comes with its own fallbacks, which the chain then
            // follows exactly (the configured default's rule with a
            // caller's override list).
            let source = match options.one_off_fallbacks {
                Some(_) => SelectionSource::ConfiguredDefault,
                None => SelectionSource::UserOverride,
            };
            return Ok(Selection {
                model: Some(model.clone()),
                source,
                clear_override: false,
                probe_primary: false,
            });
        }
        let session_override = session.and_then(|s| {
            s.model().map(|model| SessionOverride {
                model,
                source: s.model_override.source,
                origin: s.origin(),
            })
        });
        Ok(policy.resolve_selection(&SelectionRequest {
            configured_primary: defaults.primary.clone(),
            agent_primary: agent.primary.clone(),
            cron_model: options.cron.as_ref().map(|c| c.model.clone()),
            heartbeat: options.heartbeat.is_some(),
            heartbeat_model: options.heartbeat.clone().flatten(),
            session_override,
            primary_probe_interval_ms: self.config.primary_probe_interval_ms(),
            last_primary_probe_at: session.and_then(|s| s.model_override.primary_probe_at),
            now_ms: self.clock.now_ms(),
        })?)
    }

    /// F-12.2: puts the configured primary first, once, when the selection
    /// asks for a probe, and notes the probe on the session.
    fn probe_first(
        &self,
        options: &RunOptions,
        selection: &Selection,
        defaults: &ModelChoice,
        chain: &mut Vec<String>,
    ) -> Result<bool, RunError> {
        let (Some(primary), Some(id)) = (&defaults.primary, &options.session) else {
            return Ok(false);
        };
        if !selection.probe_primary {
            return Ok(false);
        }
        chain.retain(|model| model != primary);
        chain.insert(0, primary.clone());
        let now = self.clock.now_ms();
        self.sessions.update(id, |e| {
            e.model_override.primary_probe_at = Some(now);
        })?;
        Ok(true)
    }
}
