//! The headless benchmark: both paths run, agree within 2/255 per channel, and the PNG is written.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

#[test]
fn bench_json_reports_rates_agreement_and_writes_a_png() {
    let png = std::env::temp_dir().join(format!("kiln-waves-{}.png", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_waves"))
        .args([
            "--bench", "--frames", "3", "--size", "128", "--json", "--png",
        ])
        .arg(&png)
        .env("NODEVICE_SELECT", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "waves --bench failed: {stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    println!("waves bench: {report}");
    assert!(report["gpu"]["median_ms"].as_f64().unwrap() > 0.0);
    assert!(report["cpu"]["median_ms"].as_f64().unwrap() > 0.0);
    assert!(["gpu_timestamps", "wall_clock"].contains(&report["gpu"]["clock"].as_str().unwrap()));
    let diff = report["checks"]["max_channel_diff_gpu_vs_cpu"]
        .as_u64()
        .unwrap();
    assert!(diff <= 2, "GPU and CPU frames differ by {diff}/255");
    // The host's share of a frame: its three launches recorded and submitted.
    let host = &report["checks"]["host_per_frame"];
    assert_eq!(host["launches"].as_u64(), Some(3), "{host}");
    assert!(report["checks"]["host_us_per_launch"].as_f64().unwrap() > 0.0);
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[1..4], b"PNG");
    let _ = std::fs::remove_file(&png);
}

#[test]
fn bench_refuses_bad_sizes_with_a_message() {
    for size in ["0", "100000"] {
        let out = Command::new(env!("CARGO_BIN_EXE_waves"))
            .args(["--bench", "--frames", "1", "--size", size])
            .env("NODEVICE_SELECT", "1")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "--size {size} should fail");
        assert!(
            stderr.contains("error:") && !stderr.contains("panicked"),
            "{stderr}"
        );
    }
}
