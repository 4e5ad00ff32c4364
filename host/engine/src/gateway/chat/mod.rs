//! `POST /v1/chat/completions` and `POST /v1/messages`: the request
//! admitted (key, body, model, session) in the client's shape, recorded
//! when recording, run through its agent's chain under the run's deadline,
//! and answered in the client's shape — whole or streamed, a stream's
//! attempt recorded when it ends: a success only when complete.

mod relay;
mod restart;
mod stream_ends;

use std::sync::Arc;
use std::time::Instant;

use axum::extract::Request;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};

use super::admission::{authorize, read_body, refuse, route, session_id};
use super::anthropic_errors::reshape_response;
use super::header_values::{set_policy_header, with_policy_header};
use super::reply::{self, error_response};
use super::server::Answering;
use super::{Gateway, GatewayRunner};
use crate::config::{gateway::StreamRecovery, Config};
use crate::faces::{anthropic, openai};
use crate::model::{ChatReply, ChatRequest};
use crate::replay::record::Recorder;
use crate::replay::trace::RequestEvent;
use crate::runner::{RunOptions, RunOutcome, Unfinished};
use crate::time::now_ms;
use failover_policy::Decider;
pub(super) use relay::Face;
use relay::{Restarter, StreamContext};
use restart::Restarting;
use stream_ends::{StreamEnds, StreamSite};

/// The OpenAI-shaped chat route.
const CHAT_PATH: &str = "/v1/chat/completions";
/// The Anthropic-shaped chat route.
const MESSAGES_PATH: &str = "/v1/messages";

/// A request ready to run.
struct Admitted {
    runner: Arc<GatewayRunner>,
    options: RunOptions,
    request: ChatRequest,
    /// The run's deadline (ms since the epoch).
    deadline: u64,
}

/// The answer to `request`, to the chat endpoint of `face`. A `POST` runs
/// through the pipeline; another method is the 405 a router gives, naming
/// the active module.
pub(super) fn answer(gateway: &Arc<Gateway>, face: Face, request: Request) -> Answering {
    let gateway = gateway.clone();
    if request.method() != Method::POST {
        let refused = (
            StatusCode::METHOD_NOT_ALLOWED,
            [(header::ALLOW, HeaderValue::from_static("POST"))],
        );
        let response = with_policy_header(&gateway, refused.into_response());
        return Box::pin(std::future::ready(response));
    }
    match face {
        Face::OpenAi => Box::pin(openai_client(gateway, request)),
        Face::Anthropic => Box::pin(anthropic_client(gateway, request)),
    }
}

/// The face a chat endpoint's path names: exactly one of the two paths,
/// no trailing slash, as a router matches.
pub(super) fn endpoint(path: &str) -> Option<Face> {
    match path {
        CHAT_PATH => Some(Face::OpenAi),
        MESSAGES_PATH => Some(Face::Anthropic),
        _ => None,
    }
}

/// `POST /v1/chat/completions`: an OpenAI-shaped client. No router layer
/// wraps it: the key check and the policy header are done here.
async fn openai_client(gateway: Arc<Gateway>, request: Request) -> Response {
    match authorize(&gateway, request.headers()) {
        // Every answer of a chat names its module (see `serve_chat`).
        Ok(()) => serve_chat(gateway, request, Face::OpenAi).await,
        Err(refused) => with_policy_header(&gateway, refuse(request, refused.into_response())),
    }
}

/// `POST /v1/messages`: an Anthropic-shaped client, whose errors —
/// refusals included — are reshaped to the Messages API's.
async fn anthropic_client(gateway: Arc<Gateway>, request: Request) -> Response {
    let response = match authorize(&gateway, request.headers()) {
        Ok(()) => serve_chat(gateway, request, Face::Anthropic).await,
        Err(refused) => with_policy_header(&gateway, refuse(request, refused.into_response())),
    };
    // A reshaped answer keeps its headers.
    reshape_response(response).await
}

