//! The HTTP routes: `POST /reports`, `GET /summary`, `GET /export`, `GET /health`.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use axum::body::Bytes;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};
use tower_http::cors::CorsLayer;

use kiln::Registry;
use kiln_fleet::case_models::CaseModels;
use kiln_fleet::export::{Entry, Export};
use kiln_fleet::{Report, crowd};
use serde::Deserialize;

use crate::config::Config;
use crate::db::{Db, Stored};
use crate::error::{Result, ServerError};
use crate::limit::RateLimit;
use crate::sender::Senders;

pub struct AppState {
    db: Mutex<Db>,
    limit: RateLimit,
    senders: Senders,
    /// The curated reports' cases and this build's kernels, against which crowd reports are
    /// merged for the summary.
    models: CaseModels,
    registry: Registry,
    export_rows: usize,
}

pub fn router(config: &Config, db: Db) -> Result<Router> {
    let curated =
        kiln_fleet::curated::checked_in().map_err(|e| ServerError::Internal(e.to_string()))?;
    let state = Arc::new(AppState {
        senders: Senders::new(db.salt().to_string()),
        db: Mutex::new(db),
        limit: RateLimit::new(config.rate_per_minute),
        models: CaseModels::from_curated(&curated),
        registry: Registry::builtin().map_err(|e| ServerError::Internal(e.to_string()))?,
        export_rows: config.export_page_reports,
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
    let limited = Router::new()
        .route("/reports", post(post_report))
        .route("/summary", get(summary))
        .route("/export", get(export))
        .layer(middleware::from_fn_with_state(state.clone(), rate_limit));
    Ok(Router::new()
        .merge(limited)
        .route("/health", get(health))
        // A declared length over the limit is refused before any of the body is read, so the
        // client hears 413 at once; a body without a length is cut off at the limit.
        .layer(middleware::from_fn_with_state(
            config.max_body_bytes,
            declared_length,
        ))
        .layer(DefaultBodyLimit::max(config.max_body_bytes))
        .layer(cors)
        .with_state(state))
}

async fn rate_limit(
    State(state): State<Arc<AppState>>,
    ConnectInfo(addr): ConnectInfo<SocketAddr>,
    request: Request,
    next: Next,
) -> Response {
    match state.limit.take(addr.ip()) {
        Ok(()) => next.run(request).await,
        Err(wait) => {
            let mut response = (
                StatusCode::TOO_MANY_REQUESTS,
                Json(json!({"error": format!("too many requests from {}: try again in {wait} s", addr.ip())})),
            )
                .into_response();
            if let Ok(v) = HeaderValue::from_str(&wait.to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, v);
            }
            response
        }
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

/// Runs a database call off the async threads.
async fn with_db<T: Send + 'static>(
    state: &Arc<AppState>,
    f: impl FnOnce(&mut Db) -> Result<T> + Send + 'static,
) -> Result<T> {
    let state = state.clone();
    tokio::task::spawn_blocking(move || {
        let mut db = state.db.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut db)
    })
    .await
    .map_err(|e| ServerError::Internal(e.to_string()))?
}

async fn post_report(
    State(state): State<Arc<AppState>>,
    ConnectInfo(addr): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response> {
    let consent = headers
        .get("x-kiln-consent")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("yes"));
    if !consent {
        return Err(ServerError::NoConsent);
    }
    // Bytes, not a String: a body that is not UTF-8 is a malformed report (422), not a
    // rejection of the extractor (400).
    let report = Report::parse_bytes("request body", &body)
        .map_err(|e| ServerError::Invalid(e.to_string()))?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let sender = state.senders.hash(addr.ip());
    let stored = with_db(&state, move |db| db.store(&report, now, &sender)).await?;
    Ok(match stored {
        Stored::New(id) => (
            StatusCode::CREATED,
            Json(json!({"status": "stored", "id": id})),
        )
            .into_response(),
        Stored::Duplicate(id) => (
            StatusCode::OK,
            Json(json!({"status": "duplicate", "id": id})),
        )
            .into_response(),
    })
}

async fn summary(State(state): State<Arc<AppState>>) -> Result<Json<Value>> {
    let submissions = with_db(&state, |db| db.submissions()).await?;
    let merged = crowd::merge(
        &submissions,
        &state.models,
        &state.registry,
        &crowd::Rules::default(),
    );
    let devices: Vec<Value> = submissions
        .iter()
        .map(|s| {
            let r = &s.report;
            json!({"name": r.device.name, "class": r.device.class(), "backend": r.device.backend,
                   "kiln_version": r.kiln_version, "results": r.results.len()})
        })
        .collect();
    Ok(Json(json!({
        "reports": submissions.len(),
        "devices": devices,
        "picks": merged.picks,
        "undecided": merged.unmet,
        "set_aside": merged.set_aside.len(),
    })))
}

/// `after`: the last id the client has.
#[derive(Debug, Deserialize)]
struct ExportQuery {
    #[serde(default)]
    after: i64,
}

/// About the most bytes of reports one export page holds.
const EXPORT_BYTES: usize = 8 << 20;

/// A page of stored reports for `fleet merge --from` (`fleet/SCHEMA.md`, "The collector's
/// export"): each with its id and sender hash; a row that no longer validates is left out and
/// logged.
async fn export(
    State(state): State<Arc<AppState>>,
    Query(q): Query<ExportQuery>,
) -> Result<Json<Export>> {
    let per_page = state.export_rows;
    let (rows, more) = with_db(&state, move |db| {
        db.export_page(q.after, per_page, EXPORT_BYTES)
    })
    .await?;
    let next = if more {
        rows.last().map(|r| r.id)
    } else {
        None
    };
    let mut entries = Vec::with_capacity(rows.len());
    for row in rows {
        match Report::parse(&format!("stored report {}", row.id), &row.body).and_then(|r| {
            serde_json::to_value(r).map_err(|e| kiln_fleet::FleetError::Usage(e.to_string()))
        }) {
            Ok(report) => entries.push(Entry {
                id: row.id,
                received_unix: row.received_unix,
                sender: row.sender,
                report,
            }),
            Err(e) => log::warn!("{e}: left out of the export"),
        }
    }
    Ok(Json(Export::page(entries, next)))
}

async fn health(State(state): State<Arc<AppState>>) -> Result<Json<Value>> {
    let n = with_db(&state, |db| db.count()).await?;
    Ok(Json(json!({"status": "ok", "reports": n})))
}
