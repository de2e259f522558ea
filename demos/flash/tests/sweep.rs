//! The kernel sweep in f16, as the browser's page runs it where the adapter has shader-f16:
//! the flash and naive GPU paths on f16 tensors against the CPU path on the same inputs rounded
//! to f16, with the byte model in f16. On an adapter without shader-f16 this is a skip.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use flash::page::{SHAPE, page_shape};
use flash::sweep;
use kiln_app::kiln::{DType, Gpu, GpuOptions};

#[test]
fn the_sweep_runs_in_f16_where_the_adapter_has_it() {
    let gpu = pollster::block_on(Gpu::new(&GpuOptions::default())).unwrap();
    if !gpu.profile().features.shader_f16 {
        kiln_testing::skip(&format!("{} has no shader-f16", gpu.profile().name));
        return;
    }
    let shape = page_shape(&gpu);
    assert_eq!(shape.dtype, DType::F16);
    // Lengths that are no tile multiples, and the page's shortest.
    let s = pollster::block_on(sweep::run(&gpu, shape, &[40, 64], 1, 60_000.0)).unwrap();
    let f32_bytes = sweep::Bytes::of(SHAPE, 64).unwrap();
    for p in &s.points {
        let (flash, naive) = (p.flash_rel_l2.unwrap(), p.naive_rel_l2.unwrap());
        println!(
            "f16 sweep N {}: relative L2 flash {flash:.2e}, naive {naive:.2e}",
            p.seq
        );
        // f16's rounding of the activations and gradients, the worst of O, dQ, dK and dV:
        // measured on lavapipe flash 2.30e-4 to 2.35e-4, naive 4.18e-4 to 4.29e-4.
        assert!(flash <= 2e-3 && naive <= 4e-3, "{p:?}");
        assert!(p.flash_mb > 0.0 && p.naive_mb > p.flash_mb, "{p:?}");
    }
    // Half the bytes of f32 for the same shape, where each element moves as f16.
    let at64 = s.points.last().unwrap();
    assert!(
        at64.flash_mb < 0.75 * f32_bytes.flash_mb,
        "{at64:?} against {f32_bytes:?}"
    );
    assert!(
        s.flash_variants.iter().all(|v| v.contains(" f16_")),
        "{:?}",
        s.flash_variants
    );
}