/// A chat request admitted, run and answered. Every answer names the
/// module that decided it (`x-failover-policy`): the run's, or the active
/// one when the request was refused before any run.
async fn serve_chat(gateway: Arc<Gateway>, request: Request, face: Face) -> Response {
    let route = match face {
        Face::OpenAi => "chat_completions",
        Face::Anthropic => "messages",
    };
    let admitted = match admit(&gateway, request, face).await {
        Ok(admitted) => admitted,
        Err(refused) => {
            gateway
                .metrics()
                .request(route, "-", refused.status().as_str());
            // Nothing ran: the active module's hash.
            return with_policy_header(&gateway, refused);
        }
    };
    let Admitted {
        runner,
        options,
        request,
        deadline,
    } = admitted;
    // Read only for the `served` line: a clock read is ~20 ns here.
    let started = tracing::enabled!(tracing::Level::INFO).then(Instant::now);
    // The module that decides this whole run, whatever is swapped meanwhile.
    let policy = runner.policy();
    let result = runner
        .run_observed(policy.as_ref(), &options, &request, gateway.metrics())
        .await;
    let model = gateway.metrics().label(&request.model).to_owned();
    let response = match result {
        Ok(mut outcome) => {
            tracing::info!(
                model = %outcome.model,
                profile = %outcome.profile,
                failed_attempts = outcome.attempts.len(),
                latency_ms = started.map_or(0, |started| started.elapsed().as_millis() as u64),
                stream = request.stream,
                "served"
            );
            // A stream is counted, and its attempt recorded, when it ends.
            if let Some(unfinished) = outcome.unfinished.take() {
                let serving = Serving {
                    gateway: &gateway,
                    runner: &runner,
                    policy: &policy,
                    face,
                    route,
                    deadline,
                };
                return serving.stream(outcome, unfinished, &request, &options, model);
            }
            served(&gateway, &policy, outcome, deadline, face, None, None)
        }
        Err(error) => {
            tracing::warn!(requested = %request.model, error = %error, "run failed");
            let mut response = reply::run_error(&error);
            set_policy_header(&mut response, policy.as_ref());
            response
        }
    };
    let status = response.status();
    let outcome = match status {
        StatusCode::OK => "served",
        _ => status.as_str(),
    };
    gateway.metrics().request(route, &model, outcome);
    response
}

/// What serving a stream needs of its request's run.
struct Serving<'a> {
    gateway: &'a Arc<Gateway>,
    runner: &'a Arc<GatewayRunner>,
    policy: &'a Arc<dyn Decider>,
    face: Face,
    route: &'static str,
    /// The run's deadline (ms since the epoch).
    deadline: u64,
}

impl Serving<'_> {
    /// The served stream, its end told to a [`StreamEnds`] and, on a route
    /// that continues streams, its restart ready.
    fn stream(
        &self,
        outcome: RunOutcome<ChatReply>,
        unfinished: Box<Unfinished>,
        request: &ChatRequest,
        options: &RunOptions,
        model: String,
    ) -> Response {
        let site = StreamSite {
            gateway: self.gateway.clone(),
            runner: self.runner.clone(),
            policy: self.policy.clone(),
            route: self.route,
            model,
        };
        let continues = recovery_of(self.runner.config(), self.face) == StreamRecovery::Continue;
        let restart = continues
            .then(|| Restarting {
                site: site.clone(),
                request: ChatRequest {
                    record_id: None,
                    ..request.clone()
                },
                agent: (options.agent.clone())
                    .unwrap_or_else(|| self.gateway.default_agent.clone()),
                deadline: self.deadline,
            })
            .and_then(|restarting| restarting.restarter(unfinished.later.clone()));
        let ends = site.ends(unfinished, request.record_id);
        let (gateway, policy) = (self.gateway, self.policy);
        served(
            gateway,
            policy,
            outcome,
            self.deadline,
            self.face,
            Some(ends),
            restart,
        )
    }
}

