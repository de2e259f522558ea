//! `flash` as a user runs it on the adapter in hand (lavapipe in CI): the 20-step Small run on
//! both paths with the drift within 10× what was measured, the sweep's GPU paths checked against
//! the CPU path, checkpoints saved, resumed, sampled from, and refused
//! when corrupt or mismatched; bad data files refused with a clear error.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Command, Output};

fn flash(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flash"))
        .args(args)
        .env("NODEVICE_SELECT", "1")
        .output()
        .unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kiln-flash-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn small_preset_trains_on_both_paths_with_low_drift_and_checkpoints() {
    let dir = scratch("bench");
    let ckpt = dir.join("small.ckpt");
    let ckpt = ckpt.to_str().unwrap();
    let out = flash(&[
        "--bench", "--preset", "small", "--steps", "20", "--json", "--save", ckpt,
    ]);
    assert!(
        out.status.success(),
        "flash --bench failed: {}",
        stderr(&out)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &r["comparison"];
    let drift = c["drift"].as_f64().unwrap();
    println!(
        "flash small 20 steps on {}: GPU {:.1} ms/step, CPU {:.1} ms/step, drift {:.2e}, loss {} → {}",
        r["adapter"],
        c["gpu_median_ms_per_step"].as_f64().unwrap(),
        c["cpu_median_ms_per_step"].as_f64().unwrap(),
        drift,
        c["gpu"]["losses"][0],
        c["gpu"]["losses"][19]
    );
    // Measured 8.8e-8 on lavapipe (2026-12-01, the same on every run): at most 10× that.
    assert!(drift <= 8e-7, "drift {drift}");
    for path in ["gpu", "cpu"] {
        let losses: Vec<f64> = c[path]["losses"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_f64().unwrap())
            .collect();
        assert_eq!(losses.len(), 20, "{path}");
        // Training works: the last losses are well under the first (ln 41 ≈ 3.7 at the start).
        let (first, last) = (losses[0], losses[19]);
        assert!(last < 0.8 * first, "{path}: loss {first} → {last}");
        assert_eq!(c[path]["step_ms"].as_array().unwrap().len(), 20);
    }
    assert_eq!(c["parameters"].as_u64().unwrap(), 108_288);
    let t = &c["attention_traffic"];
    assert!(
        t["flash_mb"].as_f64().unwrap() < t["naive_mb"].as_f64().unwrap(),
        "{t}"
    );
    // The kernel-level sweep: every length timed on the three paths, flash moving fewer bytes.
    let points = r["sweep"]["points"].as_array().unwrap();
    assert_eq!(points.len(), 3, "{points:?}");
    for p in points {
        for key in ["flash_ms", "naive_ms", "cpu_ms"] {
            assert!(p[key].as_f64().unwrap() > 0.0, "{key} in {p}");
        }
        // O, dQ, dK and dV of both GPU paths against the CPU path: measured at most 4.0e-7 on
        // lavapipe (flash; 2.6e-7 naive), allowed 10× that.
        for key in ["flash_rel_l2", "naive_rel_l2"] {
            let e = p[key].as_f64().unwrap_or(f64::NAN);
            assert!(e <= 4e-6, "{key} {e} in {p}");
        }
        assert!(p["flash_mb"].as_f64().unwrap() < p["naive_mb"].as_f64().unwrap());
    }
    assert_eq!(r["sweep"]["flash_variants"].as_array().unwrap().len(), 4);
    let kernels: Vec<&str> = r["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    for family in [
        "flash_fwd",
        "flash_bwd_dq",
        "flash_bwd_dkdv",
        "layernorm_backward",
        "cross_entropy",
        "adamw_table",
        "embedding",
        "embedding_backward",
        "matmul",
    ] {
        assert!(
            kernels.iter().any(|k| k.split(' ').next() == Some(family)),
            "no {family} in {kernels:?}"
        );
    }
    // The MLP's gelu and gelu backward, and the moves into heads, ride on the products before
    // them (`kiln::fusion`).
    for form in ["_bias_and_gelu", "_bias_and_gelu_grad", "_bias_and_heads"] {
        assert!(
            kernels
                .iter()
                .any(|k| k.starts_with("matmul ") && k.ends_with(form)),
            "no matmul …{form} in {kernels:?}"
        );
    }

    // Resume from the checkpoint: it starts at step 20, and the loss continues from there.
    let out = flash(&[
        "--bench", "--preset", "small", "--steps", "2", "--json", "--resume", ckpt,
    ]);
    assert!(out.status.success(), "resume failed: {}", stderr(&out));
    let r2: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r2["comparison"]["start_step"], 20);
    let resumed = r2["comparison"]["gpu"]["losses"][0].as_f64().unwrap();
    let last = c["gpu"]["losses"][19].as_f64().unwrap();
    assert!(
        resumed < 1.15 * last,
        "resumed at loss {resumed}, the run ended at {last}"
    );

    // Sampling from it prints the prompt and a continuation in the corpus's alphabet.
    let out = flash(&[
        "sample",
        "--checkpoint",
        ckpt,
        "--prompt",
        "12+",
        "--tokens",
        "20",
    ]);
    assert!(out.status.success(), "sample failed: {}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("12+") && text.trim_end().chars().count() >= 20,
        "{text:?}"
    );
    // Both paths generated with their caches, each with its rate, and the texts compared.
    let said = stderr(&out);
    assert!(said.contains("GPU (") && said.contains("CPU ("), "{said}");
    assert_eq!(said.matches("tokens/s").count(), 3, "{said}");
    assert!(
        said.contains("generated the same 20 tokens") || said.contains("first differ at token"),
        "{said}"
    );
    // The CPU path alone prints the same text when the paths agreed.
    let cpu = flash(&[
        "sample",
        "--checkpoint",
        ckpt,
        "--prompt",
        "12+",
        "--tokens",
        "20",
        "--path",
        "cpu",
    ]);
    assert!(cpu.status.success(), "{}", stderr(&cpu));
    if said.contains("generated the same") {
        assert_eq!(String::from_utf8_lossy(&cpu.stdout), text);
    }
    let bad = flash(&["sample", "--checkpoint", ckpt, "--path", "tpu"]);
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("choose gpu, cpu or both"),
        "{}",
        stderr(&bad)
    );

    // Another preset is refused, naming the mismatch.
    let out = flash(&[
        "--bench", "--preset", "medium", "--steps", "1", "--resume", ckpt,
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("made for"), "{}", stderr(&out));

    // A flipped byte and a truncated file are refused, and the original is left alone.
    let bytes = std::fs::read(ckpt).unwrap();
    let mut flipped = bytes.clone();
    let at = flipped.len() / 2;
    flipped[at] ^= 0x40;
    let bad = dir.join("flipped.ckpt");
    std::fs::write(&bad, &flipped).unwrap();
    let out = flash(&["sample", "--checkpoint", bad.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("checksum"), "{}", stderr(&out));
    let short = dir.join("short.ckpt");
    std::fs::write(&short, &bytes[..bytes.len() / 3]).unwrap();
    let out = flash(&["sample", "--checkpoint", short.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("checkpoint"), "{}", stderr(&out));
    let text = dir.join("not-a-checkpoint.txt");
    std::fs::write(&text, "hello").unwrap();
    let out = flash(&["sample", "--checkpoint", text.to_str().unwrap()]);
    assert!(
        stderr(&out).contains("not a Kiln checkpoint"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(ckpt).unwrap(), bytes);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_data_files_are_refused_clearly() {
    let dir = scratch("data");
    let empty = dir.join("empty.txt");
    std::fs::write(&empty, "").unwrap();
    let binary = dir.join("binary.bin");
    std::fs::write(&binary, [0x7f, b'E', b'L', b'F', 0, 1, 2, 3]).unwrap();
    let latin1 = dir.join("latin1.txt");
    std::fs::write(&latin1, [b'c', b'a', b'f', 0xe9]).unwrap();
    let short = dir.join("short.txt");
    std::fs::write(&short, "just a few words").unwrap();
    let missing = dir.join("missing.txt");
    for (path, expect) in [
        (&empty, "is empty"),
        (&binary, "looks binary"),
        (&latin1, "not UTF-8"),
        (&short, "needs at least"),
        (&missing, "No such file"),
    ] {
        let out = flash(&[
            "--bench",
            "--steps",
            "1",
            "--no-sweep",
            "--data",
            path.to_str().unwrap(),
        ]);
        assert!(!out.status.success(), "{path:?} was accepted");
        let err = stderr(&out);
        assert!(err.contains(expect), "{path:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let out = flash(&["--bench", "--preset", "huge"]);
    assert!(stderr(&out).contains("unknown preset"), "{}", stderr(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_text_file_trains() {
    let dir = scratch("text");
    let path = dir.join("poem.txt");
    let line = "Tyger Tyger, burning bright, In the forests of the night; ";
    std::fs::write(&path, line.repeat(40)).unwrap();
    let out = flash(&[
        "--bench",
        "--steps",
        "3",
        "--json",
        "--threads",
        "1",
        "--data",
        path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let vocab = r["comparison"]["config"]["vocab"].as_u64().unwrap();
    let distinct = {
        let mut c: Vec<char> = line.chars().collect();
        c.sort_unstable();
        c.dedup();
        c.len() as u64
    };
    assert_eq!(vocab, distinct);
    assert_eq!(r["comparison"]["cpu"]["path"], "CPU (1 thread)");
    let _ = std::fs::remove_dir_all(&dir);
}
