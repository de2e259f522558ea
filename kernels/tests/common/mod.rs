//! Helpers shared by the GPU test files.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::OnceLock;

use kiln::cpu::Array;
use kiln::tensor::round_to_f16;
use kiln::{DType, Gpu, GpuOptions, Tensor};
use rand::{Rng, SeedableRng, rngs::StdRng};

/// The one device every GPU test shares (lavapipe in CI). No adapter is a failure, never a
/// skip: a GPU test that does not run must not be reported as passing.
pub fn gpu() -> &'static Gpu {
    static GPU: OnceLock<Gpu> = OnceLock::new();
    GPU.get_or_init(|| {
        let gpu = pollster::block_on(Gpu::new(&GpuOptions::default())).unwrap_or_else(|e| {
            panic!("GPU tests need an adapter (Mesa lavapipe in CI: apt install mesa-vulkan-drivers): {e}")
        });
        eprintln!(
            "GPU tests on adapter: {} ({}, {})",
            gpu.profile().name,
            gpu.profile().backend,
            gpu.profile().device_type
        );
        gpu
    })
}

/// Values uniform in [-1, 1) from a seeded generator: fresh per test, never zeros.
pub fn random(seed: u64, n: usize) -> Vec<f32> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

/// Relative L2 tolerance by dtype: f32 results agree closely; f16 outputs are rounded to
/// 11 significant bits.
pub fn tolerance(dtype: kiln::DType) -> f64 {
    match dtype {
        kiln::DType::F32 | kiln::DType::U32 => 1e-5,
        kiln::DType::F16 => 3e-3,
    }
}

/// Fails with a message naming the case when `got` is not within `tol` of `want`.
pub fn assert_close(case: &str, got: &[f32], want: &[f32], tol: f64) {
    let err = kiln::cpu::rel_l2(got, want);
    // KILN_PRINT_ERRORS=1 lists every error beside its bound, to set bounds from measurement.
    if std::env::var_os("KILN_PRINT_ERRORS").is_some() {
        println!("close: {case}: {err:.3e} (allowed {tol:.0e})");
    }
    assert!(
        err <= tol,
        "{case}: relative L2 error {err:.3e} over tolerance {tol:.0e} (first values got {:?}, want {:?})",
        &got[..got.len().min(4)],
        &want[..want.len().min(4)]
    );
}

/// The family of each of a plan's launches, in order.
pub fn families(plan: &kiln::Plan) -> Vec<String> {
    let of = |k: &String| k.split('/').next().unwrap().to_string();
    plan.kernels().iter().map(of).collect()
}

pub fn read(t: &kiln::Tensor) -> Vec<f32> {
    pollster::block_on(t.read()).unwrap()
}

/// Random data scaled by `gain` as the GPU will hold it (f16-rounded for f16), its tensor, and
/// its CPU array.
pub fn scaled_input(seed: u64, shape: &[usize], gain: f32, dtype: DType) -> (Tensor, Array) {
    let mut data: Vec<f32> = random(seed, shape.iter().product())
        .into_iter()
        .map(|v| v * gain)
        .collect();
    if dtype == DType::F16 {
        data = round_to_f16(&data);
    }
    let t = Tensor::from_slice(gpu(), shape, &data, dtype).unwrap();
    (t, Array::new(shape, data).unwrap())
}

/// A device of a test's own, for a test that counts its launches or folds the newest one
/// (other tests' launches on the shared device would interleave).
pub fn own_gpu() -> Gpu {
    pollster::block_on(Gpu::new(&GpuOptions::default())).unwrap()
}

/// Random f32 data of `shape` on `gpu` (a test's own device), its tensor and its CPU array.
pub fn input_on(gpu: &Gpu, seed: u64, shape: &[usize]) -> (Tensor, Array) {
    let data = random(seed, shape.iter().product());
    let t = Tensor::from_slice(gpu, shape, &data, DType::F32).unwrap();
    (t, Array::new(shape, data).unwrap())
}

