//! A fault-injecting upstream on loopback speaking the OpenAI and Anthropic
//! shapes. Each call is recorded; what it does is scripted per model (a
//! queue of behaviours, then plain success).

#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the upstream does with one call.
#[derive(Clone, Debug)]
pub enum Behaviour {
    /// A normal reply in the caller's shape.
    Reply,
    /// This status, these headers, this body.
    Status(u16, Vec<(&'static str, String)>, String),
    /// Waits, then replies normally.
    Slow(Duration),
    /// Accepts the request and resets the connection.
    Reset,
    /// Streams these text pieces; `cut` resets the connection after them
    /// instead of finishing the stream.
    Stream {
        pieces: Vec<&'static str>,
        cut: bool,
    },
    /// A raw body with status 200 and this content type.
    Raw(&'static str, String),
    /// A 200 event stream of these raw pieces (each written as it is, then
    /// a blank line), ended by `end`. `{KEY}` in a piece is the key the
    /// caller presented (an upstream that echoes it).
    Sse { pieces: Vec<String>, end: End },
}

/// How a scripted event stream ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// A clean close (FIN) right after the last piece.
    Close,
    /// A reset (RST).
    Reset,
    /// Nothing more, ever: the connection stays open and silent.
    Stall,
}

/// One call as the upstream saw it.
#[derive(Clone, Debug)]
pub struct Call {
    pub path: String,
    pub model: String,
    /// The bearer token or `x-api-key`.
    pub key: String,
    pub body: String,
}

#[derive(Default)]
struct Shared {
    script: HashMap<String, VecDeque<Behaviour>>,
    calls: Vec<Call>,
    /// Keys every call with which fails: `(status, hold)`, see
    /// [`Upstream::fail_key`].
    key_faults: HashMap<String, (u16, usize)>,
}

/// Released by the test: a token endpoint asked with a refresh token
/// containing `held` answers only after [`Upstream::release_token_endpoint`].
static TOKEN_GATE: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// The running upstream.
#[derive(Clone)]
pub struct Upstream {
    pub base: String,
    shared: Arc<Mutex<Shared>>,
    /// Calls that met a key fault so far.
    faulted: Arc<tokio::sync::watch::Sender<usize>>,
}

impl Upstream {
    pub async fn start() -> Upstream {
        Upstream::start_on("127.0.0.1:0").await.unwrap()
    }

    /// An upstream listening on `address` (`host:port`).
    pub async fn start_on(address: &str) -> std::io::Result<Upstream> {
        let listener = TcpListener::bind(address).await?;
        let base = format!("http://{}", listener.local_addr()?);
        let shared = Arc::new(Mutex::new(Shared::default()));
        let faulted = Arc::new(tokio::sync::watch::Sender::new(0));
        let upstream = Upstream {
            base,
            shared,
            faulted,
        };
        let serving = upstream.clone();
        tokio::spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let upstream = serving.clone();
                tokio::spawn(async move { upstream.handle(socket).await });
            }
        });
        Ok(upstream)
    }

    /// Queues `behaviour` for the next call of `model` (its name at the
    /// provider, without the `provider/` prefix).
    pub fn then(&self, model: &str, behaviour: Behaviour) -> &Self {
        self.shared
            .lock()
            .unwrap()
            .script
            .entry(model.into())
            .or_default()
            .push_back(behaviour);
        self
    }

    /// Every call presenting `key` fails with `status` (429: a rate limit,
    /// else a server error) until [`Upstream::heal_key`]. With `hold` above
    /// 1, each failing call waits until `hold` of them have arrived (at
    /// most 20 s), so that they are all in flight at once.
    pub fn fail_key(&self, key: &str, status: u16, hold: usize) {
        self.shared
            .lock()
            .unwrap()
            .key_faults
            .insert(key.into(), (status, hold));
    }

    /// Calls with `key` are answered normally again.
    pub fn heal_key(&self, key: &str) {
        self.shared.lock().unwrap().key_faults.remove(key);
    }

    /// How many chat calls presented `key`.
    pub fn calls_with_key(&self, key: &str) -> usize {
        self.chat_calls().iter().filter(|(_, k)| k == key).count()
    }

    /// Lets a held token request answer.
    pub fn release_token_endpoint(&self) {
        TOKEN_GATE.notify_waiters();
        TOKEN_GATE.notify_one();
    }

    pub fn calls(&self) -> Vec<Call> {
        self.shared.lock().unwrap().calls.clone()
    }

    /// `(model, key)` of every chat call, in order.
    pub fn chat_calls(&self) -> Vec<(String, String)> {
        self.calls()
            .into_iter()
            .filter(|c| !c.path.contains("oauth"))
            .map(|c| (c.model, c.key))
            .collect()
    }

    async fn handle(&self, mut socket: TcpStream) {
        let Some((head, body)) = read_request(&mut socket).await else {
            return;
        };
        let path = head.split_whitespace().nth(1).unwrap_or("").to_owned();
        let header = |name: &str| {
            head.lines()
                .find_map(|l| {
                    let (n, v) = l.split_once(':')?;
                    n.trim()
                        .eq_ignore_ascii_case(name)
                        .then(|| v.trim().to_owned())
                })
                .unwrap_or_default()
        };
        let key = header("authorization")
            .strip_prefix("Bearer ")
            .map(str::to_owned)
            .unwrap_or_else(|| header("x-api-key"));
        if path.contains("oauth") {
            return self.token_endpoint(&mut socket, path, key, body).await;
        }
        let request: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        let model = request["model"].as_str().unwrap_or("").to_owned();
        let stream = request["stream"].as_bool().unwrap_or(false);
        let anthropic = path.ends_with("/v1/messages");
        let body_text = body.clone();
        self.record(Call {
            path,
            model: model.clone(),
            key: key.clone(),
            body,
        });
        let fault = self.shared.lock().unwrap().key_faults.get(&key).copied();
        if let Some((status, hold)) = fault {
            return self.key_fault(&mut socket, status, hold).await;
        }
        let behaviour = self
            .shared
            .lock()
            .unwrap()
            .script
            .get_mut(&model)
            .and_then(VecDeque::pop_front)
            .or_else(|| crate::emulation::behaviour(&body_text, &model, anthropic))
            .unwrap_or(Behaviour::Reply);
        let text = format!("hello from {model} with {key}");
        perform(socket, behaviour, anthropic, stream, &text, &key).await
    }

    /// Answers a call of the OAuth token endpoint (recording it): fresh
    /// tokens for a refresh token containing `good-refresh` or `held` (the
    /// latter once [`Upstream::release_token_endpoint`]), else a 400 that
    /// echoes the refused token.
    async fn token_endpoint(
        &self,
        socket: &mut TcpStream,
        path: String,
        key: String,
        body: String,
    ) {
        self.record(Call {
            path,
            model: String::new(),
            key,
            body: body.clone(),
        });
        let token = body
            .split('&')
            .find_map(|pair| pair.strip_prefix("refresh_token="))
            .unwrap_or("")
            .to_owned();
        if token.contains("held") {
            TOKEN_GATE.notified().await;
        }
        let reply = if token.contains("good-refresh") || token.contains("held") {
            json!({"access_token": "fresh-access", "refresh_token": "fresh-refresh", "expires_in": 3600})
                .to_string()
        } else {
            // As some token endpoints do: the refused token, echoed.
            let refusal = json!({"error": "invalid_grant",
                                 "error_description": format!("refresh token {token} is invalid or revoked")});
            return respond(socket, 400, &[], "application/json", &refusal.to_string()).await;
        };
        respond(socket, 200, &[], "application/json", &reply).await
    }

    /// Fails a call that presented a faulted key with `status` (a rate
    /// limit for 429, else a server error), once `hold` such calls have
    /// arrived or 20 s have passed.
    async fn key_fault(&self, socket: &mut TcpStream, status: u16, hold: usize) {
        self.faulted.send_modify(|n| *n += 1);
        let mut arrived = self.faulted.subscribe();
        let all_in = arrived.wait_for(|n| *n >= hold);
        let _ = tokio::time::timeout(Duration::from_secs(20), all_in).await;
        let body = if status == 429 {
            r#"{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}"#
        } else {
            r#"{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}"#
        };
        respond(socket, status, &[], "application/json", body).await
    }

    fn record(&self, call: Call) {
        self.shared.lock().unwrap().calls.push(call);
    }
}

