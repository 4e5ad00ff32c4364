//! The real provider: calls OpenAI-compatible and Anthropic endpoints over
//! HTTP with the profile's credential, and captures every way that fails.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;

use super::buffer;
use super::capture;
use super::oauth;
use super::redact::Redactor;
use super::redirects;
use super::stream::{millis, LiveStream};
use crate::config::providers::call_address;
use crate::config::Config;
use crate::config::{Deadlines, Endpoint, Timeouts};
use crate::model::{ChatReply, ChatRequest, StreamEvent, StreamReply};
use crate::names::{canonical_provider, split_model};
use crate::runner::{CallError, Provider, Target};
use crate::state::{AuthStore, Credential};
use crate::time::now_ms;
use failover_policy::ProviderError;

/// Largest successful non-streaming reply read: a chat completion is KiB;
/// beyond this an upstream is misbehaving and would only grow memory.
pub(crate) const MAX_REPLY_BYTES: usize = 32 << 20;

/// Calls providers over HTTP. Cheap to clone (the client pools connections).
#[derive(Clone)]
pub struct HttpProvider {
    config: Arc<Config>,
    store: AuthStore,
    /// One client per connect deadline the config sets, the default's
    /// first (a connect deadline is a client's, not a request's).
    clients: Arc<[(u64, reqwest::Client)]>,
    /// One OAuth refresh per profile at a time (shared by clones).
    refresher: Arc<oauth::Refresher>,
    /// Unreadable events skipped in streams so far (shared by clones).
    skipped_events: Arc<AtomicU64>,
}

impl HttpProvider {
    /// A provider calling the endpoints of `config` with the credentials in
    /// `store`.
    pub fn new(config: Arc<Config>, store: AuthStore) -> Result<Self, reqwest::Error> {
        let clients = connect_deadlines(&config)
            .into_iter()
            .map(|ms| Ok((ms, client(Duration::from_millis(ms))?)))
            .collect::<Result<Vec<_>, reqwest::Error>>()?;
        Ok(HttpProvider {
            config,
            store,
            clients: clients.into(),
            refresher: Arc::default(),
            skipped_events: Arc::default(),
        })
    }

    /// The same provider, counting its skipped events in `counter` (one
    /// count for the providers of every agent).
    pub(crate) fn counting_skips_in(mut self, counter: Arc<AtomicU64>) -> Self {
        self.skipped_events = counter;
        self
    }

    /// How many unreadable events its streams skipped so far (with every
    /// provider sharing its counter).
    pub(crate) fn skipped_events(&self) -> u64 {
        self.skipped_events.load(Ordering::Relaxed)
    }

    /// The config it calls with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The client connecting within `connect_ms` (every deadline the config
    /// sets has one).
    fn client(&self, connect_ms: u64) -> &reqwest::Client {
        let client = self.clients.iter().find(|(ms, _)| *ms == connect_ms);
        &client.unwrap_or(&self.clients[0]).1
    }

    /// The profile's credential, refreshed first when it is an expired
    /// OAuth token; every secret met on the way is added to `redactor`.
    async fn credential(
        &self,
        target: &Target,
        endpoint: &Endpoint,
        redactor: &mut Redactor,
    ) -> Result<Credential, ProviderError> {
        let provider = target.provider.as_str();
        let credential = self.store.credential(&target.profile).map_err(|e| {
            ProviderError::message(format!("cannot read the profiles: {e}")).with_provider(provider)
        })?;
        let credential = credential.ok_or_else(|| {
            ProviderError::message(format!(
                "profile {} has no usable credential",
                target.profile
            ))
            .with_provider(provider)
            .with_status(401)
        })?;
        oauth::learn(redactor, &credential);
        if oauth::needs_refresh(&credential, now_ms()) {
            return self
                .refresher
                .refresh(
                    self.client(endpoint.deadlines.connect_ms),
                    &self.store,
                    endpoint,
                    &target.profile,
                    redactor,
                )
                .await;
        }
        Ok(credential)
    }

    async fn attempt(
        &self,
        target: &Target,
        request: &ChatRequest,
        redactor: &mut Redactor,
    ) -> Result<ChatReply, ProviderError> {
        let provider = target.provider.as_str();
        let endpoint = self.config.endpoint(provider).ok_or_else(|| {
            ProviderError::message(format!(
                "no endpoint for provider {provider}: set models.providers.{provider}.baseUrl"
            ))
            .with_provider(provider)
        })?;
        let model = split_model(&target.model).1;
        let body = super::of(endpoint.api)
            .body(request, model)
            .map_err(|e| e.with_provider(provider))?;
        let deadlines = endpoint.deadlines_for(model);
        let budget = attempt_budget(&deadlines, request.stream, request.deadline_ms);
        let started = tokio::time::Instant::now();
        let credential = self.credential(target, &endpoint, redactor).await?;
        self.exchange(
            target,
            request,
            &endpoint,
            &credential,
            body,
            (&deadlines, budget),
            started,
        )
        .await
    }

