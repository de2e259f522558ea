//! Helpers shared by the GPU test files.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::OnceLock;

use kiln::{Gpu, GpuOptions};
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
    assert!(
        err <= tol,
        "{case}: relative L2 error {err:.3e} over tolerance {tol:.0e} (first values got {:?}, want {:?})",
        &got[..got.len().min(4)],
        &want[..want.len().min(4)]
    );
}

pub fn read(t: &kiln::Tensor) -> Vec<f32> {
    pollster::block_on(t.read()).unwrap()
}
