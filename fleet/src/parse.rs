//! Reading a fleet report from JSON and writing one, each validated: the schema name and
//! version first, then every field's presence and type (the error names the field's path), then
//! the values (no negative or non-finite time, a wrong variant never timed, …).

use crate::error::{FleetError, Result};
use crate::report::{Report, SCHEMA, VERSION};
use crate::text::clip;
use crate::{json, validate};

impl Report {
    /// Reads and validates a report from bytes (a request body): text that is not UTF-8 is
    /// refused like any other malformed report.
    pub fn parse_bytes(what: &str, bytes: &[u8]) -> Result<Report> {
        let json = std::str::from_utf8(bytes).map_err(|e| FleetError::InvalidReport {
            what: what.to_string(),
            detail: format!("not UTF-8 text: {e}"),
        })?;
        Report::parse(what, json)
    }

    /// Reads and validates a report; `what` names it in errors (a file name, "request body").
    pub fn parse(what: &str, json: &str) -> Result<Report> {
        let invalid = |detail: String| FleetError::InvalidReport {
            what: what.to_string(),
            detail,
        };
        // Duplicate keys are refused while reading: serde_json would keep the last silently.
        let value = json::parse_unique(json).map_err(|r| match r {
            json::Refusal::Syntax(e) => invalid(format!("not JSON: {e}")),
            json::Refusal::Rule(e) => invalid(e),
        })?;
        Report::from_value(what, value)
    }

    /// Validates a report already read as JSON (with its duplicate keys refused: see
    /// `parse`), as inside a collector's export.
    pub fn from_value(what: &str, value: serde_json::Value) -> Result<Report> {
        let invalid = |detail: String| FleetError::InvalidReport {
            what: what.to_string(),
            detail,
        };
        // Schema and version first, so that another document or a newer report says so
        // rather than failing on some field.
        let obj = value
            .as_object()
            .ok_or_else(|| invalid("not a JSON object".into()))?;
        match obj.get("schema").and_then(|s| s.as_str()) {
            Some(SCHEMA) => {}
            Some(other) => {
                return Err(invalid(format!(
                    "schema `{}`, not `{SCHEMA}`",
                    clip(other, 80)
                )));
            }
            None => return Err(invalid(format!("no `schema` field: not a {SCHEMA}"))),
        }
        match obj.get("version").and_then(|v| v.as_u64()) {
            Some(v) if v == u64::from(VERSION) => {}
            Some(v) => {
                return Err(invalid(format!(
                    "version {v}: this build reads version {VERSION}"
                )));
            }
            None => return Err(invalid("`version` is missing or not a whole number".into())),
        }
        let mut report: Report = serde_path_to_error::deserialize(&value)
            .map_err(|e| invalid(format!("{}: {}", e.path(), e.inner())))?;
        // Unknown fields at any depth, also inside `device` (kiln's type, which ignores them).
        json::unknown_field(&value, &report).map_err(invalid)?;
        // Names in one form before they are checked, stored or compared: a look-alike spelling
        // of a name is that name.
        validate::normalize_names(&mut report);
        validate::report(&report).map_err(invalid)?;
        Ok(report)
    }

    /// The report as pretty JSON.
    pub fn to_json(&self) -> Result<String> {
        validate::report(self).map_err(|detail| FleetError::InvalidReport {
            what: "report".into(),
            detail,
        })?;
        serde_json::to_string_pretty(self).map_err(|e| FleetError::InvalidReport {
            what: "report".into(),
            detail: e.to_string(),
        })
    }
}
