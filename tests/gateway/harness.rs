//! The gateway harness: `failover serve`'s router in process over a
//! temporary state directory, real HTTP providers pointed at the
//! fault-injecting upstream, and a client.

#![allow(dead_code)]

use std::sync::{Arc, OnceLock};

use failover::auth::{CredentialKind, Usage};
use failover::config::Config;
use failover::gateway::{self, ClientKeys, Gateway, GatewayOptions};
use failover::replay::record;
use failover::state::{AuthStore, SessionStore, StateDir};
use failover::Decider;
use failover::{Policy, PolicyEngine};
use serde_json::{json, Value};

use super::upstream::{Behaviour, Upstream};

pub const PRIMARY: &str = "anthropic/claude-x";
pub const FALLBACK: &str = "openai/gpt-x";

pub fn policy() -> Arc<Policy> {
    static POLICY: OnceLock<Arc<Policy>> = OnceLock::new();
    POLICY
        .get_or_init(|| {
            let engine = PolicyEngine::new().expect("engine");
            Arc::new(Policy::default_policy(&engine).expect("policy"))
        })
        .clone()
}

/// Profiles: id and key. The keys are what the upstream records.
pub const PROFILES: &[(&str, &str)] = &[
    ("anthropic:a", "ant-a"),
    ("anthropic:b", "ant-b"),
    ("openai:a", "oai-a"),
    ("openrouter:a", "or-a"),
    ("closed:a", "closed-a"),
    ("nowhere:a", "nowhere-a"),
];

pub struct Harness {
    pub up: Upstream,
    pub base: String,
    pub client: reqwest::Client,
    pub store: AuthStore,
    pub sessions: SessionStore,
    pub gateway: Arc<Gateway>,
    pub state: StateDir,
    /// The recorded trace, when recording.
    pub trace: Option<std::path::PathBuf>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    _dir: tempfile::TempDir,
}

/// The config: anthropic primary, openai fallback, every provider on the
/// fake upstream, an alias for the fallback (`gpt`) and one for the chain
/// the other way round (`openai-first`); `extra` adds `models.providers` entries (`BASE` in it
/// stands for the upstream's address), `top` top-level sections.
pub fn config_text(base: &str, extra: &str, top: &str, timeout_seconds: f64) -> String {
    format!(
        r#"{{
          auth: {{ order: {{ anthropic: ["anthropic:a", "anthropic:b"] }} }},
          agents: {{ defaults: {{ model: {{ primary: "{PRIMARY}", fallbacks: ["{FALLBACK}"] }},
                                  timeoutSeconds: {timeout_seconds} }},
                    list: [{{ id: "ops", model: "openrouter/meta/llama-x" }}] }},
          models: {{ providers: {{
            anthropic: {{ baseUrl: "{base}/anthropic", api: "anthropic-messages" }},
            openai: {{ baseUrl: "{base}/openai/v1", api: "openai-chat", timeoutSeconds: 5 }},
            openrouter: {{ baseUrl: "{base}/openrouter/api/v1", api: "openai-chat", models: ["meta/llama-x"] }},
            closed: {{ baseUrl: "http://127.0.0.1:1/v1" }},
            nowhere: {{ baseUrl: "http://no-such-host.invalid/v1" }},
            {extra}
          }},
          aliases: {{ "gpt": "{FALLBACK}", "openai-first": ["{FALLBACK}", "{PRIMARY}"] }} }},
          {top}
        }}"#
    )
}

/// What a harness starts with beyond the defaults.
#[derive(Default)]
pub struct Setup<'a> {
    /// More `models.providers` entries.
    pub providers: &'a str,
    /// More top-level config sections (`gateway: {…}`).
    pub top: &'a str,
    pub keys: ClientKeys,
    /// Record the traffic (with content or not).
    pub record: Option<bool>,
    /// Another policy than the default one.
    pub policy: Option<Arc<dyn Decider>>,
    /// The run's deadline (`agents.defaults.timeoutSeconds`); 20 s if unset.
    pub timeout_seconds: Option<f64>,
}

pub async fn start(extra: &str, keys: ClientKeys) -> Harness {
    start_with(extra, keys, None).await
}

/// Like [`start`]; `record` records the traffic (with content or not) to a
/// trace whose path is `Harness::trace`.
pub async fn start_with(extra: &str, keys: ClientKeys, record: Option<bool>) -> Harness {
    start_setup(Setup {
        providers: extra,
        keys,
        record,
        ..Setup::default()
    })
    .await
}

