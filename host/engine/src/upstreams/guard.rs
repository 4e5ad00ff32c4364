//! A served stream, bounded: the run's deadline and a maximum size apply
//! to the whole stream, not only to its start. What ends it early says
//! whose fault that was — the upstream's (recorded against the profile) or
//! a bound of this gateway's (not the profile's doing).

use std::collections::VecDeque;
use std::pin::Pin;
use std::time::Duration;

use futures_util::{Stream, StreamExt};

use crate::model::{EventStream, StreamEvent, StreamReply};
use crate::time::now_ms;
use crate::upstreams::capture;
use failover_policy::ProviderError;

/// Why a stream stopped after its first content.
#[derive(Debug, Clone, PartialEq)]
pub enum Broken {
    /// The upstream failed: an error event, a cut, a stall.
    Upstream(ProviderError),
    /// The run's deadline passed while the reply streamed.
    Deadline,
    /// The reply's content passed the configured maximum.
    TooLarge {
        /// The maximum, in bytes.
        limit: u64,
    },
}

impl Broken {
    /// The `code` of the client's error event.
    pub fn code(&self) -> &'static str {
        match self {
            Broken::Upstream(_) => "stream_interrupted",
            Broken::Deadline => "deadline_exceeded",
            Broken::TooLarge { .. } => "stream_too_large",
        }
    }

    /// What the client and the log are told (an upstream's error only by
    /// its first line: it has been redacted, and may be long).
    pub fn message(&self) -> String {
        match self {
            Broken::Upstream(error) => {
                format!("the upstream stream broke: {}", first_line(&error.message))
            }
            Broken::Deadline => "the run's deadline passed while the reply streamed".into(),
            Broken::TooLarge { limit } => {
                format!("the reply passed the maximum streamed size of {limit} bytes")
            }
        }
    }
}

impl Broken {
    /// The provider's failure this break is, if it is one: the upstream's
    /// error, or the run's deadline passing while `provider` streamed (a
    /// timeout, F-12.12). A size bound of this gateway is none: the
    /// provider did nothing wrong.
    pub fn provider_failure(&self, provider: &str) -> Option<ProviderError> {
        match self {
            Broken::Upstream(error) => Some(error.clone()),
            Broken::Deadline => Some(capture::stream_deadline_error(provider)),
            Broken::TooLarge { .. } => None,
        }
    }
}

fn first_line(text: &str) -> &str {
    const MAX: usize = 300;
    let line = text.lines().next().unwrap_or_default();
    let mut end = line.len().min(MAX);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    &line[..end]
}

/// A guarded stream: every event of the reply, first ones included.
pub type GuardedStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, Broken>> + Send>>;

struct State {
    first: VecDeque<StreamEvent>,
    rest: EventStream,
    /// Content bytes so far.
    bytes: u64,
    max_bytes: u64,
    deadline_ms: Option<u64>,
    over: bool,
}

/// The reply's events, ended by an error when the upstream breaks, the
/// deadline (ms since the epoch) passes, or the content passes
/// `max_bytes`.
pub fn guard(reply: StreamReply, deadline_ms: Option<u64>, max_bytes: u64) -> GuardedStream {
    let state = State {
        first: reply.first.into(),
        rest: reply.rest,
        bytes: 0,
        max_bytes,
        deadline_ms,
        over: false,
    };
    Box::pin(futures_util::stream::unfold(
        state,
        |mut state| async move {
            if state.over {
                return None;
            }
            let next = match state.first.pop_front() {
                Some(event) => Some(Ok(event)),
                None => state.next_rest().await,
            };
            let item = match next? {
                Ok(event) => {
                    state.bytes = state.bytes.saturating_add(event.content_bytes());
                    if state.bytes > state.max_bytes {
                        Err(Broken::TooLarge {
                            limit: state.max_bytes,
                        })
                    } else {
                        Ok(event)
                    }
                }
                Err(broken) => Err(broken),
            };
            state.over = item.is_err();
            Some((item, state))
        },
    ))
}

impl State {
    async fn next_rest(&mut self) -> Option<Result<StreamEvent, Broken>> {
        let next = match self.deadline_ms {
            None => self.rest.next().await,
            Some(deadline) => {
                let left = Duration::from_millis(deadline.saturating_sub(now_ms()));
                match tokio::time::timeout(left, self.rest.next()).await {
                    Ok(next) => next,
                    Err(_) => return Some(Err(Broken::Deadline)),
                }
            }
        };
        next.map(|item| item.map_err(Broken::Upstream))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FinishReason;

    fn reply(rest: Vec<Result<StreamEvent, ProviderError>>) -> StreamReply {
        StreamReply {
            id: "s".into(),
            first: vec![StreamEvent::Text("ab".into())],
            rest: Box::pin(futures_util::stream::iter(rest)),
        }
    }

    fn finish() -> StreamEvent {
        StreamEvent::Finish {
            reason: FinishReason::Stop,
            usage: None,
        }
    }

    #[tokio::test]
    async fn a_whole_stream_passes_and_a_large_one_is_cut() {
        let events: Vec<_> = guard(
            reply(vec![Ok(StreamEvent::Text("cd".into())), Ok(finish())]),
            None,
            4,
        )
        .collect()
        .await;
        assert_eq!(events.len(), 3);
        assert!(events.iter().all(Result::is_ok));
        let cut: Vec<_> = guard(
            reply(vec![Ok(StreamEvent::Text("cde".into())), Ok(finish())]),
            None,
            4,
        )
        .collect()
        .await;
        assert_eq!(cut.len(), 2, "{cut:?}");
        assert_eq!(cut[1], Err(Broken::TooLarge { limit: 4 }));
    }

    #[tokio::test]
    async fn upstream_errors_and_the_deadline_end_it() {
        let broken: Vec<_> = guard(
            reply(vec![
                Err(ProviderError::message("boom\nmore")),
                Ok(finish()),
            ]),
            None,
            100,
        )
        .collect()
        .await;
        assert_eq!(broken.len(), 2);
        let Err(error) = &broken[1] else { panic!() };
        assert_eq!(error.message(), "the upstream stream broke: boom");
        let stalled = StreamReply {
            id: "s".into(),
            first: vec![StreamEvent::Text("ab".into())],
            rest: Box::pin(futures_util::stream::pending()),
        };
        let events: Vec<_> = guard(stalled, Some(now_ms() + 50), 100).collect().await;
        assert_eq!(events.last(), Some(&Err(Broken::Deadline)));
    }
}
