//! The `kiln` command as a user runs it on the adapter in hand (lavapipe in CI): bad input exits
//! non-zero with a message naming the problem; the kernel listing and a benchmark that agrees
//! with the CPU path.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

fn kiln(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(args)
        .env("NODEVICE_SELECT", "1")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A small grouped decoding shape (Hq 4 over Hkv 2, 300 cached keys, D 64).
const DECODE: &[&str] = &[
    "bench", "decode", "--hq", "4", "--hkv", "2", "--n", "300", "--d", "64",
];

#[test]
fn cli_bad_input_exits_non_zero_with_a_message() {
    let cases: [(&[&str], &str); 8] = [
        (
            &["bench", "replay", "--repeats", "0"],
            "--repeats must be at least 1",
        ),
        (
            &["bench", "matmul", "--m", "0", "--n", "4", "--k", "4"],
            "is empty",
        ),
        (
            &[
                "bench", "matmul", "--m", "4", "--n", "4", "--k", "4", "--dtype", "f64",
            ],
            "`f64` is not a dtype",
        ),
        (
            &[
                "--without",
                "f16",
                "bench",
                "matmul",
                "--m",
                "4",
                "--n",
                "4",
                "--k",
                "4",
                "--dtype",
                "f16",
            ],
            "SHADER_F16",
        ),
        (
            &[
                "bench",
                "matmul",
                "--m",
                "4",
                "--n",
                "4",
                "--k",
                "4",
                "--variant",
                "nope",
            ],
            "unknown kernel matmul/nope",
        ),
        (
            &[DECODE, &["--variant", "nope"]].concat(),
            "unknown kernel flash_decode/nope",
        ),
        (
            &["kernels", "--render", "matmul", "nope"],
            "unknown kernel matmul/nope",
        ),
        (
            &["kernels", "--profile", "/nonexistent.json"],
            "not a stored profile name",
        ),
    ];
    for (args, expected) in cases {
        let (code, _, err) = kiln(args);
        assert_ne!(code, 0, "{args:?} should fail");
        assert!(err.contains(expected), "{args:?}: stderr {err}");
        assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    }
    // Over the adapter's storage-binding limit (as `kiln info` reports it): refused before any
    // allocation.
    let (code, info, err) = kiln(&["info", "--json"]);
    assert_eq!(code, 0, "{err}");
    let info: serde_json::Value = serde_json::from_str(&info).unwrap();
    let limit = info["limits"]["max_storage_buffer_binding_size"]
        .as_u64()
        .unwrap_or_else(|| panic!("no storage-binding limit in {info}"));
    let side = ((limit / 4) as f64).sqrt() as usize + 1;
    let s = side.to_string();
    let (code, _, err) = kiln(&["bench", "matmul", "--m", &s, "--n", &s, "--k", &s]);
    assert_ne!(code, 0);
    assert!(
        err.contains("over the device limit max_storage_buffer_binding_size"),
        "{err}"
    );
}

#[test]
fn cli_lists_kernels_and_benchmarks_within_tolerance() {
    let (code, out, err) = kiln(&["kernels"]);
    assert_eq!(code, 0, "{err}");
    println!("{}", out.lines().last().unwrap_or(""));
    let (code, out, err) = kiln(&[
        "bench",
        "matmul",
        "--m",
        "33",
        "--n",
        "7",
        "--k",
        "130",
        "--repeats",
        "3",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["rel_l2_error"].as_f64().unwrap() < 1e-5, "{out}");
    assert!(v["gpu"]["median_ms"].as_f64().unwrap() > 0.0);
    assert!(v["cpu"]["median_ms"].as_f64().unwrap() > 0.0);
    assert!(["gpu_timestamps", "wall_clock"].contains(&v["gpu"]["clock"].as_str().unwrap()));

    // A weight gradient's form (A stored transposed) with K cut in 3: each run is checked
    // against the CPU reference (the command fails on a wrong one) and named for its cut.
    let (code, out, err) = kiln(&[
        "bench",
        "matmul",
        "--m",
        "37",
        "--n",
        "21",
        "--k",
        "200",
        "--at",
        "--bt",
        "--variant",
        "f32_wg8_r4_k16",
        "--splits",
        "3",
        "--repeats",
        "2",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let runs: Vec<&str> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["variant"].as_str().unwrap())
        .collect();
    assert!(runs.contains(&"f32_wg8_r4_k16/split3"), "{runs:?}");
    assert!(v["a_transposed"].as_bool().unwrap() && v["b_transposed"].as_bool().unwrap());
    // A sweep times the plain products offered for the dtype: no epilogue variant (which
    // does not take a call without its epilogue) is among them.
    let (code, out, err) = kiln(&[
        "bench",
        "matmul",
        "--m",
        "9",
        "--n",
        "7",
        "--k",
        "5",
        "--sweep",
        "--repeats",
        "1",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let runs = v["runs"].as_array().unwrap();
    assert!(runs.len() > 2, "{out}");
    assert!(
        runs.iter()
            .all(|r| r["variant"].as_str().unwrap().starts_with("f32_")
                && !r["variant"].as_str().unwrap().contains("_bias")),
        "{out}"
    );
    // Flash-decoding with a named split variant: that variant is timed, after its check
    // against the CPU reference (the command fails on a wrong one).
    let named = [
        DECODE,
        &[
            "--dtype",
            "f32",
            "--variant",
            "f32_d64_r4_c256",
            "--repeats",
            "2",
            "--cpu-budget",
            "0.1",
            "--json",
        ],
    ]
    .concat();
    let (code, out, err) = kiln(&named);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["variants"]["split"], "f32_d64_r4_c256", "{out}");
    // Measured 3.9e-7 on lavapipe.
    assert!(v["rel_l2_error"].as_f64().unwrap() < 3e-6, "{out}");
    // A replayed chain's host cost: checked against the CPU path first (off it, the command fails
    // before timing), then each setting timed from the device's counters.
    let (code, out, err) = kiln(&[
        "bench",
        "replay",
        "--n",
        "20",
        "--layers",
        "2",
        "--busy-n",
        "40",
        "--warmup",
        "1",
        "--repeats",
        "3",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["launches"], 8, "{out}");
    let settings = v["settings"].as_array().unwrap();
    assert_eq!(settings.len(), 2, "{out}");
    for s in settings {
        assert!(s["encode_us_per_launch"].as_f64().unwrap() > 0.0, "{out}");
        assert!(
            s["queue_submit_us_per_submission"].as_f64().is_some(),
            "{out}"
        );
        assert!(s["submissions"].as_u64().unwrap() >= 1, "{out}");
    }
    let (code, _, err) = kiln(&[
        "bench", "matmul", "--m", "4", "--n", "4", "--k", "4", "--splits", "0",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("--splits takes counts of at least 1"), "{err}");
}

/// A reader that stops early (`kiln info --json | grep -q …`, `| head -1`) closes the pipe:
/// kiln ends quietly and successfully, no panic, whether the pipe closes before it writes
/// (`info`, which opens the adapter first) or while it writes (`kernels`, pages of output).
#[test]
fn a_closed_pipe_ends_the_command_quietly() {
    use std::io::Read;
    use std::process::Stdio;

    for args in [
        &["info", "--json"][..],
        &["kernels", "--profile", "webgpu-defaults"][..],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kiln"))
            .args(args)
            .env("NODEVICE_SELECT", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reader goes away at once: every write kiln makes fails with a broken pipe.
        drop(child.stdout.take());
        let status = child.wait().unwrap();
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "kiln {args:?}: {stderr}"
        );
        assert!(status.success(), "kiln {args:?} exited {status}: {stderr}");
    }
}