    /// Sends the request and reads the reply — a stream up to its first
    /// token — within `budget`; a stream's events then wait at most the
    /// idle deadline of `deadlines`.
    #[allow(clippy::too_many_arguments)]
    async fn exchange(
        &self,
        target: &Target,
        request: &ChatRequest,
        endpoint: &Endpoint,
        credential: &Credential,
        body: Vec<u8>,
        (deadlines, budget): (&Deadlines, Duration),
        started: tokio::time::Instant,
    ) -> Result<ChatReply, ProviderError> {
        let provider = target.provider.as_str();
        // One timer for the whole exchange, the send and the read: each
        // `tokio::time::timeout` registers and removes a timer of its own,
        // a measurable cost per call. Polled after the work, as `timeout`
        // polls it.
        let deadline = started
            .checked_add(budget)
            .unwrap_or_else(|| started + FAR_FUTURE);
        let timer = tokio::time::sleep_until(deadline);
        tokio::pin!(timer);
        let response = tokio::select! {
            biased;
            sent = self.send(endpoint, deadlines, credential, body) => match sent {
                Ok(response) => response,
                Err(error) => return Err(capture::transport_error(provider, error)),
            },
            () = &mut timer => return Err(capture::timeout_error(provider, millis(budget))),
        };
        if !response.status().is_success() {
            return Err(capture::response_error(provider, response).await);
        }
        let is_sse = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("text/event-stream"));
        if request.stream && is_sse {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let upstream = super::of(endpoint.api);
            let stream = LiveStream::new(provider, upstream, response, deadlines.idle_ms)
                .counting_skips(self.skipped_events.clone())
                .start(left)
                .await?;
            if request.buffered {
                // Held as much as a whole reply may carry.
                let max = MAX_REPLY_BYTES as u64;
                let whole = buffer::hold(stream, provider, request.deadline_ms, max).await?;
                return Ok(ChatReply::Stream(whole));
            }
            return Ok(ChatReply::Stream(stream));
        }
        let text = tokio::select! {
            biased;
            read = read_bounded(response) => {
                read.map_err(|e| capture::transport_error(provider, e))?
            }
            () = &mut timer => return Err(capture::timeout_error(provider, millis(budget))),
        };
        let completion = super::of(endpoint.api)
            .read_whole(text)
            .map_err(|e| e.with_provider(provider))?;
        if !request.stream {
            return Ok(ChatReply::Complete(Box::new(completion)));
        }
        whole_as_stream(completion, provider).map(ChatReply::Stream)
    }

    async fn send(
        &self,
        endpoint: &Endpoint,
        deadlines: &Deadlines,
        credential: &Credential,
        body: Vec<u8>,
    ) -> Result<reqwest::Response, reqwest::Error> {
        let client = self.client(deadlines.connect_ms);
        let post = match &endpoint.call_url {
            Some(url) => client.post(url.clone()),
            // Unparsable: reqwest reports why.
            None => client.post(call_address(&endpoint.base_url, endpoint.api)),
        };
        super::of(endpoint.api)
            .authorise(post, credential)
            .header(
                reqwest::header::CONTENT_TYPE,
                reqwest::header::HeaderValue::from_static("application/json"),
            )
            .body(body)
            .send()
            .await
    }
}

impl Provider for HttpProvider {
    type Request = ChatRequest;
    type Reply = ChatReply;

    fn completes_later(&self, reply: &ChatReply) -> bool {
        matches!(reply, ChatReply::Stream(_))
    }

    fn cannot_express(&self, model: &str, request: &ChatRequest) -> Option<String> {
        if request.openai_only.is_empty() && request.anthropic_only.is_empty() {
            return None;
        }
        let provider = canonical_provider(split_model(model).0);
        let api = self.config.api_of(provider)?;
        crate::model::unexpressible(api, &request.openai_only, &request.anthropic_only)
    }

    async fn call(&self, target: &Target, request: &ChatRequest) -> Result<ChatReply, CallError> {
        let mut redactor = Redactor::default();
        let result = self.attempt(target, request, &mut redactor).await;
        // The choke point: nothing of this call leaves unredacted — its
        // error, or any error of its stream however late.
        let result = match result {
            Err(error) => Err(redactor.error(error)),
            Ok(ChatReply::Stream(stream)) => Ok(ChatReply::Stream(redacted(stream, redactor))),
            Ok(complete) => Ok(complete),
        };
        let hung = result.as_ref().is_err_and(capture::is_deadline);
        result.map_err(|e| {
            if hung {
                CallError::Hung(Box::new(e))
            } else {
                CallError::Failed(Box::new(e))
            }
        })
    }
}

/// A deadline for a budget too long to add to an instant (a timeout of
/// `1e30` seconds in the config): never reached, as tokio's own timeouts
/// treat one.
const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);

