//! A streamed reply held until the provider's terminal event
//! (`gateway.streamRecovery: "buffered"`): a cut, a stall or garbage on
//! the way is then a failed attempt, before anything reached the client,
//! and the run fails over from it as from any other failure.

use std::time::Duration;

use futures_util::StreamExt;

use super::capture;
use crate::model::StreamReply;
use crate::time::now_ms;
use failover_policy::ProviderError;

/// `stream` read to its end, every event in its first part; its first
/// failure, or the run's deadline (`deadline_ms`, ms since the epoch)
/// passing, is the attempt's. Past `max_bytes` of content it holds no
/// more: the rest streams on as it comes.
pub(super) async fn hold(
    mut stream: StreamReply,
    provider: &str,
    deadline_ms: Option<u64>,
    max_bytes: u64,
) -> Result<StreamReply, ProviderError> {
    let mut held: u64 = stream.first.iter().map(|e| e.content_bytes()).sum();
    while held <= max_bytes {
        let next = match deadline_ms {
            None => stream.rest.next().await,
            Some(deadline) => {
                let left = Duration::from_millis(deadline.saturating_sub(now_ms()));
                tokio::time::timeout(left, stream.rest.next())
                    .await
                    .map_err(|_| capture::stream_deadline_error(provider))?
            }
        };
        match next {
            Some(Ok(event)) => {
                held = held.saturating_add(event.content_bytes());
                stream.first.push(event);
            }
            Some(Err(error)) => return Err(error),
            None => {
                stream.rest = Box::pin(futures_util::stream::empty());
                return Ok(stream);
            }
        }
    }
    Ok(stream)
}
