//! The HTTP/1 server under the gateway's routes, with the limits a real
//! server keeps ([`ServerLimits`]):
//!
//! - a connection that has not sent a whole request head within the
//!   header-read timeout (counted from accept, or from the first byte of a
//!   later request) is closed: slowloris clients hold nothing for long (the
//!   watchdog wakes at deadlines, not per request, so a head that starts
//!   between two of its looks is cut within twice the timeout at worst);
//! - a kept-alive connection idle past the idle timeout is closed;
//! - at most `max_connections` are open; at the cap the connection idle the
//!   longest is closed to make room, so a new client — a health check —
//!   still gets in while idle sockets pile up;
//! - on shutdown, accepting stops, idle connections close, and requests in
//!   flight (streams included) finish before [`serve`] returns.
//!
//! A connection's clock only runs while no request is in flight: a request
//! is bounded by the run's deadline, not by these timeouts.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::Request;
use axum::response::Response;
use axum::Router;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tower::Service;

use super::alarm::Alarm;
use crate::config::gateway::ServerLimits;

/// How long a new connection waits at the cap for an evicted idle one to
/// free its slot before it is turned away.
const CAP_WAIT: Duration = Duration::from_secs(1);

/// After an accept error for want of file descriptors or memory, a pause
/// before the next accept (else the loop spins on the same error).
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(50);

/// An answer being made.
pub(crate) type Answering = Pin<Box<dyn Future<Output = Response> + Send>>;

/// What a server answers every request it reads with.
pub trait Answer: Send + Sync + 'static {
    /// The answer to `request`.
    fn answer(&self, request: Request) -> Answering;
}

impl Answer for Router {
    fn answer(&self, request: Request) -> Answering {
        let mut router = self.clone();
        Box::pin(async move {
            match router.call(request).await {
                Ok(response) => response,
                Err(never) => match never {},
            }
        })
    }
}

/// Serves `answers` on `listener` within `limits` until `shutdown`
/// resolves, then drains (see the module docs).
pub async fn serve(
    listener: TcpListener,
    answers: impl Answer,
    limits: ServerLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let answers: Arc<dyn Answer> = Arc::new(answers);
    let cap = limits.max_connections.clamp(1, Semaphore::MAX_PERMITS);
    let permits = Arc::new(Semaphore::new(cap));
    let registry = Arc::new(Registry::default());
    // Drains the connections when this future ends, or is dropped before
    // it does (a server task aborted): none is left serving without it.
    let drain = DrainOnDrop(registry.clone());
    let epoch = Instant::now();
    let mut shutdown = pin!(shutdown);
    let mut next_id = 0u64;
    loop {
        let stream = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    if is_resource_error(&error) {
                        tracing::warn!(%error, "cannot accept a connection: closing an idle one");
                        registry.evict_one();
                        tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                    }
                    continue;
                }
            },
        };
        let permit = match permits.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                registry.evict_one();
                match tokio::time::timeout(CAP_WAIT, permits.clone().acquire_owned()).await {
                    Ok(Ok(permit)) => permit,
                    _ => {
                        tracing::warn!(cap, "connection cap reached with none idle: refused one");
                        continue;
                    }
                }
            }
        };
        // Small SSE writes go out at once.
        let _ = stream.set_nodelay(true);
        next_id += 1;
        let state = Arc::new(ConnState::new(epoch));
        registry.insert(next_id, state.clone());
        let (answers, registry) = (answers.clone(), registry.clone());
        let id = next_id;
        tokio::spawn(async move {
            connection(stream, answers, state, limits).await;
            registry.remove(id);
            drop(permit);
        });
    }
    drop(listener);
    // Every connection is in the registry: each is added before it starts.
    drop(drain);
    // Every connection holds a permit until it ends.
    let all = u32::try_from(cap).unwrap_or(u32::MAX);
    let _ = permits.acquire_many(all).await;
    Ok(())
}

fn is_resource_error(error: &std::io::Error) -> bool {
    // EMFILE, ENFILE, ENOBUFS, ENOMEM: out of descriptors or buffers.
    matches!(error.raw_os_error(), Some(24 | 23 | 105 | 12))
}

