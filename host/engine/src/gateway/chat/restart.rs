//! `gateway.streamRecovery: "continue"`: a stream the provider breaks
//! after output starts over on the run's later candidates, as a run of
//! its own over them, and the client's stream goes on with it.

use super::relay::{Restart, Restarter, StreamContext};
use super::stream_ends::StreamSite;
use crate::model::{ChatReply, ChatRequest};
use crate::runner::{RunOptions, Target};

/// What a restart of one request needs.
pub(super) struct Restarting {
    /// Where its streams are served.
    pub(super) site: StreamSite,
    /// The client's request, as it was run.
    pub(super) request: ChatRequest,
    /// The agent whose profiles serve it.
    pub(super) agent: String,
    /// The run's deadline (ms since the epoch), which no restart extends.
    pub(super) deadline: u64,
}

impl Restarting {
    /// A restart over `later`, the candidates after the one that served;
    /// none when there are none.
    pub(super) fn restarter(self, later: Vec<String>) -> Option<Restarter> {
        if later.is_empty() {
            return None;
        }
        Some(Box::new(move || Box::pin(self.restart(later))))
    }

    /// Runs the request over `later`; the served stream, or `None` when
    /// the run fails (the client then gets the first break's error).
    async fn restart(self, later: Vec<String>) -> Option<Restart> {
        let mut options = RunOptions::for_chain(&self.agent, &later[0], &later[1..]);
        options.deadline_ms = Some(self.deadline);
        let site = &self.site;
        let run = (site.runner)
            .run_observed(
                site.policy.as_ref(),
                &options,
                &self.request,
                site.gateway.metrics(),
            )
            .await;
        let mut outcome = match run {
            Ok(outcome) => outcome,
            Err(error) => {
                tracing::warn!(%error, "the broken stream's restart found no candidate");
                return None;
            }
        };
        let unfinished = outcome.unfinished.take()?;
        let ChatReply::Stream(stream) = outcome.reply else {
            return None;
        };
        let target = Target {
            provider: outcome.provider,
            model: outcome.model,
            profile: outcome.profile,
        };
        let later = unfinished.later.clone();
        // A restart is not in the recorded trace: its replay shows the
        // break, as a route that does not continue would.
        let ends = self.site.ends(unfinished, None);
        let max_bytes = self.site.gateway.limits().max_stream_bytes;
        let deadline = self.deadline;
        let context = StreamContext {
            deadline_ms: Some(deadline),
            max_bytes,
            on_end: Box::new(move |end| ends.ended(end)),
            restart: self.restarter(later),
        };
        Some(Restart {
            stream,
            target,
            context,
        })
    }
}
