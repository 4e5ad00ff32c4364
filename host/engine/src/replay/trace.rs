//! The trace format (JSON Lines, versioned). See the module docs of
//! [`crate::replay`] for an example.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::auth::{CredentialKind, Usage};
use crate::state::SessionEntry;
use failover_policy::ProviderError;

/// The format version this build writes; it reads this one and older.
/// Version 2 added the header's run settings and `state` lines (F-12.4);
/// version 3 `broken` lines (F-12.12).
pub(crate) const TRACE_VERSION: u32 = 3;

/// Longest trace line read: a header with thousands of profiles and
/// sessions fits; a line past this is not a trace.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// One line of a trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub(crate) enum TraceLine {
    /// The first line (`"type":"header"`).
    Header(Box<Header>),
    /// A request as it arrived (`"type":"request"`).
    Request(RequestEvent),
    /// One provider call's outcome (`"type":"outcome"`).
    Outcome(OutcomeEvent),
    /// A change another process made (`"type":"state"`).
    State(StateEvent),
    /// A served stream that broke after its first content
    /// (`"type":"broken"`).
    Broken(BrokenEvent),
}

/// The first line: what the run started from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Header {
    /// The trace format version it was written in (`TRACE_VERSION`).
    pub version: u32,
    /// The clock when recording started (ms since the epoch).
    pub clock_start: u64,
    /// The agent whose profiles and sessions these are.
    pub agent: String,
    /// The config (metadata and routing only; it never holds secrets).
    pub config: Value,
    /// The stored profiles, without secrets.
    #[serde(default)]
    pub profiles: Vec<TraceProfile>,
    /// The sessions, by id.
    #[serde(default)]
    pub sessions: BTreeMap<String, SessionEntry>,
    /// The run settings in force when the traffic was recorded, resolved
    /// (F-12.4); absent in version 1 traces, which replay with the
    /// built-in defaults and no run deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<RunSettings>,
}

/// What a recorded run was decided under beyond the config file: the
/// environment's retry-wait cap, and the config's deadlines and rotation
/// caps as they resolved then (a later default changes nothing here).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSettings {
    /// F-6.8's cap on waiting for a `Retry-After`; 0 never waits.
    pub retry_wait_cap_ms: u64,
    /// The whole-run deadline (`agents.defaults.timeoutSeconds`).
    pub run_timeout_ms: u64,
    /// `auth.cooldowns.rateLimitedProfileRotations`.
    pub rate_limited_profile_rotations: u32,
    /// `auth.cooldowns.overloadedProfileRotations`.
    pub overloaded_profile_rotations: u32,
    /// `auth.cooldowns.overloadedBackoffMs`.
    pub overloaded_backoff_ms: u64,
    /// `auth.cooldowns.shortWaitMs`; 0 when a trace does not carry it.
    #[serde(default)]
    pub short_wait_ms: u64,
    /// `agents.defaults.model.primaryProbeIntervalSeconds`, in ms.
    pub primary_probe_interval_ms: u64,
}

/// A change of routing state that another process made while the traffic
/// was recorded (F-12.4): from `at` on, the profile's state or the
/// session is what it holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StateEvent {
    /// When the change was seen (ms since the epoch).
    pub at: u64,
    /// What changed (its fields are flattened into the line).
    #[serde(flatten)]
    pub change: StateChange,
}

/// What a [`StateEvent`] changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum StateChange {
    /// A profile's routing state (`usageStats`).
    Profile {
        /// The profile id.
        profile: String,
        /// Its routing state from then on.
        usage: Usage,
    },
    /// A session entry.
    Session {
        /// The session id.
        session: String,
        /// The session's entry from then on.
        entry: SessionEntry,
    },
}

/// A stored profile without its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TraceProfile {
    /// The profile id (`provider:name`).
    pub id: String,
    /// As stored (`openai-codex` stays `openai-codex`).
    pub provider: String,
    /// The credential kind (JSON `type`).
    #[serde(rename = "type")]
    pub kind: CredentialKind,
    /// When the credential expires (ms since the epoch), if it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<u64>,
    /// Whether it is OAuth with a refresh token.
    #[serde(default)]
    pub refreshable: bool,
    /// The profile's routing state (`usageStats`).
    #[serde(default)]
    pub usage: Usage,
}

