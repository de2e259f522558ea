//! The HTTP routes: `POST /reports`, `GET /summary`, `GET /export`, `GET /health`; and what
//! every answer gets: a JSON body and content type, `X-Content-Type-Options: nosniff`, the
//! body and request timeouts, and (all but `/health`) the rate limit, which counts a request
//! before anything else answers it (a 413 for a declared length over the limit included).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;
use tokio::sync::Mutex;
use tower_http::cors::CorsLayer;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::timeout::{RequestBodyTimeoutLayer, TimeoutLayer};

use kiln_fleet::Report;
use kiln_fleet::case_models::CaseModels;

use crate::config::Config;
use crate::db::{Database, Db, Stored};
use crate::error::{Result, ServerError};
use crate::export::Exports;
use crate::health::Health;
use crate::limit::RateLimit;
use crate::proxy::Proxies;
use crate::sender::Senders;
use crate::summary::Summary;

pub struct AppState {
    /// The one writer: a request waits for it without holding a thread.
    writer: Arc<Mutex<Db>>,
    limit: RateLimit,
    senders: Senders,
    health: Arc<Health>,
    summary: Arc<Summary>,
    exports: Arc<Exports>,
    /// The curated reports' cases: a report's result must name its case's family and bucket.
    cases: CaseModels,
    max_body: usize,
    proxies: Proxies,
}

pub fn router(
    config: &Config,
    db: Db,
    database: Database,
    health: Arc<Health>,
    summary: Arc<Summary>,
) -> Result<Router> {
    let senders = Senders::new(db.salt().to_string());
    let writer = Arc::new(Mutex::new(db));
    // Rows an earlier server stored get their digests, behind the writer's new reports.
    crate::db::spawn_digest_fill(writer.clone());
    let curated = kiln_fleet::curated::checked_in()
        .map_err(|e| ServerError::Internal(format!("the curated reports: {e}")))?;
    let state = Arc::new(AppState {
        senders,
        writer,
        limit: RateLimit::new(config.rate_per_minute),
        health,
        summary,
        exports: Exports::new(
            database,
            config.export_page_reports,
            config.export_build_ms_per_minute,
            config.export_in_flight,
        ),
        cases: CaseModels::from_curated(&curated),
        max_body: config.max_body_bytes,
        proxies: config.proxies()?,
    });
    let origin = HeaderValue::from_str(&config.allowed_origin)
        .map_err(|e| ServerError::Config(format!("allowed_origin: {e}")))?;
    let cors = CorsLayer::new()
        .allow_origin(origin)
        .allow_methods([Method::GET, Method::POST])
        .allow_headers([
            header::CONTENT_TYPE,
            "x-kiln-consent"
                .parse()
                .map_err(|_| ServerError::Internal("header name".into()))?,
        ]);
    Ok(Router::new()
        .route("/reports", post(post_report))
        .route("/summary", get(get_summary))
        .route("/export", get(export))
        .route("/health", get(get_health))
        // A declared length over the limit is refused before any of the body is read, so the
        // client hears 413 at once; a body without a length is cut off at the limit.
        .layer(middleware::from_fn_with_state(
            config.max_body_bytes,
            declared_length,
        ))
        .layer(DefaultBodyLimit::max(config.max_body_bytes))
        // Outside the body limit: a request refused for its size costs its address a token, as
        // any other does (413s were free, and could be sent without end).
        .layer(middleware::from_fn_with_state(state.clone(), rate_limit))
        // A body that stops arriving, and a request that takes too long as a whole (a body
        // that trickles in a byte at a time), are cut off with 408.
        .layer(RequestBodyTimeoutLayer::new(config.body_timeout()))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            config.request_timeout(),
        ))
        .layer(cors)
        .layer(middleware::from_fn(json_answers))
        .layer(SetResponseHeaderLayer::overriding(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        .with_state(state))
}

/// Takes a token of the client's address for every request but `/health` (which load
/// balancers and monitors poll), or answers 429.
async fn rate_limit(
    State(state): State<Arc<AppState>>,
    ConnectInfo(addr): ConnectInfo<SocketAddr>,
    request: Request,
    next: Next,
) -> Response {
    if request.uri().path() == "/health" {
        return next.run(request).await;
    }
    let client = state.proxies.client(addr.ip(), request.headers());
    match state.limit.take(client) {
        Ok(()) => next.run(request).await,
        // The error's own answer: 429, its message as JSON, and Retry-After.
        Err(wait) => ServerError::TooMany {
            why: format!("too many requests from {client}: try again in {wait} s"),
            retry_s: wait,
        }
        .into_response(),
    }
}

