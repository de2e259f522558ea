//! The server's configuration file.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::Deserialize;

use crate::error::{Result, ServerError};

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Address to listen on; port 0 picks a free one.
    pub listen: SocketAddr,
    /// The SQLite file (relative paths are relative to the working directory).
    pub database: PathBuf,
    /// The site origin allowed to call the API from a browser.
    pub allowed_origin: String,
    /// Largest request body, bytes.
    #[serde(default = "default_body")]
    pub max_body_bytes: usize,
    /// Requests per minute one address may make (health checks excepted).
    #[serde(default = "default_rate")]
    pub rate_per_minute: u32,
    /// Most reports one page of `GET /export` holds.
    #[serde(default = "default_export_page")]
    pub export_page_reports: usize,
}

fn default_export_page() -> usize {
    200
}

fn default_body() -> usize {
    1 << 20
}

fn default_rate() -> u32 {
    60
}

impl Config {
    pub fn parse(what: &str, text: &str) -> Result<Config> {
        let c: Config =
            toml::from_str(text).map_err(|e| ServerError::Config(format!("{what}: {e}")))?;
        if c.max_body_bytes == 0 || c.rate_per_minute == 0 || c.export_page_reports == 0 {
            return Err(ServerError::Config(format!(
                "{what}: max_body_bytes, rate_per_minute and export_page_reports must be positive"
            )));
        }
        if !(c.allowed_origin.starts_with("http://") || c.allowed_origin.starts_with("https://")) {
            return Err(ServerError::Config(format!(
                "{what}: allowed_origin `{}` is not an http(s) origin",
                c.allowed_origin
            )));
        }
        Ok(c)
    }
}