/// A request as it arrived.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestEvent {
    /// Unique within the trace; outcomes refer to it.
    pub id: u64,
    /// When it arrived (ms since the epoch).
    pub at: u64,
    /// The session it belongs to (`x-session-id`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// What was asked for: `auto`, `agent:<id>` or `provider/model`
    /// (an alias recorded as the model it stood for).
    pub model: String,
    /// A one-off chain's fallbacks after `model` (from an alias or the
    /// request's `models`), resolved when recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallbacks: Vec<String>,
    /// What of the request only the OpenAI shape can say (`field \`n\`
    /// above 1` …): Anthropic candidates were passed over for it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub openai_only: Vec<String>,
    /// What only the Anthropic shape can say: OpenAI-shaped candidates
    /// were passed over for it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anthropic_only: Vec<String>,
    /// Whether the client asked for a streamed reply.
    #[serde(default)]
    pub stream: bool,
    /// The session's compaction count, when the caller said.
    #[serde(default)]
    pub compaction_count: u32,
    /// The messages, only with `--record-content`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
}

/// One provider call of a request and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutcomeEvent {
    /// The id of the request it belongs to.
    pub request: u64,
    /// When the call started.
    pub at: u64,
    /// Aliases resolved (`openai`).
    pub provider: String,
    /// `provider/model`.
    pub model: String,
    /// The profile that made the call.
    pub profile: String,
    /// How long the call took (ms); replay moves its clock by this much.
    #[serde(default)]
    pub latency_ms: u64,
    /// The failure as captured (status, headers, body preview, transport
    /// code); absent when the call succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    /// The call ran to its attempt deadline without an answer (F-12.3).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hung: bool,
    /// The reply text, only with `--record-content`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

impl OutcomeEvent {
    /// The recorded failure, if the call failed.
    pub fn failure(&self) -> Option<Result<ProviderError, failover_policy::InputError>> {
        self.error.as_ref().map(ProviderError::from_json)
    }
}

/// A served stream that ended before its terminal event, after its first
/// content reached the client (F-12.12): the provider broke it (`error`: a
/// failure of the call its `outcome` line answered), or this side stopped
/// it (no `error`: the client left, a size bound). Written when the stream
/// ended, so after that line and maybe after other requests' lines.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokenEvent {
    /// The id of the request it belongs to.
    pub request: u64,
    /// When it broke.
    pub at: u64,
    /// Aliases resolved (`openai`).
    pub provider: String,
    /// `provider/model`.
    pub model: String,
    /// The profile that served.
    pub profile: String,
    /// The failure as captured (a cut, a stall, unreadable events, an
    /// error event, the run's deadline); absent when this side stopped it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
}

impl BrokenEvent {
    /// The recorded failure, if the provider broke the stream.
    pub fn failure(&self) -> Option<Result<ProviderError, failover_policy::InputError>> {
        self.error.as_ref().map(ProviderError::from_json)
    }
}

/// A parsed trace.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// The first line.
    pub header: Header,
    /// In file order (recording order: by start time).
    pub requests: Vec<RequestEvent>,
    /// The provider calls, in file order.
    pub outcomes: Vec<OutcomeEvent>,
    /// Changes other processes made, in file order.
    pub states: Vec<StateEvent>,
    /// Served streams that broke, in file order.
    pub broken: Vec<BrokenEvent>,
    /// Lines skipped by `--lenient`.
    pub skipped: Vec<(usize, String)>,
}

/// A trace that cannot be read; messages name the file and line.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be read.
    #[error("{}: {cause}", .path.display())]
    Io {
        /// The trace file.
        path: std::path::PathBuf,
        /// Why it could not be read (in the message, so not a `source`).
        cause: std::io::Error,
    },
    /// A line is not a valid trace line.
    #[error("{}: line {line}: {message}", .path.display())]
    Line {
        /// The trace file.
        path: std::path::PathBuf,
        /// The line (1-based).
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// The header's format version is newer than this build reads.
    #[error("{}: written by trace format version {found}; this build reads version {TRACE_VERSION} and older", .path.display())]
    Newer {
        /// The trace file.
        path: std::path::PathBuf,
        /// The version the header gives.
        found: u32,
    },
    /// No header line first (or the file is empty).
    #[error("{}: empty, or no header line first", .path.display())]
    NoHeader {
        /// The trace file.
        path: std::path::PathBuf,
    },
}

impl Trace {
    /// Reads `path`. A bad line is an error naming it — or, `lenient`,
    /// skipped and counted. A header from a newer format is always refused.
    pub fn read(path: &Path, lenient: bool) -> Result<Trace, TraceError> {
        let file = std::fs::File::open(path).map_err(|source| TraceError::Io {
            path: path.to_owned(),
            cause: source,
        })?;
        Self::parse(std::io::BufReader::new(file), path, lenient)
    }