/// A client that connects within `connect`, sending no credential to
/// another origin.
fn client(connect: Duration) -> Result<reqwest::Client, reqwest::Error> {
    reqwest::Client::builder()
        .user_agent(concat!("failover/", env!("CARGO_PKG_VERSION")))
        // The other deadlines are the caller's (per attempt, per run).
        .connect_timeout(connect)
        // A credential is never sent to another origin, and no call
        // says where the previous one went.
        .redirect(redirects::same_origin_only())
        .referer(false)
        .build()
}

/// Every connect deadline `config` sets, the one of a provider it does not
/// configure first.
fn connect_deadlines(config: &Config) -> Vec<u64> {
    let mut deadlines = vec![Timeouts::default().within(config.models.timeouts).resolve()];
    for provider in config.models.providers.keys() {
        if let Some(endpoint) = config.endpoint(canonical_provider(provider)) {
            deadlines.push(endpoint.deadlines);
            deadlines.extend(endpoint.model_deadlines.iter().map(|(_, d)| *d));
        }
    }
    let mut connect: Vec<u64> = Vec::new();
    for ms in deadlines.into_iter().map(|d| d.connect_ms) {
        if !connect.contains(&ms) {
            connect.push(ms);
        }
    }
    connect
}

/// The attempt's deadline — for a stream, to its first token — cut to what
/// is left of the run.
fn attempt_budget(deadlines: &Deadlines, stream: bool, deadline_ms: Option<u64>) -> Duration {
    let mut ms = if stream {
        deadlines.first_token_ms
    } else {
        deadlines.attempt_ms
    };
    if let Some(deadline) = deadline_ms {
        ms = ms.min(deadline.saturating_sub(now_ms()));
    }
    Duration::from_millis(ms)
}

/// A reply asked to stream and answered whole: a stream of one piece (its
/// text, its tool calls, its refusal), then its end.
fn whole_as_stream(
    completion: crate::model::Completion,
    provider: &str,
) -> Result<StreamReply, ProviderError> {
    let mut first = Vec::new();
    if !completion.text.is_empty() {
        first.push(StreamEvent::Text(completion.text));
    }
    if let Some(calls) = completion.message_extra.get("tool_calls") {
        first.extend(
            crate::wire::tools::deltas_of(calls)
                .into_iter()
                .map(StreamEvent::ToolCall),
        );
    }
    if let Some(refusal) = completion.message_extra.get("refusal") {
        let delta = serde_json::json!([{"index": 0, "delta": {"refusal": refusal}}]);
        first.push(StreamEvent::Extra(serde_json::Map::from_iter([(
            "choices".to_owned(),
            delta,
        )])));
    }
    if first.is_empty() {
        return Err(ProviderError::default().with_provider(provider));
    }
    first.push(StreamEvent::Finish {
        reason: completion.finish,
        usage: completion.usage,
    });
    Ok(StreamReply {
        id: completion.id.clone(),
        first,
        rest: Box::pin(futures_util::stream::empty()),
    })
}

/// `stream` with every later error passed through `redactor`.
fn redacted(stream: StreamReply, redactor: Redactor) -> StreamReply {
    let rest = stream
        .rest
        .map(move |item| item.map_err(|error| redactor.error(error)));
    StreamReply {
        rest: Box::pin(rest),
        ..stream
    }
}

async fn read_bounded(mut response: reqwest::Response) -> Result<String, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_REPLY_BYTES {
            body.truncate(MAX_REPLY_BYTES);
            break;
        }
    }
    // Valid UTF-8 (nearly always) is taken as it is, not copied.
    Ok(String::from_utf8(body)
        .unwrap_or_else(|invalid| String::from_utf8_lossy(invalid.as_bytes()).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One client per connect deadline the config sets, at any level, the
    /// default's first; a provider's other deadlines share its client.
    #[test]
    fn every_connect_deadline_the_config_sets_gets_a_client() {
        let config = serde_json::json!({"models": {
        "timeouts": {"connectSeconds": 4},
        "providers": {
            "openai": {"timeouts": {"connectSeconds": 2, "idleSeconds": 9}},
            "anthropic": {"models": [{"id": "claude-x", "timeouts": {"connectSeconds": 1}}]},
            "groq": {"timeouts": {"firstTokenSeconds": 5}},
        }}});
        let config = Config::from_value(config, std::path::Path::new("c.json5")).unwrap();
        assert_eq!(connect_deadlines(&config), [4_000, 1_000, 2_000]);
        let openai = config.endpoint("openai").unwrap();
        assert_eq!(openai.deadlines_for("gpt-4o").connect_ms, 2_000);
        let anthropic = config.endpoint("anthropic").unwrap();
        assert_eq!(anthropic.deadlines_for("claude-x").connect_ms, 1_000);
        assert_eq!(anthropic.deadlines.connect_ms, 4_000);
    }
}
