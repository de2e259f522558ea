//! The server's configuration file.

use std::net::SocketAddr;
use std::time::Duration;

use serde::Deserialize;

use crate::error::{Result, ServerError};
use crate::proxy::Proxies;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Address to listen on; port 0 picks a free one.
    pub listen: SocketAddr,
    /// The database: an SQLite file (relative paths are relative to the working directory), or
    /// a PostgreSQL database on this machine as a `postgres://` URL.
    pub database: String,
    /// The site origin allowed to call the API from a browser.
    pub allowed_origin: String,
    /// Largest request body, bytes.
    #[serde(default = "default_body")]
    pub max_body_bytes: usize,
    /// Requests per minute one address may make (health checks excepted; a request refused for
    /// its size counts).
    #[serde(default = "default_rate")]
    pub rate_per_minute: u32,
    /// Most reports one page of `GET /export` holds.
    #[serde(default = "default_export_page")]
    pub export_page_reports: usize,
    /// Seconds a client has to send a request's headers (a connection serves one request:
    /// `crate::serve`).
    #[serde(default = "default_header_s")]
    pub header_timeout_s: f64,
    /// Seconds the body may go without a byte arriving.
    #[serde(default = "default_body_s")]
    pub body_timeout_s: f64,
    /// Seconds a request may take from its headers to its answer, body included.
    #[serde(default = "default_request_s")]
    pub request_timeout_s: f64,
    /// Seconds a connection may wait on its client without a byte moving either way (reading
    /// or writing); longer than the request timeout, which decides first while one runs.
    #[serde(default = "default_idle_s")]
    pub idle_timeout_s: f64,
    /// Open connections in all, and from one address (an IPv6 /64), at most. Past an address's
    /// cap a connection is answered 429 and closed; at the total cap the connection idle the
    /// longest is closed to make room (503 only when every one has a request in flight).
    #[serde(default = "default_connections")]
    pub max_connections: usize,
    #[serde(default = "default_connections_per_address")]
    pub max_connections_per_address: usize,
    /// Seconds the server waits, after SIGINT or SIGTERM, for requests in flight to finish.
    #[serde(default = "default_shutdown_s")]
    pub shutdown_deadline_s: f64,
    /// Storage quotas: reports and bytes one address may store, and bytes in all.
    #[serde(default = "default_quota_reports")]
    pub quota_reports_per_address: u64,
    #[serde(default = "default_quota_address_bytes")]
    pub quota_bytes_per_address: u64,
    #[serde(default = "default_quota_total_bytes")]
    pub quota_bytes_total: u64,
    /// Seconds between checks that the database can be written (`/health`).
    #[serde(default = "default_probe_s")]
    pub health_probe_s: f64,
    /// Seconds at least between two updates of `/summary` (each new report marks it stale; a
    /// burst of reports is summarised once).
    #[serde(default = "default_summary_s")]
    pub summary_interval_s: f64,
    /// The proxies in front of the collector (addresses, or networks as `address/prefix`): from
    /// these only, the client's address is read from the header `forwarding_header` names (the
    /// right-most hop that is not a trusted proxy), and quotas, rate limits and the crowd's
    /// senders use it. Empty: every request's sender is the address it came from.
    #[serde(default)]
    pub trusted_proxies: Vec<String>,
    /// The one forwarding header the trusted proxies set: `X-Forwarded-For` (the default) or
    /// `Forwarded`. The other is never read: a proxy passes on what a client sends in a header
    /// it does not set itself.
    #[serde(default = "default_forwarding_header")]
    pub forwarding_header: String,
    /// Milliseconds of building `/export` pages one address may cause per minute (a page served
    /// from the cache costs nothing); past them its exports are answered 429 until it has more.
    #[serde(default = "default_export_build_ms")]
    pub export_build_ms_per_minute: u64,
    /// Exports in progress at once, in all (waiting for the builder, being built, or being
    /// sent; one per address); past them an export is answered 503.
    #[serde(default = "default_export_in_flight")]
    pub export_in_flight: usize,
}

fn default_body() -> usize {
    1 << 20
}

