//! `gateway.*`: the limits `failover serve` keeps, each with its reason.
//!
//! ```json5
//! gateway: {
//!   headerReadTimeoutSeconds: 10,  // from connect (or first byte) to a whole request head
//!   idleTimeoutSeconds: 60,        // a kept-alive connection waiting for its next request
//!   bodyReadTimeoutSeconds: 60,    // from a request's head to its whole body
//!   maxConnections: 1024,          // open client connections; idle ones make room
//!   maxRequestBytes: 16777216,     // a chat request body
//!   maxStreamBytes: 33554432,      // the content of one streamed reply
//!   // A stream that breaks after output: "off" (the client is told),
//!   // "buffered" or "continue"; one mode, or one per route.
//!   streamRecovery: { "/v1/chat/completions": "buffered", "/v1/messages": "off" },
//! }
//! ```

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::seconds_to_ms;
use crate::state::StateError;

/// A slow client gets this long to send a request head: a real client
/// sends it in one packet; more than 10 s is a slowloris.
pub(crate) const DEFAULT_HEADER_READ_TIMEOUT_SECONDS: f64 = 10.0;
/// A kept-alive connection may wait this long for its next request:
/// clients reuse a connection within seconds; an idle socket costs a file
/// descriptor. (Longer than the 5–60 s pools of HTTP clients keep.)
pub(crate) const DEFAULT_IDLE_TIMEOUT_SECONDS: f64 = 60.0;
/// A request body must arrive within this: 16 MiB over a slow 4 Mbit/s
/// link takes about 35 s.
pub(crate) const DEFAULT_BODY_READ_TIMEOUT_SECONDS: f64 = 60.0;
/// Open client connections: well under the usual 1024…65536 file limit,
/// far above what one gateway's clients hold. At the cap the oldest idle
/// connection is closed to make room, so `/healthz` still gets in.
pub(crate) const DEFAULT_MAX_CONNECTIONS: u64 = 1024;
/// A chat request body: a 200k-token context is under a MiB of text;
/// 16 MiB leaves room for images sent as data URLs.
pub(crate) const DEFAULT_MAX_REQUEST_BYTES: u64 = 16 << 20;
/// The content of one streamed reply: the longest model outputs are a
/// few hundred KiB; past 32 MiB an upstream is looping.
pub(crate) const DEFAULT_MAX_STREAM_BYTES: u64 = 32 << 20;

/// Bodies of the routes that take none worth the name (session reset,
/// status, models): a request line's worth.
pub(crate) const SMALL_BODY_BYTES: usize = 64 << 10;

/// `gateway.*` as written; absent fields take the defaults above.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct GatewayConfig {
    /// `headerReadTimeoutSeconds`: from connect (or first byte) to a whole
    /// request head.
    pub header_read_timeout_seconds: Option<f64>,
    /// `idleTimeoutSeconds`: how long a kept-alive connection may wait for
    /// its next request.
    pub idle_timeout_seconds: Option<f64>,
    /// `bodyReadTimeoutSeconds`: from a request's head to its whole body.
    pub body_read_timeout_seconds: Option<f64>,
    /// `maxConnections`: open client connections; idle ones make room.
    pub max_connections: Option<u64>,
    /// `maxRequestBytes`: the largest chat request body.
    pub max_request_bytes: Option<u64>,
    /// `maxStreamBytes`: the largest content of one streamed reply.
    pub max_stream_bytes: Option<u64>,
    /// `streamRecovery`: what a stream that breaks after output does, for
    /// every route or per route.
    pub stream_recovery: Option<StreamRecoveryConfig>,
}

/// What a streamed reply that breaks after its first output does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StreamRecovery {
    /// The client gets the output so far and a terminal error event.
    #[default]
    Off,
    /// The reply is held until the provider's terminal event, so a break
    /// fails over like any failed attempt and the client sees nothing of
    /// it; the reply reaches the client whole, at its end.
    Buffered,
    /// The reply streams as it comes; a break restarts it on the next
    /// candidate, the client told in its protocol's shape.
    Continue,
}

/// `streamRecovery` as written: one mode, or a mode per route path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    untagged,
    expecting = "\"off\", \"buffered\" or \"continue\", or an object of those by route (\"/v1/chat/completions\", \"/v1/messages\")"
)]
pub enum StreamRecoveryConfig {
    /// The mode of every route.
    Every(StreamRecovery),
    /// A mode per route (`/v1/chat/completions`, `/v1/messages`); a route
    /// not named is `off`.
    PerRoute(std::collections::BTreeMap<String, StreamRecovery>),
}

/// The routes a stream recovery mode may be set for.
pub(crate) const STREAM_ROUTES: &[&str] = &["/v1/chat/completions", "/v1/messages"];