    /// Reads a trace from `reader`; `path` names it in errors.
    pub fn parse(reader: impl BufRead, path: &Path, lenient: bool) -> Result<Trace, TraceError> {
        let mut reading = Reading::default();
        for (index, line) in reader.split(b'\n').enumerate() {
            let number = index + 1;
            let line = line.map_err(|source| TraceError::Io {
                path: path.to_owned(),
                cause: source,
            })?;
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match parse_line(&line).and_then(|parsed| reading.take(parsed)) {
                Ok(()) => {}
                Err(LineError::Newer(found)) => {
                    return Err(TraceError::Newer {
                        path: path.to_owned(),
                        found,
                    })
                }
                // Without a header nothing can be replayed, lenient or not.
                Err(LineError::Bad(message)) if lenient && reading.header.is_some() => {
                    reading.skipped.push((number, message))
                }
                Err(LineError::Bad(message)) => {
                    return Err(TraceError::Line {
                        path: path.to_owned(),
                        line: number,
                        message,
                    })
                }
            }
        }
        let header = reading.header.ok_or_else(|| TraceError::NoHeader {
            path: path.to_owned(),
        })?;
        Ok(Trace {
            header,
            requests: reading.requests,
            outcomes: reading.outcomes,
            states: reading.states,
            broken: reading.broken,
            skipped: reading.skipped,
        })
    }
}

/// A trace being read, line by line.
#[derive(Default)]
struct Reading {
    header: Option<Header>,
    requests: Vec<RequestEvent>,
    outcomes: Vec<OutcomeEvent>,
    states: Vec<StateEvent>,
    broken: Vec<BrokenEvent>,
    skipped: Vec<(usize, String)>,
    ids: std::collections::HashSet<u64>,
}

impl Reading {
    /// Takes one parsed line: the header first, then requests before their
    /// outcomes, each request id once.
    fn take(&mut self, line: TraceLine) -> Result<(), LineError> {
        match (&self.header, line) {
            (None, TraceLine::Header(h)) if h.version > TRACE_VERSION => {
                Err(LineError::Newer(h.version))
            }
            (None, TraceLine::Header(h)) => {
                self.header = Some(*h);
                Ok(())
            }
            (None, _) => Err(LineError::Bad("the first line must be the header".into())),
            (Some(_), TraceLine::Header(_)) => Err(LineError::Bad("a second header".into())),
            (Some(_), TraceLine::Request(r)) => {
                if !self.ids.insert(r.id) {
                    return Err(LineError::Bad(format!("request id {} used twice", r.id)));
                }
                self.requests.push(r);
                Ok(())
            }
            (Some(_), TraceLine::Outcome(o)) => {
                if !self.ids.contains(&o.request) {
                    return Err(LineError::Bad(format!(
                        "an outcome of request {}, which no earlier line starts",
                        o.request
                    )));
                }
                if let Some(Err(e)) = o.failure() {
                    return Err(LineError::Bad(format!("outcome error: {e}")));
                }
                self.outcomes.push(o);
                Ok(())
            }
            (Some(_), TraceLine::State(event)) => {
                self.states.push(event);
                Ok(())
            }
            (Some(_), TraceLine::Broken(b)) => {
                if !self.ids.contains(&b.request) {
                    return Err(LineError::Bad(format!(
                        "a broken stream of request {}, which no earlier line starts",
                        b.request
                    )));
                }
                if let Some(Err(e)) = b.failure() {
                    return Err(LineError::Bad(format!("broken stream error: {e}")));
                }
                self.broken.push(b);
                Ok(())
            }
        }
    }
}

/// Why a line was not taken.
enum LineError {
    /// Not a trace line, or one that does not fit where it is.
    Bad(String),
    /// A header of a newer format: never skipped.
    Newer(u32),
}

fn parse_line(line: &[u8]) -> Result<TraceLine, LineError> {
    if line.len() > MAX_LINE_BYTES {
        return Err(LineError::Bad(format!(
            "longer than {MAX_LINE_BYTES} bytes"
        )));
    }
    let text = std::str::from_utf8(line).map_err(|_| LineError::Bad("not UTF-8".to_owned()))?;
    serde_json::from_str(text).map_err(|e| {
        LineError::Bad(if e.is_eof() {
            format!("truncated: {e}")
        } else {
            e.to_string()
        })
    })
}

#[cfg(test)]
#[path = "trace_tests.rs"]
mod tests;
