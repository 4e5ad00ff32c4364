//! An upstream's event stream, read as it arrives: bytes → server-sent
//! events → chat events, in the OpenAI or the Anthropic shape. Its start —
//! everything up to the first content — is part of the attempt (a failure
//! there fails over); the rest is the served stream, each wait for bytes
//! bounded by the endpoint's idle limit, and it ends with an error when
//! the upstream breaks, is cut, or closes without saying it is complete.
//! A few unreadable events are skipped and counted; more break the stream.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};

use super::capture;
use super::{openai, StreamDecode, Upstream};
use crate::model::{StreamEvent, StreamReply};
use crate::wire::sse::{SseDecoder, SseEvent};
use failover_policy::ProviderError;

type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, reqwest::Error>> + Send>>;

/// An upstream stream being read: bytes → server-sent events → events.
pub(super) struct LiveStream {
    provider: String,
    bytes: ByteStream,
    sse: SseDecoder,
    decoder: Box<dyn StreamDecode>,
    pending: VecDeque<StreamEvent>,
    /// The longest wait for the next bytes once content flows.
    idle: Duration,
    ended: bool,
    /// Unreadable events skipped in this stream.
    skipped: u32,
    /// Where skipped events are counted, for `/metrics`.
    skips: Option<Arc<AtomicU64>>,
}

/// Unreadable events one stream may skip: a provider's stray keep-alive or
/// half-written line is survived; a stream of garbage is broken (F-12.12).
const MAX_SKIPPED_EVENTS: u32 = 3;

impl LiveStream {
    pub(super) fn new(
        provider: &str,
        upstream: &dyn Upstream,
        response: reqwest::Response,
        idle_ms: u64,
    ) -> Self {
        LiveStream {
            provider: provider.to_owned(),
            bytes: Box::pin(response.bytes_stream()),
            sse: SseDecoder::default(),
            decoder: upstream.decoder(),
            pending: VecDeque::new(),
            idle: Duration::from_millis(idle_ms),
            ended: false,
            skipped: 0,
            skips: None,
        }
    }

    /// The same stream, counting the unreadable events it skips in `skips`.
    pub(super) fn counting_skips(mut self, skips: Arc<AtomicU64>) -> Self {
        self.skips = Some(skips);
        self
    }

    /// Reads until the first content — text or a tool call, the point of
    /// no return for failover — within `budget`. A stream that errors, is
    /// cut, or ends with no content before that is a failed attempt.
    pub(super) async fn start(mut self, budget: Duration) -> Result<StreamReply, ProviderError> {
        let deadline = tokio::time::Instant::now() + budget;
        let mut first = Vec::new();
        loop {
            let next = tokio::time::timeout_at(deadline, self.next())
                .await
                .map_err(|_| capture::timeout_error(&self.provider, millis(budget)))?;
            match next {
                Some(Ok(event)) => {
                    let is_content = event.is_content();
                    first.push(event);
                    if is_content {
                        break;
                    }
                }
                Some(Err(error)) => return Err(error),
                // Finished (or never started) without a word: empty_response.
                None => return Err(ProviderError::default().with_provider(self.provider.as_str())),
            }
        }
        let id = self.decoder.id().to_owned();
        let rest = futures_util::stream::unfold(self, |mut stream| async move {
            let idle = stream.idle;
            let next = match tokio::time::timeout(idle, stream.next()).await {
                Ok(next) => next,
                Err(_) => Some(Err(capture::idle_error(&stream.provider, millis(idle)))),
            };
            // After an error the stream is over.
            if matches!(next, Some(Err(_))) {
                stream.ended = true;
            }
            next.map(|item| (item, stream))
        });
        Ok(StreamReply {
            id,
            first,
            rest: Box::pin(rest),
        })
    }

    /// The next event; `None` after the final one.
    async fn next(&mut self) -> Option<Result<StreamEvent, ProviderError>> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(Ok(event));
            }
            if self.ended || self.done() {
                return None;
            }
            match self.bytes.next().await {
                Some(Ok(bytes)) => {
                    let events = match self.sse.feed(&bytes) {
                        Ok(events) => events,
                        Err(e) => {
                            let error = openai::garbled_event(&e.to_string());
                            return Some(Err(self.fail(error.with_provider(&*self.provider))));
                        }
                    };
                    if let Err(error) = self.decode(events) {
                        return Some(Err(self.fail(error)));
                    }
                }
                Some(Err(error)) => {
                    let error = capture::transport_error(&self.provider, error);
                    return Some(Err(self.fail(error)));
                }
                None => {
                    let tail: Vec<_> = self.sse.finish().into_iter().collect();
                    if let Err(error) = self.decode(tail) {
                        return Some(Err(self.fail(error)));
                    }
                    self.ended = true;
                    // Closed before its terminal event: cut (F-12.12).
                    if !self.done() {
                        return Some(Err(capture::cut_stream_error(&self.provider)));
                    }
                }
            }
        }
    }

    fn done(&self) -> bool {
        self.decoder.done()
    }

    fn decode(&mut self, events: Vec<SseEvent>) -> Result<(), ProviderError> {
        for event in events {
            let decoded = match self.decoder.feed(&event) {
                Ok(decoded) => decoded,
                Err(error) if openai::is_garbled(&error) && self.skipped < MAX_SKIPPED_EVENTS => {
                    self.skipped += 1;
                    if let Some(skips) = &self.skips {
                        skips.fetch_add(1, Ordering::Relaxed);
                    }
                    continue;
                }
                Err(error) => return Err(error.with_provider(self.provider.as_str())),
            };
            self.pending.extend(decoded);
            if self.done() {
                break;
            }
        }
        Ok(())
    }

    fn fail(&mut self, error: ProviderError) -> ProviderError {
        self.ended = true;
        self.pending.clear();
        error
    }
}

/// `duration` in whole milliseconds.
pub(super) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
