//! Recording real traffic (`failover serve --record DIR`) as a trace that
//! replays faithfully: the header (config, the run settings, profiles
//! without secrets, their state, the sessions, the clock), then each
//! request and each provider call's outcome as they happen, and every
//! change of routing state another process makes meanwhile (F-12.4: the
//! recorder watches the default agent's stores). Prompt and reply text are
//! written only with `--record-content`. [`RecordingProvider`] records the
//! calls of any provider it wraps.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::trace::{
    BrokenEvent, Header, OutcomeEvent, RequestEvent, RunSettings, StateChange, StateEvent,
    TraceLine, TraceProfile, TRACE_VERSION,
};
use crate::auth::Usage;
use crate::config::Config;
use crate::runner::{CallError, Provider, Target};
use crate::state::watch::ChangeLog;
use crate::state::{files, AuthStore, SessionEntry, SessionStore, StateError, StateWatch};
use crate::time::now_ms;
use failover_policy::ProviderError;

/// Writes one trace file.
pub struct Recorder {
    path: PathBuf,
    file: Mutex<BufWriter<File>>,
    next_id: AtomicU64,
    content: bool,
    /// Routing state this process saw or wrote, per profile.
    usage: ChangeLog<Usage>,
    /// Sessions this process saw or wrote.
    sessions: ChangeLog<SessionEntry>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// The settings a run under `config` decides with, `retry_wait_cap_ms`
/// coming from the environment.
pub(crate) fn settings_for(config: &Config, retry_wait_cap_ms: u64) -> RunSettings {
    let cooldowns = &config.auth.cooldowns;
    RunSettings {
        retry_wait_cap_ms,
        run_timeout_ms: config.run_timeout_ms(),
        rate_limited_profile_rotations: cooldowns.rate_limited_profile_rotations,
        overloaded_profile_rotations: cooldowns.overloaded_profile_rotations,
        overloaded_backoff_ms: cooldowns.overloaded_backoff_ms,
        short_wait_ms: cooldowns.short_wait_ms,
        primary_probe_interval_ms: config.primary_probe_interval_ms(),
    }
}

/// The header of a recording starting now.
pub fn header_for(
    config: &Config,
    agent: &str,
    store: &AuthStore,
    sessions: &SessionStore,
    now: u64,
    retry_wait_cap_ms: u64,
) -> Result<Header, StateError> {
    let usage = store.usage()?;
    let profiles = store
        .summaries()?
        .into_iter()
        .map(|s| TraceProfile {
            usage: usage.get(&s.id).cloned().unwrap_or_default(),
            id: s.id,
            provider: s.stored_provider,
            kind: s.kind,
            expires: s.expires,
            refreshable: s.refreshable,
        })
        .collect();
    Ok(Header {
        version: TRACE_VERSION,
        clock_start: now,
        agent: agent.to_owned(),
        config: serde_json::to_value(config).unwrap_or(Value::Null),
        profiles,
        sessions: sessions.all()?,
        settings: Some(settings_for(config, retry_wait_cap_ms)),
    })
}

impl Recorder {
    /// Starts `DIR/trace-<clock>-<pid>.jsonl` (mode 0600, the directory
    /// 0700) with `header`; `content` keeps prompts and replies.
    pub fn start(dir: &Path, header: &Header, content: bool) -> Result<Recorder, StateError> {
        files::create_private_dir(dir)?;
        let path = dir.join(format!(
            "trace-{}-{}.jsonl",
            header.clock_start,
            std::process::id()
        ));
        let mut options = std::fs::OpenOptions::new();
        options.create_new(true).write(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(&path).map_err(|e| StateError::io(&path, e))?;
        let recorder = Recorder {
            path,
            file: Mutex::new(BufWriter::new(file)),
            next_id: AtomicU64::new(1),
            content,
            usage: ChangeLog::starting_from(
                header
                    .profiles
                    .iter()
                    .map(|p| (p.id.clone(), p.usage.clone())),
            ),
            sessions: ChangeLog::starting_from(header.sessions.clone()),
        };
        recorder.write(&TraceLine::Header(Box::new(header.clone())));
        Ok(recorder)
    }

    /// The trace file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether prompts and replies are kept.
    pub(crate) fn keeps_content(&self) -> bool {
        self.content
    }

    /// Records a request; returns its id for its outcomes.
    pub fn request(&self, mut event: RequestEvent) -> u64 {
        event.id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if !self.content {
            event.content = None;
        }
        let id = event.id;
        self.write(&TraceLine::Request(event));
        id
    }

    /// Records a provider call's outcome.
    pub fn outcome(&self, mut event: OutcomeEvent) {
        if !self.content {
            event.content = None;
        }
        self.write(&TraceLine::Outcome(event));
    }

    /// Records that `target`'s served stream for request `request` ended
    /// before its terminal event, broken by the provider with `error` or
    /// stopped by this side (`None`): the replay derives what the live
    /// gateway recorded from it (a `state` line would overrule another
    /// module's decision in `--against`).
    pub fn broken(&self, request: u64, target: &Target, error: Option<&ProviderError>) {
        let error = error.map(|error| {
            // An unreadable event's preview is reply text.
            if !self.content && crate::upstreams::openai::is_garbled(error) {
                let garbled = crate::upstreams::openai::garbled_event("");
                garbled.with_provider(target.provider.clone()).to_json()
            } else {
                error.to_json()
            }
        });
        self.write(&TraceLine::Broken(BrokenEvent {
            request,
            at: now_ms(),
            provider: target.provider.clone(),
            model: target.model.clone(),
            profile: target.profile.clone(),
            error,
        }));
    }

    fn state(&self, change: StateChange) {
        self.write(&TraceLine::State(StateEvent {
            at: now_ms(),
            change,
        }));
    }

    /// One line, flushed: a crash loses at most the line being written, and
    /// a reader skips a torn last line with `--lenient`.
    fn write(&self, line: &TraceLine) {
        let Ok(text) = serde_json::to_string(line) else {
            return;
        };
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        let written = writeln!(file, "{text}").and_then(|()| file.flush());
        if let Err(error) = written {
            tracing::warn!(path = %self.path.display(), %error, "cannot write the trace");
        }
    }
}

/// Changes of routing state that this process did not make are recorded
/// as `state` lines, so replay sees what the live gateway saw.
impl StateWatch for Recorder {
    fn usage_seen(&self, profile: &str, usage: &Usage) {
        if self.usage.seen(profile, usage) {
            self.state(StateChange::Profile {
                profile: profile.to_owned(),
                usage: usage.clone(),
            });
        }
    }

