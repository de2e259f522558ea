//! hyper answers a request it cannot parse itself, below the router: 400 for a malformed
//! request line or header, 431 for headers over the limit, 414 for a URI too long, each with an
//! empty body. Every answer is to be JSON, so this stream, between hyper and the socket, writes
//! such an answer out as the router would: a JSON body saying what was wrong, its content type,
//! `nosniff`. hyper closes the connection after it.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use axum::http::StatusCode;
use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A connection's stream whose hyper-made error answers are rewritten as JSON.
#[derive(Debug)]
pub struct JsonParseErrors<T> {
    inner: T,
    /// The rewritten answer, and how much of it is written: it goes out before anything else.
    out: Vec<u8>,
    at: usize,
    /// The most bytes of headers a request may have (hyper's buffer), for the 431's message.
    header_limit: usize,
}

impl<T> JsonParseErrors<T> {
    pub fn new(inner: T, header_limit: usize) -> Self {
        JsonParseErrors {
            inner,
            out: Vec::new(),
            at: 0,
            header_limit,
        }
    }
}

impl<T: AsyncWrite + Unpin> JsonParseErrors<T> {
    /// Writes what is left of a rewritten answer.
    fn poll_out(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.at < self.out.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.out[self.at..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.at += n;
        }
        Poll::Ready(Ok(()))
    }

    /// Takes `buf` in place of the inner stream when it is one of hyper's own answers.
    fn rewrite(&mut self, cx: &mut Context<'_>, buf: &[u8]) -> Option<Poll<io::Result<usize>>> {
        let answer = rewritten(buf, self.header_limit)?;
        self.out = answer;
        self.at = 0;
        // What the socket does not take now goes out at the next write, flush or shutdown.
        Some(match self.poll_out(cx) {
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            _ => Poll::Ready(Ok(buf.len())),
        })
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for JsonParseErrors<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for JsonParseErrors<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_out(cx))?;
        if let Some(done) = this.rewrite(cx, buf) {
            return done;
        }
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_out(cx))?;
        // hyper's answer is a head alone: one buffer.
        let mut filled = bufs.iter().filter(|b| !b.is_empty());
        if let (Some(only), None) = (filled.next(), filled.next())
            && let Some(done) = this.rewrite(cx, only)
        {
            return done;
        }
        Pin::new(&mut this.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_out(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_out(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

/// hyper's own answer as JSON, when `buf` is one: a whole head with an error status,
/// `content-length: 0` and none of the headers every answer of the router has (its content type
/// and `nosniff`). Anything else (an answer of the router, a part of one) is `None`.
fn rewritten(buf: &[u8], header_limit: usize) -> Option<Vec<u8>> {
    let head = std::str::from_utf8(buf).ok()?.strip_suffix("\r\n\r\n")?;
    let mut lines = head.split("\r\n");
    let mut status_line = lines.next()?.splitn(3, ' ');
    let version = status_line.next().filter(|v| v.starts_with("HTTP/1."))?;
    let status = StatusCode::from_bytes(status_line.next()?.as_bytes()).ok()?;
    if !(status.is_client_error() || status.is_server_error()) {
        return None;
    }
    let mut empty = false;
    for line in lines {
        let (name, value) = line.split_once(':')?;
        let name = name.trim();
        if name.eq_ignore_ascii_case("content-type")
            || name.eq_ignore_ascii_case("x-content-type-options")
        {
            return None;
        }
        if name.eq_ignore_ascii_case("content-length") {
            empty = value.trim() == "0";
        }
    }
    if !empty {
        return None;
    }
    let why = match status {
        StatusCode::BAD_REQUEST => {
            "the request could not be read: its request line or a header is malformed".to_string()
        }
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => format!(
            "the request's headers are too large: at most {header_limit} bytes and 100 headers"
        ),
        StatusCode::URI_TOO_LONG => "the request's URI is too long".to_string(),
        other => other.canonical_reason().unwrap_or("error").to_string(),
    };
    let body = json!({ "error": why }).to_string();
    Some(
        format!(
            "{version} {} {}\r\nContent-Type: application/json\r\nX-Content-Type-Options: \
             nosniff\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            status.as_str(),
            status.canonical_reason().unwrap_or(""),
            body.len()
        )
        .into_bytes(),
    )
}
