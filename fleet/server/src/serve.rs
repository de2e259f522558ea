//! The connection loop: each accepted connection passes the caps ([`Gate`]; at the total cap
//! the connection idle the longest is closed to make room), gets an idle timeout on its socket
//! (no byte moving either way: idle, or not reading the answer) and a header timeout (hyper's),
//! and is served by the router, hyper's own answers to what it cannot parse made JSON
//! ([`JsonParseErrors`]); on SIGINT or SIGTERM the listener closes, requests in flight get
//! `shutdown_deadline_s` to finish, and then the process goes, whatever a client has half sent.
//!
//! A connection serves one request: its answer says `Connection: close`, and what the client
//! sent after that request (pipelined requests) is read and dropped before the socket closes,
//! so that the close is a clean one (unread input would make it a reset, which can cost the
//! client the answer). Kept alive, hyper answered a pipelined client's requests until it read
//! the client's end of input with a request still in flight, and then closed without answering
//! it (16 of 21 were answered): an answer whose connection says it closes tells the client to
//! send the rest again; one that never comes does not.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::ConnectInfo;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use hyper::server::conn::http1;
use hyper::service::{Service, service_fn};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio_io_timeout::TimeoutStream;
use tower_http::add_extension::AddExtension;

use crate::error::{Result, ServerError};
use crate::gate::{Busy, Full, Gate};
use crate::parse_errors::JsonParseErrors;
use crate::proxy::Proxies;

/// The most bytes a request's headers may take (hyper's read buffer; 431 past it): nothing the
/// API takes needs more than a few hundred bytes, a proxy's forwarding headers included.
const HEADER_BYTES: usize = 16 << 10;

/// The timeouts and caps the loop applies.
#[derive(Clone, Debug)]
pub struct Limits {
    pub header: Duration,
    pub idle: Duration,
    pub shutdown: Duration,
    pub gate: Arc<Gate>,
    /// Trusted proxies carry many clients' connections: only the total cap applies to them.
    pub proxies: Proxies,
}

/// Serves `app` on `listener` until `stop` resolves (a signal), then shuts down within the
/// deadline.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    stop: impl std::future::Future<Output = &'static str>,
) -> Result<()> {
    let graceful = GracefulShutdown::new();
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header)
        // One request per connection (the module's comment says why).
        .keep_alive(false)
        .max_buf_size(HEADER_BYTES);
    tokio::pin!(stop);
    let signal = loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // Out of descriptors, most likely: wait for connections to close
                        // rather than spin.
                        log::warn!("accept: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let proxy = limits.proxies.contains(peer.ip());
                let (pass, closed) = match limits.gate.admit(peer.ip(), proxy) {
                    Ok(admitted) => admitted,
                    Err(full) => {
                        refuse(&stream, full);
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let mut io = TimeoutStream::new(stream);
                io.set_read_timeout(Some(limits.idle));
                io.set_write_timeout(Some(limits.idle));
                let io = JsonParseErrors::new(Drained(Box::pin(io)), HEADER_BYTES);
                let router =
                    TowerToHyperService::new(AddExtension::new(app.clone(), ConnectInfo(peer)));
                let tracker = pass.tracker();
                // A request is in flight from the router's call to its answer's last byte: the
                // connection is not closed to make room meanwhile.
                let service = service_fn(move |request| {
                    let busy = tracker.busy();
                    let answer = router.call(request);
                    async move {
                        let response = answer.await?;
                        let tracked = response.map(|body| Body::new(Tracked { body, _busy: busy }));
                        Ok::<_, Infallible>(tracked)
                    }
                });
                let conn = graceful.watch(builder.serve_connection(TokioIo::new(io), service));
                tokio::spawn(async move {
                    tokio::select! {
                        done = conn => {
                            if let Err(e) = done {
                                log::debug!("connection from {peer}: {e}");
                            }
                        }
                        // Dropping the connection closes its socket.
                        _ = closed => log::debug!("connection from {peer}: closed to make room"),
                    }
                    drop(pass);
                });
            }
            signal = &mut stop => break signal,
        }
    };
    drop(listener);
    log::info!(
        "{signal}: stopping; requests in flight have {:?}",
        limits.shutdown
    );
    tokio::select! {
        () = graceful.shutdown() => log::info!("every connection closed"),
        () = tokio::time::sleep(limits.shutdown) => {
            log::warn!("the shutdown deadline passed: closing the connections left");
        }
    }
    Ok(())
}

/// The most bytes a closing connection reads and drops: pipelined requests, not an upload.
const DRAIN_BYTES: usize = 1 << 20;

/// A connection's socket, which reads what the client sent and the server did not read (the
/// requests it pipelined) before it closes, without waiting: closed with unread input, the
/// socket would reset the connection rather than end it.
struct Drained(Pin<Box<TimeoutStream<tokio::net::TcpStream>>>);

impl Drop for Drained {
    fn drop(&mut self) {
        let stream = self.0.as_ref().get_ref().get_ref();
        let mut buf = [0u8; 8192];
        let mut dropped = 0;
        // Only what has arrived: `try_read` never waits (WouldBlock ends it, as do the end of
        // input and an error).
        while dropped < DRAIN_BYTES {
            match stream.try_read(&mut buf) {
                Ok(n) if n > 0 => dropped += n,
                _ => break,
            }
        }
    }
}

impl AsyncRead for Drained {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        self.0.as_mut().poll_read(cx, buf)
    }
}

impl AsyncWrite for Drained {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.0.as_mut().poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        self.0.as_mut().poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.0.as_mut().poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.0.as_mut().poll_shutdown(cx)
    }
}

/// An answer's body, holding its request's [`Busy`] until hyper has taken the last of it.
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
    ) -> Poll<Option<std::result::Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Answers a connection past a cap and closes it: one write that does not wait (a client that
/// does not read it loses the answer, not the server a task).
fn refuse(stream: &tokio::net::TcpStream, full: Full) {
    let (status, why) = match full {
        Full::Total => ("503 Service Unavailable", "too many open connections"),
        Full::Address => (
            "429 Too Many Requests",
            "too many open connections from this address",
        ),
    };
    let body = format!("{{\"error\":\"{why}\"}}");
    let answer = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nX-Content-Type-Options: nosniff\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.try_write(answer.as_bytes());
}

/// Resolves with the signal's name on SIGINT or SIGTERM. The handlers are installed before
/// this returns, so a signal sent once the server says it listens is never the default
/// action's (which for SIGTERM would end the process without a shutdown).
pub fn signals() -> Result<impl std::future::Future<Output = &'static str>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut int = signal(SignalKind::interrupt())
            .map_err(|e| ServerError::Internal(format!("SIGINT handler: {e}")))?;
        let mut term = signal(SignalKind::terminate())
            .map_err(|e| ServerError::Internal(format!("SIGTERM handler: {e}")))?;
        Ok(async move {
            tokio::select! {
                _ = int.recv() => "SIGINT",
                _ = term.recv() => "SIGTERM",
            }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            match tokio::signal::ctrl_c().await {
                Ok(()) => "Ctrl-C",
                Err(e) => {
                    log::error!("Ctrl-C handler: {e}");
                    std::future::pending().await
                }
            }
        })
    }
}