fn default_rate() -> u32 {
    60
}

fn default_export_page() -> usize {
    200
}

fn default_forwarding_header() -> String {
    "X-Forwarded-For".into()
}

fn default_export_build_ms() -> u64 {
    10_000
}

fn default_export_in_flight() -> usize {
    16
}

fn default_header_s() -> f64 {
    10.0
}

fn default_body_s() -> f64 {
    10.0
}

fn default_request_s() -> f64 {
    30.0
}

fn default_idle_s() -> f64 {
    60.0
}

fn default_connections() -> usize {
    512
}

fn default_connections_per_address() -> usize {
    32
}

fn default_shutdown_s() -> f64 {
    10.0
}

fn default_quota_reports() -> u64 {
    100
}

fn default_quota_address_bytes() -> u64 {
    64 << 20
}

fn default_quota_total_bytes() -> u64 {
    4 << 30
}

fn default_probe_s() -> f64 {
    5.0
}

fn default_summary_s() -> f64 {
    0.5
}

impl Config {
    pub fn parse(what: &str, text: &str) -> Result<Config> {
        let c: Config =
            toml::from_str(text).map_err(|e| ServerError::Config(format!("{what}: {e}")))?;
        let counts = [
            ("max_body_bytes", c.max_body_bytes as u64),
            ("rate_per_minute", u64::from(c.rate_per_minute)),
            ("export_page_reports", c.export_page_reports as u64),
            ("max_connections", c.max_connections as u64),
            (
                "max_connections_per_address",
                c.max_connections_per_address as u64,
            ),
            ("quota_reports_per_address", c.quota_reports_per_address),
            ("quota_bytes_per_address", c.quota_bytes_per_address),
            ("quota_bytes_total", c.quota_bytes_total),
            ("export_build_ms_per_minute", c.export_build_ms_per_minute),
            ("export_in_flight", c.export_in_flight as u64),
        ];
        for (name, v) in counts {
            if v == 0 {
                return Err(ServerError::Config(format!(
                    "{what}: {name} must be positive"
                )));
            }
        }
        let seconds = [
            ("header_timeout_s", c.header_timeout_s),
            ("body_timeout_s", c.body_timeout_s),
            ("request_timeout_s", c.request_timeout_s),
            ("idle_timeout_s", c.idle_timeout_s),
            ("shutdown_deadline_s", c.shutdown_deadline_s),
            ("health_probe_s", c.health_probe_s),
            ("summary_interval_s", c.summary_interval_s),
        ];
        for (name, v) in seconds {
            // Up to a day: a longer timeout is no timeout.
            if !(v.is_finite() && v > 0.0 && v <= 86_400.0) {
                return Err(ServerError::Config(format!(
                    "{what}: {name} = {v}: give seconds, more than 0 and at most 86400"
                )));
            }
        }
        Proxies::parse(&c.trusted_proxies, &c.forwarding_header)
            .map_err(|e| ServerError::Config(format!("{what}: {e}")))?;
        if !(c.allowed_origin.starts_with("http://") || c.allowed_origin.starts_with("https://")) {
            return Err(ServerError::Config(format!(
                "{what}: allowed_origin `{}` is not an http(s) origin",
                c.allowed_origin
            )));
        }
        Ok(c)
    }

    pub fn header_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.header_timeout_s)
    }

    pub fn body_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.body_timeout_s)
    }

    pub fn request_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.request_timeout_s)
    }

    pub fn idle_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.idle_timeout_s)
    }

    pub fn shutdown_deadline(&self) -> Duration {
        Duration::from_secs_f64(self.shutdown_deadline_s)
    }

    pub fn health_probe(&self) -> Duration {
        Duration::from_secs_f64(self.health_probe_s)
    }

    /// The trusted proxies (checked when the configuration was read).
    pub fn proxies(&self) -> Result<Proxies> {
        Proxies::parse(&self.trusted_proxies, &self.forwarding_header).map_err(ServerError::Config)
    }

    pub fn summary_interval(&self) -> Duration {
        Duration::from_secs_f64(self.summary_interval_s)
    }
}
