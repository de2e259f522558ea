//! The curated reports: the project's own measurements, checked in under `fleet/reports/`, built
//! into the program for what needs them without the repository at hand (the collector's
//! summary reads the cases' bytes and FLOPs from them: `crate::case_models`).

use crate::error::Result;
use crate::report::Report;

/// Each checked-in report, by file name. A new curated report is added here and in
/// `fleet/reports/` (the site's build copies every file there).
const CHECKED_IN: [(&str, &str); 2] = [
    ("lavapipe.json", include_str!("../reports/lavapipe.json")),
    (
        "nvidia-h200.json",
        include_str!("../reports/nvidia-h200.json"),
    ),
];

/// The checked-in reports, validated.
pub fn checked_in() -> Result<Vec<Report>> {
    CHECKED_IN
        .iter()
        .map(|(name, json)| Report::parse(&format!("fleet/reports/{name}"), json))
        .collect()
}