/// A harness with a provider `slow` (its model `slow/m` on the upstream's
/// `/slow/v1`) whose attempts end after `attempt_seconds`, one static key
/// `slow:<name>` (secret `slow-<name>`) per name of `keys`, and the run's
/// deadline `run_seconds` when given.
pub async fn start_with_slow_provider(
    attempt_seconds: u32,
    run_seconds: Option<f64>,
    keys: &[&str],
) -> Harness {
    let providers =
        format!(r#"slow: {{ baseUrl: "BASE/slow/v1", timeoutSeconds: {attempt_seconds} }},"#);
    let h = start_setup(Setup {
        providers: &providers,
        timeout_seconds: run_seconds,
        ..Setup::default()
    })
    .await;
    h.add_keys("slow", keys);
    h
}

/// A harness as `setup` says.
pub async fn start_setup(setup: Setup<'_>) -> Harness {
    let Setup {
        providers: extra,
        top,
        keys,
        record,
        policy: chosen,
        timeout_seconds,
    } = setup;
    let up = Upstream::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("failover.json5");
    let extra = extra.replace("BASE", &up.base);
    std::fs::write(
        &config_path,
        config_text(&up.base, &extra, top, timeout_seconds.unwrap_or(20.0)),
    )
    .unwrap();
    let config = Config::load(&config_path).expect("config");
    let state = StateDir::at(dir.path().join("state"));
    let paths = state.agent("main").unwrap();
    let store = AuthStore::open(paths.clone()).unwrap();
    seed_profiles(&store, &state);
    let recorder = record.map(|content| {
        let sessions = SessionStore::for_agent(&paths.dir);
        let now = failover::time::now_ms();
        let header = record::header_for(&config, "main", &store, &sessions, now, 60_000).unwrap();
        let dir = dir.path().join("traces");
        Arc::new(record::Recorder::start(&dir, &header, content).unwrap())
    });
    let trace = recorder.as_ref().map(|r| r.path().to_owned());
    let gateway = Arc::new(
        Gateway::new(
            chosen.unwrap_or_else(|| policy()),
            config,
            &state,
            GatewayOptions {
                agent: "main".into(),
                client_keys: keys,
                retry_wait_cap_ms: 60_000,
                recorder,
            },
        )
        .unwrap(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(gateway::serve(listener, gateway.clone(), async {
        let _ = rx.await;
    }));
    Harness {
        up,
        base,
        client: reqwest::Client::new(),
        store,
        sessions: SessionStore::for_agent(&paths.dir),
        gateway,
        state,
        trace,
        shutdown: Some(tx),
        server: Some(server),
        _dir: dir,
    }
}

/// Puts the [`PROFILES`] keys in the main agent's `store` and the
/// `openrouter:ops` key in the `ops` agent's store under `state`.
fn seed_profiles(store: &AuthStore, state: &StateDir) {
    store
        .update_profiles(|file| {
            for (id, key) in PROFILES {
                let provider = id.split(':').next().unwrap();
                file.put_static(id, provider, CredentialKind::ApiKey, key)?;
            }
            Ok(())
        })
        .unwrap();
    let ops = AuthStore::open(state.agent("ops").unwrap()).unwrap();
    ops.update_profiles(|file| {
        file.put_static(
            "openrouter:ops",
            "openrouter",
            CredentialKind::ApiKey,
            "or-ops",
        )
    })
    .unwrap();
}

pub struct Answer {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("{e}: {}", self.text))
    }
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).map_or("", |v| v.to_str().unwrap())
    }
    pub fn content(&self) -> String {
        self.json()["choices"][0]["message"]["content"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    }
}

impl Harness {
    /// Adds one static key `<provider>:<name>` (secret `<provider>-<name>`)
    /// per name of `names`.
    pub fn add_keys(&self, provider: &str, names: &[&str]) {
        self.store
            .update_profiles(|file| {
                for name in names {
                    let (id, secret) = (format!("{provider}:{name}"), format!("{provider}-{name}"));
                    file.put_static(&id, provider, CredentialKind::ApiKey, &secret)?;
                }
                Ok(())
            })
            .unwrap();
    }

    pub async fn chat(&self, model: &str, stream: bool, session: Option<&str>) -> Answer {
        let body = json!({"model": model, "stream": stream,
                          "messages": [{"role": "system", "content": "be brief"},
                                       {"role": "user", "content": "hi"}]});
        self.post("/v1/chat/completions", &body.to_string(), session)
            .await
    }