impl GatewayConfig {
    /// The stream recovery mode of the route at `path`.
    pub(crate) fn stream_recovery(&self, path: &str) -> StreamRecovery {
        match &self.stream_recovery {
            None => StreamRecovery::Off,
            Some(StreamRecoveryConfig::Every(mode)) => *mode,
            Some(StreamRecoveryConfig::PerRoute(modes)) => {
                modes.get(path).copied().unwrap_or_default()
            }
        }
    }
}

/// The limits in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// Time allowed for a request head.
    pub header_read_timeout: Duration,
    /// Time a kept-alive connection may wait for its next request.
    pub idle_timeout: Duration,
    /// Time allowed for a request body, after its head.
    pub body_read_timeout: Duration,
    /// Open client connections at most.
    pub max_connections: usize,
    /// The largest chat request body, in bytes.
    pub max_request_bytes: usize,
    /// The largest content of one streamed reply, in bytes.
    pub max_stream_bytes: u64,
}

impl Default for ServerLimits {
    fn default() -> Self {
        GatewayConfig::default().limits()
    }
}

/// Allowed ranges: below, ordinary clients fail; above, the limit stops
/// protecting the gateway.
const SECONDS_RANGE: (f64, f64) = (0.05, 3600.0);
const CONNECTIONS_RANGE: (u64, u64) = (8, 1_000_000);
const BYTES_RANGE: (u64, u64) = (1 << 10, 1 << 30);

impl GatewayConfig {
    /// The limits, defaults filled in.
    pub fn limits(&self) -> ServerLimits {
        let seconds = |value: Option<f64>, default: f64| {
            Duration::from_millis(seconds_to_ms(value.unwrap_or(default)))
        };
        let size = |value: Option<u64>, default: u64| value.unwrap_or(default);
        ServerLimits {
            header_read_timeout: seconds(
                self.header_read_timeout_seconds,
                DEFAULT_HEADER_READ_TIMEOUT_SECONDS,
            ),
            idle_timeout: seconds(self.idle_timeout_seconds, DEFAULT_IDLE_TIMEOUT_SECONDS),
            body_read_timeout: seconds(
                self.body_read_timeout_seconds,
                DEFAULT_BODY_READ_TIMEOUT_SECONDS,
            ),
            max_connections: usize::try_from(size(self.max_connections, DEFAULT_MAX_CONNECTIONS))
                .unwrap_or(usize::MAX),
            max_request_bytes: usize::try_from(size(
                self.max_request_bytes,
                DEFAULT_MAX_REQUEST_BYTES,
            ))
            .unwrap_or(usize::MAX),
            max_stream_bytes: size(self.max_stream_bytes, DEFAULT_MAX_STREAM_BYTES),
        }
    }

    /// Checks the ranges; errors name the file and the key.
    pub fn validate(&self, path: &Path) -> Result<(), StateError> {
        let invalid = |message: String| StateError::Invalid {
            path: path.to_owned(),
            message,
        };
        for (key, value) in [
            ("headerReadTimeoutSeconds", self.header_read_timeout_seconds),
            ("idleTimeoutSeconds", self.idle_timeout_seconds),
            ("bodyReadTimeoutSeconds", self.body_read_timeout_seconds),
        ] {
            let (low, high) = SECONDS_RANGE;
            if let Some(value) = value {
                if !(value.is_finite() && (low..=high).contains(&value)) {
                    return Err(invalid(format!(
                        "gateway.{key} must be a number of seconds from {low} to {high}, not {value}"
                    )));
                }
            }
        }
        if let Some(StreamRecoveryConfig::PerRoute(modes)) = &self.stream_recovery {
            if let Some(route) = modes.keys().find(|r| !STREAM_ROUTES.contains(&r.as_str())) {
                return Err(invalid(format!(
                    "gateway.streamRecovery: {route:?} is not a streaming route (one of {})",
                    STREAM_ROUTES.join(", ")
                )));
            }
        }
        for (key, value, (low, high)) in [
            ("maxConnections", self.max_connections, CONNECTIONS_RANGE),
            ("maxRequestBytes", self.max_request_bytes, BYTES_RANGE),
            ("maxStreamBytes", self.max_stream_bytes, BYTES_RANGE),
        ] {
            if let Some(value) = value {
                if !(low..=high).contains(&value) {
                    return Err(invalid(format!(
                        "gateway.{key} must be from {low} to {high}, not {value}"
                    )));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_ranges() {
        let limits = ServerLimits::default();
        assert_eq!(limits.header_read_timeout, Duration::from_secs(10));
        assert_eq!(limits.max_request_bytes, 16 << 20);
        let config = GatewayConfig {
            idle_timeout_seconds: Some(0.0),
            ..Default::default()
        };
        let error = config
            .validate(Path::new("f.json5"))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("f.json5") && error.contains("gateway.idleTimeoutSeconds"),
            "{error}"
        );
        let config = GatewayConfig {
            max_connections: Some(2),
            ..Default::default()
        };
        let error = config
            .validate(Path::new("f.json5"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("gateway.maxConnections"), "{error}");
    }
}