/// Answers a chat call as `behaviour` says, in the Anthropic shape when
/// `anthropic`, streamed when `stream` (for a plain reply); `text` is a
/// normal reply's text and `key` (the presented key) replaces `{KEY}`.
async fn perform(
    mut socket: TcpStream,
    behaviour: Behaviour,
    anthropic: bool,
    stream: bool,
    text: &str,
    key: &str,
) {
    match behaviour {
        Behaviour::Reply if stream => stream_reply(&mut socket, anthropic, &[text], false).await,
        Behaviour::Reply | Behaviour::Slow(_) => {
            if let Behaviour::Slow(delay) = behaviour {
                tokio::time::sleep(delay).await;
            }
            let reply = whole(anthropic, text);
            respond(&mut socket, 200, &[], "application/json", &reply).await
        }
        Behaviour::Status(status, headers, body) => {
            let body = body.replace("{KEY}", key);
            let headers: Vec<_> = headers
                .into_iter()
                .map(|(name, value)| (name, value.replace("{KEY}", key)))
                .collect();
            let content_type = if body.starts_with('<') {
                "text/html"
            } else {
                "application/json"
            };
            respond(&mut socket, status, &headers, content_type, &body).await
        }
        Behaviour::Sse { pieces, end } => {
            let pieces: Vec<String> = pieces.iter().map(|p| p.replace("{KEY}", key)).collect();
            sse(socket, &pieces, end).await
        }
        Behaviour::Reset => reset(socket),
        Behaviour::Stream { pieces, cut } => {
            stream_reply(&mut socket, anthropic, &pieces, cut).await
        }
        Behaviour::Raw(content_type, body) => {
            respond(&mut socket, 200, &[], content_type, &body).await
        }
    }
}

