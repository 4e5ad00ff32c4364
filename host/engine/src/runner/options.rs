//! What an agent runtime supplies for one run.

/// A cron job's model and fallbacks (`payload.model`, `payload.fallbacks`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronJob {
    /// The job's model, `provider/model`.
    pub model: String,
    /// `None`: the configured fallbacks; `Some([])`: strict.
    pub fallbacks: Option<Vec<String>>,
}

/// What an agent runtime supplies for one run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// The agent (`agents.list[].id`); its own model, if any, applies.
    pub agent: Option<String>,
    /// The session whose overrides apply and are persisted.
    pub session: Option<String>,
    /// The session's compaction count now.
    pub compaction_count: u32,
    /// The run is a cron job's.
    pub cron: Option<CronJob>,
    /// The run is a heartbeat, with its own `heartbeat.model` if any.
    pub heartbeat: Option<Option<String>>,
    /// A caller's `fallbacksOverride`.
    pub fallbacks_override: Option<Vec<String>>,
    /// An image run: its chain is `agents.defaults.imageModel`, not the
    /// text model's (F-1.2).
    pub image: bool,
    /// A one-off explicit `provider/model` (a request's model, `failover run
    /// --model`): strict like a user's choice (F-7.6); the session's
    /// override is neither read nor changed by it.
    pub model: Option<String>,
    /// A one-off chain's fallbacks (an alias naming several models, a
    /// request's `models` list), tried exactly, in order, after `model`.
    /// Like `model`, it neither reads nor changes the session's override.
    pub one_off_fallbacks: Option<Vec<String>>,
    /// The run's deadline on the runner's clock (ms since the epoch): no
    /// attempt or wait starts after it.
    pub deadline_ms: Option<u64>,
}

impl RunOptions {
    /// The options a requested model means, as the gateway routes it and
    /// replay replays it: `auto` is `default_agent`'s chain, `agent:<id>`
    /// that agent's, anything else a strict `provider/model` (F-7.6).
    pub fn for_requested(default_agent: &str, model: &str) -> RunOptions {
        Self::for_chain(default_agent, model, &[])
    }

    /// The options of a requested model followed by a one-off list of
    /// fallbacks (empty: none): the first of `model` (unless `auto` or an
    /// agent) and `fallbacks` is tried first, the rest in order after it.
    pub fn for_chain(default_agent: &str, model: &str, fallbacks: &[String]) -> RunOptions {
        if !fallbacks.is_empty() && (model == "auto" || model.starts_with("agent:")) {
            let agent = model.strip_prefix("agent:").unwrap_or(default_agent);
            let rest = &fallbacks[1..];
            return RunOptions {
                agent: Some(agent.to_owned()),
                model: Some(fallbacks[0].clone()),
                // One model alone is a strict selection, as it is recorded.
                one_off_fallbacks: (!rest.is_empty()).then(|| rest.to_vec()),
                ..RunOptions::default()
            };
        }
        let one_off_fallbacks = (!fallbacks.is_empty()).then(|| fallbacks.to_vec());
        let (agent, model) = match model.strip_prefix("agent:") {
            Some(agent) => (agent, None),
            None if model == "auto" => (default_agent, None),
            None => (default_agent, Some(model.to_owned())),
        };
        RunOptions {
            agent: Some(agent.to_owned()),
            model,
            one_off_fallbacks,
            ..RunOptions::default()
        }
    }
}
