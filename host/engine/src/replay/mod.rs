//! Replay: recorded traffic through any policy, and recording it.
//!
//! A trace is JSON Lines, versioned (`TRACE_VERSION`):
//!
//! ```json
//! {"type":"header","version":1,"clockStart":1767225600000,"agent":"main",
//!  "config":{"agents":{"defaults":{"model":{"primary":"anthropic/claude-sonnet-4","fallbacks":["openai/gpt-4o"]}}}},
//!  "profiles":[{"id":"anthropic:a","provider":"anthropic","type":"api_key","usage":{}}],
//!  "sessions":{}}
//! {"type":"request","id":1,"at":1767225600000,"session":"s1","model":"auto"}
//! {"type":"outcome","request":1,"at":1767225600000,"provider":"anthropic","model":"anthropic/claude-sonnet-4",
//!  "profile":"anthropic:a","latencyMs":120,"error":{"status":429,"headers":{"retry-after":"30"},"message":"…"}}
//! {"type":"outcome","request":1,"at":1767225600120,"provider":"openai","model":"openai/gpt-4o",
//!  "profile":"openai:a","latencyMs":900}
//! ```
//!
//! - the **header**: the config (never secrets), the stored profiles
//!   without secrets and their routing state, the sessions, the clock;
//! - **request**: id, time, session, requested model (`auto`,
//!   `agent:<id>`, `provider/model`), compaction count;
//! - **outcome**: one provider call — provider, model, profile, start time,
//!   latency, and, when it failed, the error as captured (the
//!   `failover classify` input form: status, headers, body preview,
//!   transport code) and whether it ran to the attempt deadline (`hung`).
//!   Outcomes are keyed by provider, model, profile and time (see
//!   [`provider`]);
//! - **state** (version 2): a change of a profile's routing state or of a
//!   session that another process made while recording (F-12.4), applied
//!   when the replay's clock reaches it;
//! - **broken** (version 3): a served stream that ended before its
//!   terminal event after its first content — request, time, provider,
//!   model, profile, and the error when the provider broke it (none when
//!   the client left or a size bound cut it) — written when it ended; the
//!   replay records that call's failure, or nothing, when its clock
//!   reaches that time, instead of the call's success (F-12.12).
//!
//! A version 2 header also carries the run settings the traffic was
//! decided under (retry-wait cap, run deadline, rotation caps, primary
//! probe interval); replay uses them unless a flag overrides them.
//!
//! [`replay`] runs a trace through a policy; [`compare`] compares two
//! replays or a replay and a golden output; [`record::Recorder`] writes
//! traces of real traffic.

pub mod compare;
mod decision;
mod decision_json;
pub mod provider;
pub mod record;
mod replayer;
mod result;
mod setup;
mod state_feed;
mod stream_ends;
pub mod trace;

pub use decision::Decision;
pub use provider::{Answered, Unrecorded};
pub use replayer::replay;
pub use result::ReplayError;
pub use result::{Replay, ReplayOptions};
pub use trace::{RunSettings, StateEvent, TraceError};
pub use trace::{StateChange, Trace};