    fn usage_written(&self, profile: &str, usage: &Usage) {
        self.usage.written(profile, usage);
    }

    fn session_seen(&self, session: &str, entry: &SessionEntry) {
        if self.sessions.seen(session, entry) {
            self.state(StateChange::Session {
                session: session.to_owned(),
                entry: entry.clone(),
            });
        }
    }

    fn session_written(&self, session: &str, entry: &SessionEntry) {
        self.sessions.written(session, entry);
    }
}

/// A request whose calls can be recorded: its id in the trace, if it is
/// being recorded.
pub(crate) trait Recordable {
    /// The request's id in the trace.
    fn record_id(&self) -> Option<u64>;
}

/// A reply whose text a recording with content keeps.
pub(crate) trait RecordedContent {
    /// The text of a whole reply; `None` for a stream (its text arrives
    /// later).
    fn content(&self) -> Option<String>;
}

impl Recordable for crate::model::ChatRequest {
    fn record_id(&self) -> Option<u64> {
        self.record_id
    }
}

impl RecordedContent for crate::model::ChatReply {
    fn content(&self) -> Option<String> {
        match self {
            crate::model::ChatReply::Complete(completion) => Some(completion.text.clone()),
            crate::model::ChatReply::Stream(_) => None,
        }
    }
}

/// Records every call of any provider: wraps it, and writes each call's
/// outcome — target, start, latency, the error as the provider returned it
/// (already redacted), whether it hung — for requests that are recorded.
pub struct RecordingProvider<P> {
    inner: P,
    recorder: Option<Arc<Recorder>>,
}

impl<P> RecordingProvider<P> {
    /// `inner`, recorded by `recorder` when there is one.
    pub fn new(inner: P, recorder: Option<Arc<Recorder>>) -> Self {
        RecordingProvider { inner, recorder }
    }

    /// The provider it wraps.
    pub fn inner(&self) -> &P {
        &self.inner
    }
}

impl<P> Provider for RecordingProvider<P>
where
    P: Provider,
    P::Request: Recordable,
    P::Reply: RecordedContent,
{
    type Request = P::Request;
    type Reply = P::Reply;

    fn cannot_express(&self, model: &str, request: &P::Request) -> Option<String> {
        self.inner.cannot_express(model, request)
    }

    fn completes_later(&self, reply: &P::Reply) -> bool {
        self.inner.completes_later(reply)
    }

    async fn call(&self, target: &Target, request: &P::Request) -> Result<P::Reply, CallError> {
        let at = now_ms();
        let started = std::time::Instant::now();
        let result = self.inner.call(target, request).await;
        if let (Some(recorder), Some(id)) = (&self.recorder, request.record_id()) {
            let (error, hung) = match &result {
                Ok(_) => (None, false),
                Err(CallError::Failed(e) | CallError::Aborted(e)) => (Some(e.to_json()), false),
                Err(CallError::Hung(e)) => (Some(e.to_json()), true),
                Err(CallError::LiveSwitch { model }) => (
                    Some(
                        ProviderError::message(format!("live session model switch to {model}"))
                            .to_json(),
                    ),
                    false,
                ),
            };
            let content = match &result {
                Ok(reply) if recorder.keeps_content() => reply.content(),
                _ => None,
            };
            recorder.outcome(OutcomeEvent {
                request: id,
                at,
                provider: target.provider.clone(),
                model: target.model.clone(),
                profile: target.profile.clone(),
                latency_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                error,
                hung,
                content,
            });
        }
        result
    }
}