async fn declared_length(State(max): State<usize>, request: Request, next: Next) -> Response {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    match declared {
        Some(n) if n > max as u64 => (
            StatusCode::PAYLOAD_TOO_LARGE,
            Json(json!({"error": format!("the body is {n} bytes, over the limit of {max}")})),
        )
            .into_response(),
        _ => next.run(request).await,
    }
}

/// Every answer is JSON: one that is not (an unknown path, a method not allowed, a timeout, a
/// CORS preflight, an extractor's refusal in plain text) gets `{"error": …}` with its text, or
/// `{}` for a success, and the JSON content type.
async fn json_answers(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 4096)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .unwrap_or_default();
    let value = if parts.status.is_success() {
        json!({})
    } else if text.is_empty() {
        json!({"error": parts.status.canonical_reason().unwrap_or("error")})
    } else {
        json!({ "error": text })
    };
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(value.to_string()))
}

/// Runs blocking work (parsing, the database) off the async threads.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ServerError::Internal(e.to_string()))?
}

async fn post_report(
    State(state): State<Arc<AppState>>,
    ConnectInfo(addr): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: std::result::Result<Bytes, BytesRejection>,
) -> Result<Response> {
    let consent = headers
        .get("x-kiln-consent")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("yes"));
    if !consent {
        return Err(ServerError::NoConsent);
    }
    // The body's own failures: over the limit, or it stopped arriving (the body timeout).
    let body = body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ServerError::TooLarge(state.max_body)
        } else {
            ServerError::BodyTimeout
        }
    })?;
    let received = body.len();
    // Bytes, not a String: a body that is not UTF-8 is a malformed report (422), not a
    // rejection of the extractor (400).
    let checker = state.clone();
    let report = blocking(move || {
        let report = Report::parse_bytes("request body", &body)
            .map_err(|e| ServerError::Invalid(e.to_string()))?;
        // A result must be its case's: a bucket of another call is a claim about that call.
        checker
            .cases
            .check_cases(&report)
            .map_err(|e| ServerError::Invalid(format!("request body: invalid report: {e}")))?;
        Ok(report)
    })
    .await?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let sender = state
        .senders
        .hash(state.proxies.client(addr.ip(), &headers));
    let mut writer = state.writer.clone().lock_owned().await;
    // The guard moves into the blocking task: the write runs, and the next waits, off the
    // async threads.
    let stored = blocking(move || {
        writer
            .store(&report, now, &sender, received)
            .map(|stored| (stored, report))
    })
    .await;
    Ok(match stored {
        Ok((Stored::New(id, count), report)) => {
            state.health.stored(count);
            state.summary.stored(id, &report);
            (
                StatusCode::CREATED,
                Json(json!({"status": "stored", "id": id})),
            )
                .into_response()
        }
        Ok((Stored::Duplicate(id), ..)) => (
            StatusCode::OK,
            Json(json!({"status": "duplicate", "id": id})),
        )
            .into_response(),
        Err(e) => {
            if e.is_database() {
                state.health.write_failed(e.to_string());
            }
            return Err(e);
        }
    })
}

/// The last summary (`crate::summary`): never computed here.
async fn get_summary(State(state): State<Arc<AppState>>) -> Response {
    let body = state.summary.current();
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        Body::from(Bytes::copy_from_slice(&body)),
    )
        .into_response()
}

/// `after`: the last id the client has.
#[derive(Debug, Deserialize)]
struct ExportQuery {
    #[serde(default)]
    after: i64,
}

/// A page of stored reports for `fleet merge --from` (`fleet/SCHEMA.md`, "The collector's
/// export"), at the cost `crate::export` allows the client's address.
async fn export(
    State(state): State<Arc<AppState>>,
    ConnectInfo(addr): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Query(q): Query<ExportQuery>,
) -> Response {
    let client = state.proxies.client(addr.ip(), &headers);
    let stored = state.health.snapshot().reports;
    state.exports.answer(client, q.after, stored).await
}

/// Reports stored and whether the database can be written, from what the writer and the probe
/// last said (`crate::health`): 200 when it can, 503 when it cannot.
async fn get_health(State(state): State<Arc<AppState>>) -> Response {
    let h = state.health.snapshot();
    let status = if h.writable {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let mut body = json!({
        "status": if h.writable { "ok" } else { "unavailable" },
        "reports": h.reports,
        "writable": h.writable,
        "exports": state.exports.stats(),
    });
    if !h.writable {
        body["why"] = json!(h.why);
    }
    (status, Json(body)).into_response()
}
