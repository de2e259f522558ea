//! `attention --bench` as a user runs it: on the built-in weights it prints the tokens, the
//! kernels, GPU and CPU times with the paths compared, writes the heatmaps as PNG and the dump;
//! a missing model directory is a clear error, not a panic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

fn attention() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_attention"));
    c.env("NODEVICE_SELECT", "1");
    c
}

#[test]
fn bench_json_on_the_built_in_weights() {
    let dir = std::env::temp_dir().join(format!("kiln-attention-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (png, dump) = (dir.join("heatmaps.png"), dir.join("dump.json"));
    let out = attention()
        .args([
            "--bench",
            "--json",
            "--frames",
            "3",
            "--model",
            "synthetic",
            "--text",
        ])
        .arg("The cat sat on the mat because it was tired.")
        .arg("--png")
        .arg(&png)
        .arg("--dump")
        .arg(&dump)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "attention --bench failed: {stderr}");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let checks = &r["checks"];
    println!(
        "attention bench: gpu {} ms, cpu {} ms, kernels {}",
        r["gpu"]["median_ms"], r["cpu"]["median_ms"], checks["kernels"]
    );
    let tokens: Vec<&str> = checks["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(tokens.first(), Some(&"[CLS]"));
    assert!(
        tokens.contains(&"cat") && tokens.contains(&"tired"),
        "{tokens:?}"
    );
    assert_eq!(checks["synthetic_weights"], true);
    assert_eq!(checks["agree"], true);
    let kernels = checks["kernels"].as_array().unwrap();
    // The fused forms: a projection with its bias, the feed-forward's gelu in its product, and
    // each residual sum in its layer norm.
    for fused in ["_bias ", "_bias_gelu", "_residual"] {
        assert!(
            kernels.iter().any(|k| {
                let k = k.as_str().unwrap();
                k.ends_with(fused.trim()) || k.contains(fused)
            }),
            "no {fused} kernel in {kernels:?}"
        );
    }
    // Per forward pass once its plan is captured: its launches in the pieces one recording
    // is submitted in, one upload (the word rows), nothing created.
    let per = &checks["per_forward"];
    let launches = checks["launches_per_forward"].as_u64().unwrap();
    assert_eq!(per["dispatches"], launches, "{per}");
    let pieces = kiln_app::kiln::gpu::submissions_for(launches as usize) as u64;
    assert_eq!(per["submissions"], pieces, "{per}");
    assert_eq!(per["writes"], 1, "{per}");
    assert_eq!(per["buffers_created"], 0, "{per}");
    assert_eq!(per["bind_groups_created"], 0, "{per}");
    // Recorded op by op, every launch of the whole forward (the heatmap's plan): the embedding
    // call's plan has three fewer per attention chain it fused (scores, softmax and weighted
    // values in one flash launch that writes the heads merged); its feed-forward blocks stay
    // (that rewrite is asked for, not the default); where the host time goes is reported.
    let lazy = &checks["recorded_each_call"]["wall_breakdown_ms_per_forward"];
    let whole = checks["launches_per_heatmap_forward"].as_u64().unwrap();
    let fused = checks["attention_chains_fused"].as_u64().unwrap();
    let blocks = checks["feed_forward_blocks_fused"].as_u64().unwrap();
    assert_eq!(lazy["launches"], whole, "{lazy}");
    assert_eq!(blocks, 0, "the feed-forward rewrite is not the default");
    assert_eq!(launches + 3 * fused + blocks, whole);
    assert_eq!(checks["launches_saved_by_fusing"], 3 * fused + blocks);
    assert!(lazy["host_us_per_launch"].as_f64().unwrap() > 0.0, "{lazy}");
    // The submit's encoding and queue.submit calls, each within it in every run (so in median).
    let planned = &checks["wall_breakdown_ms_per_forward"];
    let host = &planned["host"];
    let ms = |k: &str| host[k].as_f64().unwrap();
    for part in ["encode_ms", "queue_submit_ms"] {
        assert!(
            ms(part) > 0.0 && ms(part) <= ms("submit_ms"),
            "{part}: {host}"
        );
    }
    assert_eq!(host["submissions"], per["submissions"], "{host}");
    for family in ["matmul", "softmax", "add", "layernorm", "swap_axes"] {
        assert!(
            kernels
                .iter()
                .any(|k| k.as_str().unwrap().starts_with(family)),
            "no {family} in {kernels:?}"
        );
    }
    assert!(
        r["gpu"]["median_ms"].as_f64().unwrap() > 0.0
            && r["cpu"]["median_ms"].as_f64().unwrap() > 0.0
    );
    assert_eq!(&std::fs::read(&png).unwrap()[1..4], b"PNG");
    let d: serde_json::Value = serde_json::from_slice(&std::fs::read(&dump).unwrap()).unwrap();
    assert_eq!(d["attentions"].as_array().unwrap().len(), 2);
    assert_eq!(d["hidden_states"].as_array().unwrap().len(), 3);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_missing_model_is_a_clear_error() {
    let out = attention()
        .args(["--bench", "--frames", "1", "--model", "/nonexistent/model"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("/nonexistent/model/config.json") && !stderr.contains("panicked"),
        "{stderr}"
    );
}
