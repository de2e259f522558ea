//! The connection: a `postgres://` URL read and held to this machine, and a session made with
//! the settings every connection of the collector has.

use std::fmt;
use std::net::IpAddr;
use std::time::Duration;

use postgres::config::Host;
use postgres::error::SqlState;
use postgres::{Client, Config, NoTls};

use crate::error::{Result, ServerError};

/// How long a connection may take to be made when the URL does not say (`connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest one statement may run: far over any the collector makes (reading every report
/// for the summary included), so that a server that stops answering fails the request.
const STATEMENT_TIMEOUT: &str = "120s";

/// A PostgreSQL database on this machine.
#[derive(Clone)]
pub struct Target {
    config: Config,
    /// The URL without its password, for messages and logs.
    name: String,
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.name)
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// Whether connecting to `host` stays on this machine.
fn on_this_machine(host: &Host) -> bool {
    match host {
        Host::Tcp(h) => {
            let h = h.trim_start_matches('[').trim_end_matches(']');
            h.eq_ignore_ascii_case("localhost")
                || h.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
        }
        #[cfg(unix)]
        Host::Unix(_) => true,
    }
}

fn host_name(host: &Host) -> String {
    match host {
        Host::Tcp(h) => h.clone(),
        #[cfg(unix)]
        Host::Unix(path) => path.display().to_string(),
    }
}

impl Target {
    /// Reads a `postgres://` URL (libpq's form: user, password, hosts, ports, database name,
    /// and parameters such as `connect_timeout`). Refused: a URL that does not parse, names no
    /// host, or a host that is not this machine.
    pub fn parse(url: &str) -> Result<Target> {
        // The URL is not repeated in a message: it may hold a password.
        let mut config: Config = url.parse().map_err(|e| {
            ServerError::Config(format!(
                "database: not a PostgreSQL URL ({})",
                crate::error::pg_text(&e)
            ))
        })?;
        let hosts = config.get_hosts();
        let ports = config.get_ports();
        let user = config.get_user().unwrap_or_default();
        let name = format!(
            "postgres://{user}@{}:{}/{}",
            hosts.iter().map(host_name).collect::<Vec<_>>().join(","),
            if ports.is_empty() {
                "5432".to_string()
            } else {
                ports
                    .iter()
                    .map(u16::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            },
            config.get_dbname().unwrap_or(user),
        );
        let refuse = |why: &str| ServerError::Config(format!("database {name}: {why}"));
        if hosts.is_empty() {
            return Err(refuse(
                "names no host: give one on this machine (127.0.0.1, or a Unix socket's directory)",
            ));
        }
        let remote = !hosts.iter().all(on_this_machine)
            || !config.get_hostaddrs().iter().all(IpAddr::is_loopback);
        if remote {
            return Err(refuse(
                "is not on this machine: the collector reaches PostgreSQL only over loopback or \
                 a Unix socket (it has no TLS to cross a network)",
            ));
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("kiln-fleet-server");
        }
        Ok(Target { config, name })
    }

    /// A connection with `settings` (`SET …;` statements) made, or why not: the server did not
    /// answer, refused the login, or has no such database.
    pub(super) fn connect(&self, settings: &str) -> Result<Client> {
        let mut client = self.config.connect(NoTls).map_err(|e| {
            let missing = e
                .as_db_error()
                .is_some_and(|d| *d.code() == SqlState::INVALID_CATALOG_NAME);
            if missing {
                ServerError::Config(format!(
                    "database {}: does not exist on the server: create it (createdb) and start \
                     with --init",
                    self.name
                ))
            } else if e.as_db_error().is_some() {
                ServerError::pg_open(
                    format!("database {}: the server refused the connection", self.name),
                    e,
                )
            } else {
                ServerError::pg_open(
                    format!("database {}: PostgreSQL cannot be reached", self.name),
                    e,
                )
            }
        })?;
        client
            .batch_execute(&format!(
                "SET statement_timeout = '{STATEMENT_TIMEOUT}'; {settings}"
            ))
            .map_err(|e| ServerError::pg_open(format!("database {}", self.name), e))?;
        Ok(client)
    }
}