/// Reads, parses and routes a request; the response refusing it otherwise.
async fn admit(gateway: &Gateway, request: Request, face: Face) -> Result<Admitted, Response> {
    let (parts, body) = request.into_parts();
    let headers = parts.headers;
    let limits = gateway.limits();
    let body = read_body(
        body,
        &headers,
        (limits.max_request_bytes, "gateway.maxRequestBytes"),
        limits.body_read_timeout,
    )
    .await?;
    let parsed = match face {
        Face::OpenAi => openai::parse_request(&body),
        Face::Anthropic => anthropic::parse_request(&body),
    };
    let mut request = parsed.map_err(|error| {
        error_response(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            None,
            &error.to_string(),
        )
    })?;
    let session = session_id(&headers).map_err(IntoResponse::into_response)?;
    let (runner, mut options) =
        route(gateway, &request.model, &request.models).map_err(IntoResponse::into_response)?;
    options.session = session;
    if let Some(recorder) = &gateway.recorder {
        request.record_id = Some(record_request(recorder, &request, &options));
    }
    let deadline = now_ms().saturating_add(runner.config().run_timeout_ms());
    options.deadline_ms = Some(deadline);
    request.deadline_ms = Some(deadline);
    request.buffered =
        request.stream && recovery_of(runner.config(), face) == StreamRecovery::Buffered;
    Ok(Admitted {
        runner,
        options,
        request,
        deadline,
    })
}

/// The stream recovery mode of `face`'s route.
fn recovery_of(config: &Config, face: Face) -> StreamRecovery {
    let path = match face {
        Face::OpenAi => CHAT_PATH,
        Face::Anthropic => MESSAGES_PATH,
    };
    config.gateway.stream_recovery(path)
}

/// Records the request in the trace; its id there.
fn record_request(recorder: &Recorder, request: &ChatRequest, options: &RunOptions) -> u64 {
    recorder.request(RequestEvent {
        id: 0,
        at: now_ms(),
        session: options.session.clone(),
        model: options
            .model
            .clone()
            .unwrap_or_else(|| request.model.clone()),
        fallbacks: options.one_off_fallbacks.clone().unwrap_or_default(),
        openai_only: request.openai_only.clone(),
        anthropic_only: request.anthropic_only.clone(),
        stream: request.stream,
        compaction_count: 0,
        // The conversation in one shape whatever the client's (the system
        // prompt first), and only when the text is to be kept.
        content: recorder.keeps_content().then(|| {
            crate::upstreams::openai::render_request(request, &request.model)["messages"].take()
        }),
    })
}

/// The served answer, whole or streamed within the run's deadline and the
/// size bound; a stream's end is told to `ends`.
fn served(
    gateway: &Gateway,
    policy: &Arc<dyn Decider>,
    outcome: RunOutcome<ChatReply>,
    deadline: u64,
    face: Face,
    ends: Option<StreamEnds>,
    restart: Option<Restarter>,
) -> Response {
    // Made for a stream only: a whole reply has ended already.
    let context = || StreamContext {
        deadline_ms: Some(deadline),
        max_bytes: gateway.limits().max_stream_bytes,
        on_end: Box::new(move |end| {
            if let Some(ends) = ends {
                ends.ended(end);
            }
        }),
        restart,
    };
    relay::success(outcome, context, face, &policy.version().sha256)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chat_endpoint_is_exactly_one_of_the_two_paths() {
        assert_eq!(endpoint("/v1/chat/completions"), Some(Face::OpenAi));
        assert_eq!(endpoint("/v1/messages"), Some(Face::Anthropic));
        for path in [
            "/v1/chat/completions/",
            "/v1/messages/count_tokens",
            "/v1/models",
            "/V1/chat/completions",
            "",
        ] {
            assert_eq!(endpoint(path), None, "{path}");
        }
    }
}
