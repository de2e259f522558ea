//! Crowd reports for `fleet merge --from`: a collector's export, read page by page over HTTP,
//! or a file saved from it.

use kiln_fleet::export::{self, Page};
use kiln_fleet::{FleetError, Result};

/// Every stored report of `from`: a collector's URL (`http://…`, `https://…`) or an export file.
pub fn read(from: &str) -> Result<Page> {
    if from.starts_with("http://") || from.starts_with("https://") {
        export::fetch(from)
    } else {
        let text = std::fs::read_to_string(from).map_err(|source| FleetError::Io {
            path: from.to_string(),
            source,
        })?;
        let page = export::parse(from, &text)?;
        if page.next.is_some() {
            return Err(FleetError::Usage(format!(
                "{from}: one page of a longer export (its `next` is set): save every page, or \
                 give the collector's URL"
            )));
        }
        Ok(page)
    }
}
