//! `fleet-server`: the fleet's collector. Stores campaign reports (validated, each once) in a
//! SQLite file and serves the merged tuned table.
//!
//!     fleet-server --config fleet/server/fleet-server.toml [--listen ADDR] [--database FILE]

mod app;
mod config;
mod db;
mod error;
mod limit;
mod sender;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use config::Config;
use error::{Result, ServerError};

#[derive(Parser)]
#[command(name = "fleet-server", version, about = "Kiln's fleet collector")]
struct Cli {
    /// The configuration file (TOML: listen, database, allowed_origin, max_body_bytes,
    /// rate_per_minute).
    #[arg(long, default_value = "fleet/server/fleet-server.toml")]
    config: PathBuf,
    /// Overrides the file's `listen`.
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// Overrides the file's `database`.
    #[arg(long)]
    database: Option<PathBuf>,
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("fleet-server: error: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(Cli::parse())) {
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
    let db = db::Db::open(&config.database)?;
    let app = app::router(&config, db)?;
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|e| ServerError::Config(format!("listen {}: {e}", config.listen)))?;
    let addr = listener
        .local_addr()
        .map_err(|e| ServerError::Internal(e.to_string()))?;
    // The first line says where to connect (tests start the server on port 0 and read it).
    println!("fleet-server listening on http://{addr}");
    log::info!("database {}", config.database.display());
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await
    .map_err(|e| ServerError::Internal(e.to_string()))
}