async fn read_request(socket: &mut TcpStream) -> Option<(String, String)> {
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = socket.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
        if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&data[..end]).into_owned();
            let length: usize = head
                .lines()
                .find_map(|l| {
                    let (n, v) = l.split_once(':')?;
                    n.trim()
                        .eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse().ok())?
                })
                .unwrap_or(0);
            while data.len() < end + 4 + length {
                let n = socket.read(&mut buf).await.ok()?;
                if n == 0 {
                    return None;
                }
                data.extend_from_slice(&buf[..n]);
            }
            let body = String::from_utf8_lossy(&data[end + 4..end + 4 + length]).into_owned();
            return Some((head, body));
        }
    }
}

fn whole(anthropic: bool, text: &str) -> String {
    if anthropic {
        json!({"id": "msg_1", "type": "message", "role": "assistant",
               "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
               "usage": {"input_tokens": 7, "output_tokens": 5}})
    } else {
        json!({"id": "chatcmpl-up", "object": "chat.completion",
               "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                            "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 7, "completion_tokens": 5}})
    }
    .to_string()
}

async fn respond(
    socket: &mut TcpStream,
    status: u16,
    headers: &[(&str, String)],
    content_type: &str,
    body: &str,
) {
    let mut head = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let _ = socket.write_all(head.as_bytes()).await;
    let _ = socket.write_all(body.as_bytes()).await;
    let _ = socket.shutdown().await;
}

async fn stream_reply(socket: &mut TcpStream, anthropic: bool, pieces: &[&str], cut: bool) {
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
    let _ = socket.write_all(head.as_bytes()).await;
    let mut events = Vec::new();
    if anthropic {
        events.push(json!({"type": "message_start", "message": {"id": "msg_s", "usage": {"input_tokens": 7}}}));
        for piece in pieces {
            events.push(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}));
        }
    } else {
        for piece in pieces {
            events.push(json!({"id": "chatcmpl-s", "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]}));
        }
    }
    for event in events {
        let _ = socket
            .write_all(format!("data: {event}\n\n").as_bytes())
            .await;
        let _ = socket.flush().await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    if cut {
        tokio::time::sleep(Duration::from_millis(20)).await;
        // The caller drops the socket: with linger 0 that is a reset.
        set_reset_on_close(socket);
        return;
    }
    let tail = if anthropic {
        format!(
            "data: {}\n\ndata: {}\n\n",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}}),
            json!({"type": "message_stop"})
        )
    } else {
        format!(
            "data: {}\n\ndata: [DONE]\n\n",
            json!({"id": "chatcmpl-s", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        )
    };
    let _ = socket.write_all(tail.as_bytes()).await;
    let _ = socket.shutdown().await;
}

async fn sse(mut socket: TcpStream, pieces: &[String], end: End) {
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
    let _ = socket.write_all(head.as_bytes()).await;
    for piece in pieces {
        let _ = socket.write_all(format!("{piece}\n\n").as_bytes()).await;
        let _ = socket.flush().await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    match end {
        End::Close => {
            let _ = socket.shutdown().await;
        }
        End::Reset => reset(socket),
        End::Stall => {
            // Hold the socket open until the caller gives up.
            let mut sink = [0u8; 64];
            while matches!(socket.read(&mut sink).await, Ok(n) if n > 0) {}
        }
    }
}

/// Resets the connection (RST, not FIN).
fn reset(socket: TcpStream) {
    set_reset_on_close(&socket);
    drop(socket);
}

/// Linger 0: closing sends RST. (Tokio deprecates it because a non-zero
/// linger blocks on drop; zero does not.)
fn set_reset_on_close(socket: &TcpStream) {
    #[allow(deprecated)]
    let _ = socket.set_linger(Some(Duration::ZERO));
}