/// One connection, watched.
async fn connection(
    stream: TcpStream,
    answers: Arc<dyn Answer>,
    state: Arc<ConnState>,
    limits: ServerLimits,
) {
    let io = TokioIo::new(Watched {
        stream,
        state: state.clone(),
    });
    let service = {
        let state = state.clone();
        hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            let busy = state.begin();
            let request = request.map(Body::new);
            let answering = answers.answer(request);
            async move {
                let response = answering.await;
                Ok::<_, Infallible>(response.map(|body| Body::new(Tracked { body, _busy: busy })))
            }
        })
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    // The header timeout is this module's (it also spans keep-alive waits).
    builder.keep_alive(true).header_read_timeout(None);
    let mut conn = pin!(builder.serve_connection(io, service));
    let mut closing = false;
    // The watchdog wakes at deadlines only, never per request: requests
    // move `idle_since` without telling it, and it re-reads the state when
    // it wakes. While a connection is busy or idle it looks again at least
    // this often, so a head that starts meanwhile is cut within twice the
    // header-read timeout at worst.
    let every = limits.header_read_timeout.min(limits.idle_timeout);
    let mut timer = pin!(tokio::time::sleep(every));
    // The timer rings the alarm, not the task: it is polled only when the
    // alarm rang (see `super::alarm`).
    let alarm = Waker::from(state.alarm.clone());
    std::future::poll_fn(|cx| loop {
        if let Poll::Ready(result) = conn.as_mut().poll(cx) {
            if let Err(error) = result {
                tracing::debug!(%error, "client connection ended with an error");
            }
            return Poll::Ready(());
        }
        if !state.alarm.rang(cx.waker()) {
            return Poll::Pending;
        }
        if state.evicted.load(Ordering::Acquire) {
            if state.busy.load(Ordering::Acquire) == 0 {
                return Poll::Ready(());
            }
            // Busy after all: it may be asked again once idle.
            state.evicted.store(false, Ordering::Release);
        }
        let mut by_alarm = Context::from_waker(&alarm);
        while timer.as_mut().poll(&mut by_alarm).is_ready() {
            let now = Instant::now();
            match state.deadline(&limits) {
                // No request in flight: dropping the connection closes it.
                Some(deadline) if deadline <= now => return Poll::Ready(()),
                Some(deadline) => timer.as_mut().reset(deadline.min(now + every)),
                None => timer.as_mut().reset(now + every),
            }
        }
        if closing || !state.draining.load(Ordering::Acquire) {
            return Poll::Pending;
        }
        // Draining: the connection is polled again to act on it.
        conn.as_mut().graceful_shutdown();
        closing = true;
    })
    .await;
}

/// What the watchdog of one connection knows.
struct ConnState {
    epoch: Instant,
    /// Requests whose response is not yet fully sent.
    busy: AtomicUsize,
    /// When the connection last became idle (accept counts), ms since `epoch`.
    idle_since: AtomicU64,
    /// When the first byte of the next request head arrived (ms since
    /// `epoch`, plus one; 0 while none has).
    head_started: AtomicU64,
    /// Whether a request has ever been answered (then an idle wait is a
    /// keep-alive wait).
    served: AtomicU64,
    /// Asked to close if idle (the cap needs room).
    evicted: std::sync::atomic::AtomicBool,
    /// Asked to finish its request in flight and close (shutdown).
    draining: std::sync::atomic::AtomicBool,
    /// Rung when one of the above is asked, and by the watchdog's timer.
    alarm: Arc<Alarm>,
}

impl ConnState {
    fn new(epoch: Instant) -> Self {
        let state = ConnState {
            epoch,
            busy: AtomicUsize::new(0),
            idle_since: AtomicU64::new(0),
            head_started: AtomicU64::new(0),
            served: AtomicU64::new(0),
            evicted: std::sync::atomic::AtomicBool::new(false),
            draining: std::sync::atomic::AtomicBool::new(false),
            alarm: Alarm::new(),
        };
        state.idle_since.store(state.now_ms(), Ordering::Release);
        state
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn at(&self, ms: u64) -> Instant {
        self.epoch + Duration::from_millis(ms)
    }

    /// A request head was read: the connection is busy until the returned
    /// guard drops (its response sent, or abandoned).
    fn begin(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::AcqRel);
        self.head_started.store(0, Ordering::Release);
        Busy(self.clone())
    }