    /// A one-turn chat request for `model`, sent from its own task: for
    /// requests that must be in flight while the test does something else.
    pub fn spawn_chat(&self, model: &str) -> tokio::task::JoinHandle<Answer> {
        let request = self
            .client
            .post(format!("{}/v1/chat/completions", self.base))
            .header("content-type", "application/json")
            .body(
                json!({"model": model, "messages": [{"role": "user", "content": "hi"}]})
                    .to_string(),
            );
        tokio::spawn(async move { answer(request.send().await.unwrap()).await })
    }

    pub async fn post(&self, path: &str, body: &str, session: Option<&str>) -> Answer {
        let mut request = self
            .client
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .body(body.to_owned());
        if let Some(session) = session {
            request = request.header("x-session-id", session);
        }
        let response = request.send().await.unwrap();
        answer(response).await
    }

    pub async fn get(&self, path: &str) -> Answer {
        answer(
            self.client
                .get(format!("{}{path}", self.base))
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    pub fn usage(&self, id: &str) -> Usage {
        self.store
            .usage()
            .unwrap()
            .get(id)
            .cloned()
            .unwrap_or_default()
    }

    pub async fn stop(mut self) {
        let _ = self.shutdown.take().unwrap().send(());
        self.server.take().unwrap().await.unwrap().unwrap();
    }
}

pub async fn answer(response: reqwest::Response) -> Answer {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap_or_default();
    Answer {
        status,
        headers,
        text,
    }
}

pub fn calls(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(m, k)| (m.to_string(), k.to_string()))
        .collect()
}

pub fn status(code: u16, body: &str) -> Behaviour {
    Behaviour::Status(code, Vec::new(), body.to_owned())
}

/// A streamed reply as a client reads it.
#[derive(Debug, Default)]
pub struct Streamed {
    /// The text deltas joined.
    pub text: String,
    /// `[DONE]` arrived.
    pub done: bool,
    /// An error event's `error` object.
    pub error: Option<Value>,
    /// Tool calls accumulated by index, as `{id, type, function: {name,
    /// arguments}}`.
    pub tool_calls: Vec<Value>,
    pub finish: Option<String>,
    /// Every chunk, in order.
    pub chunks: Vec<Value>,
}

/// Reads an SSE body the way the OpenAI SDKs do, and as strictly: every
/// chunk is a `chat.completion.chunk` with an id, a creation time, a model
/// and indexed choices; a tool call's first delta carries its id, type and
/// function name, later ones only argument fragments at the same index.
pub fn read_stream(body: &str) -> Streamed {
    let mut streamed = Streamed::default();
    for line in body.lines() {
        let Some(data) = line.strip_prefix("data: ") else {
            assert!(line.is_empty(), "not an SSE data line: {line:?}");
            continue;
        };
        assert!(!streamed.done, "data after [DONE]: {data}");
        if data == "[DONE]" {
            streamed.done = true;
            continue;
        }
        let chunk: Value = serde_json::from_str(data).unwrap();
        if let Some(error) = chunk.get("error") {
            streamed.error = Some(error.clone());
            continue;
        }
        assert_eq!(chunk["object"], "chat.completion.chunk", "{chunk}");
        assert!(
            chunk["id"].is_string() && chunk["model"].is_string(),
            "{chunk}"
        );
        assert!(chunk["created"].is_u64(), "{chunk}");
        let choice = &chunk["choices"][0];
        assert_eq!(choice["index"], 0, "{chunk}");
        let delta = &choice["delta"];
        if let Some(piece) = delta["content"].as_str() {
            streamed.text.push_str(piece);
        }
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = call["index"]
                .as_u64()
                .expect("a tool call delta has an index") as usize;
            if index == streamed.tool_calls.len() {
                assert!(call["id"].is_string(), "a new call has an id: {call}");
                assert_eq!(call["type"], "function", "{call}");
                assert!(call["function"]["name"].is_string(), "{call}");
                streamed
                    .tool_calls
                    .push(json!({"id": call["id"], "type": "function",
                    "function": {"name": call["function"]["name"], "arguments": ""}}));
            }
            let known = streamed
                .tool_calls
                .get_mut(index)
                .unwrap_or_else(|| panic!("tool call index {index} skips one: {call}"));
            if let Some(fragment) = call["function"]["arguments"].as_str() {
                let arguments = known["function"]["arguments"].as_str().unwrap().to_owned();
                known["function"]["arguments"] = format!("{arguments}{fragment}").into();
            }
        }
        if let Some(finish) = choice["finish_reason"].as_str() {
            streamed.finish = Some(finish.to_owned());
        }
        streamed.chunks.push(chunk);
    }
    streamed
}
