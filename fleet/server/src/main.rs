//! `fleet-server`: the fleet's collector. Stores campaign reports (validated, each once, within
//! quotas, with an audit record) in an SQLite file or a PostgreSQL database and serves the
//! crowd's summary and an export for `fleet merge --from`.
//!
//!     fleet-server --config fleet/server/fleet-server.toml [--listen ADDR] [--database FILE|URL] [--init]

mod app;
mod config;
mod db;
mod descriptors;
mod error;
mod export;
mod gate;
mod health;
mod limit;
mod parse_errors;
mod proxy;
mod sender;
mod serve;
mod summary;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

use config::Config;
use error::{Result, ServerError};

#[derive(Parser)]
#[command(name = "fleet-server", version, about = "Kiln's fleet collector")]
struct Cli {
    /// The configuration file (TOML; fleet/server/fleet-server.toml lists every setting).
    #[arg(long, default_value = "fleet/server/fleet-server.toml")]
    config: PathBuf,
    /// Overrides the file's `listen`.
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// Overrides the file's `database` (an SQLite file, or a `postgres://` URL).
    #[arg(long)]
    database: Option<String>,
    /// Create the database if it does not exist (without it, a missing database is refused:
    /// one that went missing is not silently recreated empty).
    #[arg(long)]
    init: bool,
}

/// How long the runtime waits, after the server stops, for blocking work (a write being
/// committed) before the process exits regardless.
const EXIT_GRACE: Duration = Duration::from_secs(5);

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("fleet-server: error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run(Cli::parse()));
    runtime.shutdown_timeout(EXIT_GRACE);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fleet-server: error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<()> {
    let text = std::fs::read_to_string(&cli.config)
        .map_err(|e| ServerError::Config(format!("{}: {e}", cli.config.display())))?;
    let mut config = Config::parse(&cli.config.display().to_string(), &text)?;
    if let Some(listen) = cli.listen {
        config.listen = listen;
    }
    if let Some(database) = cli.database {
        config.database = database;
    }
    let database = db::Database::parse(&config.database)?;
    let files = descriptors::fit(config.max_connections)?;
    let stop = serve::signals()?;
    // The port first: a server that cannot listen touches no database (and leaves no new
    // empty one behind).
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|e| ServerError::Config(format!("listen {}: {e}", config.listen)))?;
    let addr = listener
        .local_addr()
        .map_err(|e| ServerError::Internal(e.to_string()))?;
    let quotas = db::Quotas {
        reports_per_address: config.quota_reports_per_address,
        bytes_per_address: config.quota_bytes_per_address,
        bytes_total: config.quota_bytes_total,
    };
    // Off the async threads: opening blocks (PostgreSQL's client runs its own small runtime).
    let opening = database.clone();
    let db = tokio::task::spawn_blocking(move || db::Db::open(&opening, cli.init, quotas))
        .await
        .map_err(|e| ServerError::Internal(e.to_string()))??;
    let health = health::Health::new(db.count());
    health::spawn_probe(health.clone(), database.clone(), config.health_probe());
    let summary = summary::Summary::start(database.clone(), config.summary_interval());
    let app = app::router(&config, db, database.clone(), health, summary)?;
    // The first line says where to connect (tests start the server on port 0 and read it).
    println!("fleet-server listening on http://{addr}");
    log::info!("database {database}; open-file limit {files}");
    let limits = serve::Limits {
        header: config.header_timeout(),
        idle: config.idle_timeout(),
        shutdown: config.shutdown_deadline(),
        gate: gate::Gate::new(config.max_connections, config.max_connections_per_address),
        proxies: config.proxies()?,
    };
    serve::serve(listener, app, limits, stop).await
}
