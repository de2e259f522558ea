//! The report as a table, for a person: the paths' times, errors and bytes, the kernels chosen,
//! and the sweep's rows (`--json` prints the same report whole).

use serde_json::Value;

pub(super) fn print_table(out: &Value) {
    let s = &out["shape"];
    out!(
        "attention B{} H{}/{} N{} D{} {} causal={} {} on {} ({})",
        s["b"],
        s["h"],
        s["hkv"],
        s["n"],
        s["d"],
        out["dtype"].as_str().unwrap_or(""),
        out["causal"],
        out["pass"].as_str().unwrap_or(""),
        out["adapter"].as_str().unwrap_or(""),
        out["backend"].as_str().unwrap_or("")
    );
    out!(
        "{:.2} GFLOP per call; one score matrix is {:.1} MB",
        out["gflop"].as_f64().unwrap_or(0.0),
        out["score_matrix_mb"].as_f64().unwrap_or(0.0)
    );
    let paths = out["paths"].as_array().cloned().unwrap_or_default();
    let flash_ms = paths[0]["timing"]["median_ms"].as_f64().unwrap_or(f64::NAN);
    out!(
        "{:<6} {:>11} {:>10} {:>10} {:>5} {:>15} {:>9} {:>10} {:>10} {:>9}",
        "path",
        "median ms",
        "min",
        "max",
        "runs",
        "clock",
        "TFLOP/s",
        "MB moved",
        "rel L2",
        "÷ flash"
    );
    for p in &paths {
        let t = &p["timing"];
        let ms = t["median_ms"].as_f64().unwrap_or(f64::NAN);
        out!(
            "{:<6} {:>11.4} {:>10.4} {:>10.4} {:>5} {:>15} {:>9.3} {:>10} {:>10} {:>8.2}x",
            p["path"].as_str().unwrap_or(""),
            ms,
            t["min_ms"].as_f64().unwrap_or(f64::NAN),
            t["max_ms"].as_f64().unwrap_or(f64::NAN),
            t["runs"],
            t["clock"].as_str().unwrap_or(""),
            t["tflops"].as_f64().unwrap_or(f64::NAN),
            p["mb_moved"]
                .as_f64()
                .map_or("—".into(), |m| format!("{m:.1}")),
            p["rel_l2_error"]
                .as_f64()
                .map_or("reference".into(), |e| format!("{e:.2e}")),
            ms / flash_ms
        );
    }
    if let Some(note) = paths.last().and_then(|p| p["note"].as_str()) {
        out!("cpu: {note}");
    }
    for p in &paths {
        for c in p["variants"].as_array().into_iter().flatten() {
            out!(
                "  {} {} {} — {}",
                p["path"].as_str().unwrap_or(""),
                c["family"].as_str().unwrap_or(""),
                c["variant"].as_str().unwrap_or(""),
                c["reason"].as_str().unwrap_or("")
            );
        }
    }
    out!(
        "MB moved: the byte model (each tensor a kernel touches read or written once; see kiln::ops::attention::traffic)"
    );
    for r in out["sweep"].as_array().into_iter().flatten() {
        match r["median_ms"].as_f64() {
            Some(ms) => out!(
                "  sweep {:<15} {:<34} {:>10.4} ms  rel L2 {:.2e}{}",
                r["family"].as_str().unwrap_or(""),
                r["variant"].as_str().unwrap_or(""),
                ms,
                r["rel_l2_error"].as_f64().unwrap_or(f64::NAN),
                if r["selected"] == true {
                    "  (the selector's)"
                } else {
                    ""
                }
            ),
            None => out!(
                "  sweep {:<15} {:<34} WRONG: rel L2 {}",
                r["family"].as_str().unwrap_or(""),
                r["variant"].as_str().unwrap_or(""),
                r["rel_l2_error"]
            ),
        }
    }
}
