//! A served stream's end: the request counted by how the stream ended,
//! the attempt recorded — a success only when complete, a failure when the
//! provider broke it (F-12.12) — and an early end written to the trace.

use std::sync::Arc;

use super::relay::StreamEnd;
use crate::gateway::{Gateway, GatewayRunner};
use crate::runner::{ReplyEnd, Unfinished};
use failover_policy::Decider;

/// Where a request's streams are served: the gateway, the agent's runner,
/// the module deciding the request, and its labels.
#[derive(Clone)]
pub(super) struct StreamSite {
    pub(super) gateway: Arc<Gateway>,
    pub(super) runner: Arc<GatewayRunner>,
    pub(super) policy: Arc<dyn Decider>,
    /// The request's route and model labels.
    pub(super) route: &'static str,
    pub(super) model: String,
}

impl StreamSite {
    /// What the end of the stream `unfinished` is told to; `record_id` is
    /// the request's id in the trace, when it is in one.
    pub(super) fn ends(&self, unfinished: Box<Unfinished>, record_id: Option<u64>) -> StreamEnds {
        StreamEnds {
            site: self.clone(),
            unfinished,
            record_id,
        }
    }
}

/// What a served stream's end is told to: the request counted by how the
/// stream ended, the attempt recorded — a success only when complete, a
/// failure when the provider broke it (F-12.12) — and an early end written
/// to the trace, which cannot derive it.
pub(super) struct StreamEnds {
    site: StreamSite,
    unfinished: Box<Unfinished>,
    /// The request's id in the trace, when recording.
    record_id: Option<u64>,
}

/// The request outcome of a stream the client left: nginx's "client
/// closed request", as no HTTP status says it.
const CLIENT_CLOSED: &str = "499";

impl StreamEnds {
    pub(super) fn ended(self, end: StreamEnd) {
        let site = &self.site;
        let target = &self.unfinished.target;
        let (outcome, failure) = match &end {
            StreamEnd::Complete => (Some("served"), None),
            StreamEnd::Broken(broken) => (
                Some(broken.code()),
                broken.provider_failure(&target.provider),
            ),
            // The request goes on elsewhere, counted when it ends there.
            StreamEnd::Restarted(broken) => (None, broken.provider_failure(&target.provider)),
            StreamEnd::ClientLeft => (Some(CLIENT_CLOSED), None),
        };
        let metrics = site.gateway.metrics();
        match outcome {
            Some(outcome) => metrics.request(site.route, &site.model, outcome),
            None => metrics.stream_restarted(site.route, &site.model),
        }
        let reply_end = match (&end, &failure) {
            (StreamEnd::Complete, _) => ReplyEnd::Complete,
            (_, Some(error)) => ReplyEnd::Broken(error),
            _ => ReplyEnd::Stopped,
        };
        let policy = site.policy.as_ref();
        if let (Some(recorder), Some(id), false) = (
            &site.gateway.recorder,
            self.record_id,
            end == StreamEnd::Complete,
        ) {
            recorder.broken(id, target, failure.as_ref());
        }
        match site
            .runner
            .finish_reply(policy, metrics, &self.unfinished, reply_end)
        {
            Ok(Some(broken)) => tracing::info!(
                profile = %target.profile,
                reason = broken.reason.as_str(),
                "recorded the stream's failure against its profile"
            ),
            Ok(None) => {}
            Err(error) => tracing::error!(
                profile = %target.profile,
                %error,
                "cannot record how the stream ended"
            ),
        }
    }
}