    /// Bytes arrived: the first of a head starts its timeout.
    fn read_some(&self) {
        if self.busy.load(Ordering::Acquire) == 0 && self.head_started.load(Ordering::Acquire) == 0
        {
            let _ = self.head_started.compare_exchange(
                0,
                self.now_ms() + 1,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
        }
    }

    /// When the connection is to close if nothing changes; `None` while a
    /// request is in flight.
    fn deadline(&self, limits: &ServerLimits) -> Option<Instant> {
        if self.busy.load(Ordering::Acquire) > 0 {
            return None;
        }
        let head = self.head_started.load(Ordering::Acquire);
        if head > 0 {
            return Some(self.at(head - 1) + limits.header_read_timeout);
        }
        let idle = self.at(self.idle_since.load(Ordering::Acquire));
        Some(if self.served.load(Ordering::Acquire) > 0 {
            idle + limits.idle_timeout
        } else {
            idle + limits.header_read_timeout
        })
    }

    /// When it became idle, if it is.
    fn idle_since(&self) -> Option<u64> {
        (self.busy.load(Ordering::Acquire) == 0 && self.head_started.load(Ordering::Acquire) == 0)
            .then(|| self.idle_since.load(Ordering::Acquire))
    }
}

/// A request in flight on a connection.
struct Busy(Arc<ConnState>);

impl Drop for Busy {
    fn drop(&mut self) {
        let state = &self.0;
        state.idle_since.store(state.now_ms(), Ordering::Release);
        state.served.store(1, Ordering::Release);
        state.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A response body that keeps its connection busy until it is done.
struct Tracked {
    body: Body,
    _busy: Busy,
}

impl HttpBody for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// The socket, telling its connection's watchdog when bytes arrive.
struct Watched {
    stream: TcpStream,
    state: Arc<ConnState>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.state.read_some();
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

/// Asks every open connection to drain when dropped.
struct DrainOnDrop(Arc<Registry>);

impl Drop for DrainOnDrop {
    fn drop(&mut self) {
        self.0.drain_all();
    }
}

/// The open connections, for eviction at the cap.
#[derive(Default)]
struct Registry {
    open: Mutex<HashMap<u64, Arc<ConnState>>>,
}

impl Registry {
    fn open(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<ConnState>>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn insert(&self, id: u64, state: Arc<ConnState>) {
        self.open().insert(id, state);
    }

    fn remove(&self, id: u64) {
        self.open().remove(&id);
    }

    /// Asks the connection idle the longest to close.
    fn evict_one(&self) {
        let open = self.open();
        let oldest = open
            .values()
            .filter(|state| !state.evicted.load(Ordering::Acquire))
            .filter_map(|state| Some((state.idle_since()?, state)))
            .min_by_key(|(since, _)| *since);
        if let Some((_, state)) = oldest {
            state.evicted.store(true, Ordering::Release);
            state.alarm.ring();
        }
    }

    /// Asks every open connection to finish its request in flight and close.
    fn drain_all(&self) {
        for state in self.open().values() {
            state.draining.store(true, Ordering::Release);
            state.alarm.ring();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use axum::response::IntoResponse;

    /// Answers each request with its path and how many came before it.
    #[derive(Default)]
    struct Counting(AtomicU64);

    impl Answer for Counting {
        fn answer(&self, request: Request) -> Answering {
            let before = self.0.fetch_add(1, Ordering::Relaxed);
            let text = format!("{} {before}", request.uri().path());
            Box::pin(async move { text.into_response() })
        }
    }

    #[tokio::test]
    async fn every_request_is_answered_by_the_answer_in_turn() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(
            listener,
            Counting::default(),
            ServerLimits::default(),
            async {
                let _ = stopped.await;
            },
        ));
        let client = reqwest::Client::new();
        let text = |path: &'static str| {
            let request = client.get(format!("{base}{path}"));
            async move { request.send().await.unwrap().text().await.unwrap() }
        };
        assert_eq!(text("/a").await, "/a 0");
        // Over the same kept-alive connection, in turn.
        assert_eq!(text("/b").await, "/b 1");
        assert_eq!(text("/a").await, "/a 2");
        drop(client);
        stop.send(()).unwrap();
        server.await.unwrap().unwrap();
    }
}