/// [`scaled_input`] at gain 1.
pub fn input(seed: u64, shape: &[usize], dtype: DType) -> (Tensor, Array) {
    scaled_input(seed, shape, 1.0, dtype)
}

/// An output filled with NaN, so that an element no kernel writes fails the comparison.
pub fn poisoned(shape: &[usize], dtype: DType) -> Tensor {
    Tensor::full(gpu(), shape, f32::NAN, dtype).unwrap()
}

/// The variants of a family for a dtype on the test adapter; none is a failure, never a skip.
pub fn variants(family: &str, dtype: DType) -> Vec<kiln::Variant> {
    let vs: Vec<kiln::Variant> = gpu()
        .registry()
        .supported(family, gpu().profile())
        .unwrap()
        .filter(|v| v.text("dtype").unwrap() == dtype.wgsl())
        .cloned()
        .collect();
    assert!(
        !vs.is_empty(),
        "no {family} variant for {dtype:?} on this adapter"
    );
    vs
}

/// Compares the crate's file at `relative` with `now`, the text a test generates;
/// `KILN_UPDATE_SNAPSHOTS=1` writes `now` there instead.
pub fn check_file(relative: &str, now: &str) {
    let file = relative;
    let path = format!("{}/{relative}", env!("CARGO_MANIFEST_DIR"));
    if std::env::var_os("KILN_UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, now).unwrap();
        return;
    }
    let pinned = std::fs::read_to_string(&path).unwrap_or_default();
    assert_pinned(file, &pinned, now);
}

/// Fails, listing the changed lines, when `now` is not the `pinned` text of `what`.
fn assert_pinned(what: &str, pinned: &str, now: &str) {
    let changed: Vec<String> = now
        .lines()
        .zip(pinned.lines())
        .filter(|(a, b)| a != b)
        .map(|(a, b)| format!("  pinned: {b}\n  now:    {a}"))
        .collect();
    assert!(
        changed.is_empty() && now.lines().count() == pinned.lines().count(),
        "{what}: {} lines changed ({} lines now, {} pinned); review, then KILN_UPDATE_SNAPSHOTS=1:\n{}",
        changed.len(),
        now.lines().count(),
        pinned.lines().count(),
        changed.join("\n")
    );
}

/// The header of a family's `snapshot.txt`.
const SNAPSHOT_HEADER: &str = "\
# What each stored profile is offered of this family, and the selector's picks for the sample
# calls (kiln::explain) on each: pinned by tests/templates.rs ([offered]) and tests/picks.rs
# ([picks]), so a change to a contract, a rule or the tuned table shows up as a diff to review.
# KILN_UPDATE_SNAPSHOTS=1 rewrites a section.
";

/// Compares section `[name]` of `families/<family>/snapshot.txt` (from its `[name]` line to the
/// next `[…]` line) with `now`, the text a test generates; `KILN_UPDATE_SNAPSHOTS=1` writes it
/// there instead (the file and the section made where missing). Everything a family pins lives
/// in its folder, so a new family touches nothing outside it.
pub fn check_family_snapshot(family: &str, name: &str, now: &str) {
    let relative = format!("families/{family}/snapshot.txt");
    let path = format!("{}/{relative}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let mut sections: Vec<(String, String)> = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        match line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            Some(section) => sections.push((section.to_string(), String::new())),
            None => {
                if let Some((_, body)) = sections.last_mut() {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    let pinned = sections
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, b)| b.clone())
        .unwrap_or_default();
    if std::env::var_os("KILN_UPDATE_SNAPSHOTS").is_some() {
        match sections.iter_mut().find(|(n, _)| n == name) {
            Some((_, body)) => *body = now.to_string(),
            None => sections.push((name.to_string(), now.to_string())),
        }
        sections.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out = SNAPSHOT_HEADER.to_string();
        for (n, body) in &sections {
            out.push_str(&format!("[{n}]\n{body}"));
        }
        std::fs::write(&path, out).unwrap();
        return;
    }
    assert_pinned(&format!("{relative} [{name}]"), &pinned, now);
}
