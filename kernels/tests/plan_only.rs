//! The plan-only path (`kiln::ChoiceBackend`) against the GPU path: the same model code, the
//! same fusion rules. A transformer layer run through both must list the same kernels, launch
//! for launch — recorded as it comes, and captured with its reads known (attention chains into
//! flash launches, and feed-forward blocks where asked) — so a page without an adapter shows the
//! kernels a device would run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use kiln::choices::{CallLaunches, ShapeTensor};
use kiln::cpu::Array;
use kiln::fusion::Rewrites;
use kiln::registry::Registry;
use kiln::select::{Selector, TunedTable};
use kiln::{Backend, ChoiceBackend, DType, GpuBackend, Result};

/// One transformer layer's weights on a path.
struct Layer<T> {
    g0: T,
    b0: T,
    wqkv: T,
    bqkv: T,
    wo: T,
    bo: T,
    g1: T,
    b1: T,
    w1: T,
    c1: T,
    w2: T,
    c2: T,
    g2: T,
    b2: T,
}

fn weights<B: Backend>(b: &B, width: usize, hidden: usize) -> Result<Layer<B::T>> {
    let mut seed = 10;
    let mut up = |shape: &[usize]| {
        seed += 1;
        let n = shape.iter().product();
        b.upload(&Array::new(shape, common::random(seed, n))?)
    };
    Ok(Layer {
        g0: up(&[width])?,
        b0: up(&[width])?,
        wqkv: up(&[width, 3 * width])?,
        bqkv: up(&[3 * width])?,
        wo: up(&[width, width])?,
        bo: up(&[width])?,
        g1: up(&[width])?,
        b1: up(&[width])?,
        w1: up(&[width, hidden])?,
        c1: up(&[hidden])?,
        w2: up(&[hidden, width])?,
        c2: up(&[width])?,
        g2: up(&[width])?,
        b2: up(&[width])?,
    })
}

/// A pre-norm transformer layer over `x` [N, width], written once for every path.
fn layer<B: Backend>(b: &B, x: &B::T, w: &Layer<B::T>, heads: usize, causal: bool) -> Result<B::T> {
    let width = b.shape(x)[1];
    let scale = 1.0 / ((width / heads) as f32).sqrt();
    let h = b.layernorm(x, &w.g0, &w.b0, 1e-5)?;
    let qkv = b.linear(&h, &w.wqkv, &w.bqkv)?;
    let [q, k, v] = b.split_heads_qkv(&qkv, heads)?;
    let p = b.softmax(&b.matmul_bt(&q, &k)?, causal, scale)?;
    let o = b.merge_heads(&b.matmul(&p, &v)?)?;
    let (_, h1) = b.add_layernorm(&b.linear(&o, &w.wo, &w.bo)?, x, &w.g1, &w.b1, 1e-5)?;
    let u = b.linear_gelu(&h1, &w.w1, &w.c1)?;
    let (_, out) = b.add_layernorm(&b.linear(&u, &w.w2, &w.c2)?, &h1, &w.g2, &w.b2, 1e-5)?;
    Ok(out)
}

/// `family/variant` of each of a plan-only run's launches.
fn labels(launches: &[kiln::Choice]) -> Vec<String> {
    let label = |c: &kiln::Choice| format!("{}/{}", c.variant.family, c.variant.name);
    launches.iter().map(label).collect()
}

/// The shapes the layer runs at: a short text, one that is not a tile multiple, causal or not.
const SHAPES: [(usize, usize, usize, bool); 3] =
    [(17, 64, 4, false), (70, 64, 2, true), (9, 32, 2, false)];

#[test]
fn a_layer_lists_the_gpu_paths_kernels_recorded_and_fused() -> Result<()> {
    let gpu = common::gpu();
    let path = GpuBackend { gpu: gpu.clone() };
    // Whether the shapes reached: a chain fused, a block fused, Q/K/V written into heads by
    // their product, a cut product's sum taken by the norm after it.
    let mut reached = [false; 4];
    for (n, width, heads, causal) in SHAPES {
        for rewrites in [
            None,
            Some(Rewrites::default()),
            Some(Rewrites { feed_forward: true }),
        ] {
            let what =
                format!("N {n}, width {width}, {heads} heads, causal {causal}, {rewrites:?}");
            let w = weights(&path, width, 4 * width)?;
            let x = path.upload(&Array::new(&[n, width], common::random(3, n * width))?)?;
            let build = || layer(&path, &x, &w, heads, causal);
            let (gpu_kernels, gpu_fused) = match rewrites {
                None => (gpu.capture(build)?.0.kernels().to_vec(), None),
                Some(r) => {
                    let (plan, _, fused) =
                        kiln::fusion::capture_reading_with(gpu, r, build, |out| vec![out.clone()])?;
                    (plan.kernels().to_vec(), Some(fused))
                }
            };
            let plan = ChoiceBackend::new(gpu.selector());
            let w = weights(&plan, width, 4 * width)?;
            let x = ShapeTensor::new(&[n, width], DType::F32);
            let out = layer(&plan, &x, &w, heads, causal)?;
            let plan_fused = rewrites.map(|r| plan.fuse_reading(r, &[&out]));
            assert_eq!(labels(&plan.launches()), gpu_kernels, "{what}");
            assert_eq!(plan_fused, gpu_fused, "{what}");
            if let Some(f) = plan_fused {
                reached[0] |= f.attention > 0;
                reached[1] |= f.feed_forward > 0;
            }
            reached[2] |= gpu_kernels.iter().any(|k| k.ends_with("_bias_and_heads"));
            reached[3] |= gpu_kernels
                .iter()
                .any(|k| k.starts_with("reduce_layernorm/"));
        }
    }
    // The shapes exercise every kind of fusion (the causal chain among them), not only its
    // refusals.
    assert_eq!(reached, [true; 4]);
    Ok(())
}

/// What a selector for the stored profile `name` borrows.
fn stored(name: &str) -> (Registry, kiln::DeviceProfile, TunedTable) {
    let (_, profile) = kiln::device::stored_profiles()
        .unwrap()
        .into_iter()
        .find(|(n, _)| *n == name)
        .unwrap();
    (
        Registry::builtin().unwrap(),
        profile,
        TunedTable::builtin().unwrap(),
    )
}

fn shaped(shape: &[usize]) -> ShapeTensor {
    ShapeTensor::new(shape, DType::F32)
}

#[test]
fn a_linear_layer_is_one_product_and_bad_shapes_are_errors() -> Result<()> {
    let (registry, profile, tuned) = stored("webgpu-defaults");
    let b = ChoiceBackend::new(Selector::new(&registry, &profile, &tuned));
    let y = b.linear(&shaped(&[2, 5, 8]), &shaped(&[8, 12]), &shaped(&[12]))?;
    assert_eq!(y.shape, [2, 5, 12]);
    let made = b.made();
    assert_eq!(made.len(), 1);
    assert_eq!(made[0].op, "linear");
    assert_eq!(made[0].launches[0].variant.family, "matmul");
    let epilogue = made[0].launches[0]
        .variant
        .get("epilogue")
        .map(|e| e.to_string());
    assert_eq!(epilogue, Some("bias".into()));

    assert!(b.matmul(&shaped(&[4, 3]), &shaped(&[4, 3])).is_err());
    assert!(
        b.linear(&shaped(&[4, 8]), &shaped(&[8, 12]), &shaped(&[11]))
            .is_err()
    );
    assert!(b.reshape(&shaped(&[4, 3]), &[5, 2]).is_err());
    let refused = b.layernorm_backward(&shaped(&[4]), &shaped(&[4]), &shaped(&[4]), 1e-5);
    assert!(
        matches!(&refused, Err(e) if e.to_string().contains("not modelled")),
        "{refused:?}"
    );
    assert_eq!(b.made().len(), 1, "a refused call records nothing");
    Ok(())
}

/// As the GPU path folds: a gelu, or a split into heads, of the product just made takes that
/// product's launch; of anything else, a launch of its own.
#[test]
fn the_op_after_the_newest_product_rides_on_its_launch() -> Result<()> {
    let (registry, profile, tuned) = stored("lavapipe");
    let b = ChoiceBackend::new(Selector::new(&registry, &profile, &tuned));
    let u = b.matmul(&shaped(&[64, 32]), &shaped(&[32, 128]))?;
    b.gelu(&u)?;
    b.gelu(&shaped(&[64, 128]))?;
    let made = b.made();
    let epilogue = |m: &CallLaunches| m.launches[0].variant.get("epilogue").map(|e| e.to_string());
    assert_eq!(epilogue(&made[0]), Some("bias_and_gelu".into()));
    assert!(made[1].launches.is_empty(), "{:?}", made[1]);
    assert_eq!(made[2].launches[0].variant.family, "gelu");

    // Q, K and V split into heads by the product that makes them; a swap into heads of a
    // batched product's output stays a launch of its own.
    let qkv = b.linear(&shaped(&[10, 16]), &shaped(&[16, 24]), &shaped(&[24]))?;
    b.split_qkv(&qkv, [2, 5, 2, 2, 4])?;
    let o = b.matmul(&shaped(&[2, 5, 4]), &shaped(&[2, 4, 8]))?;
    b.swap12(&b.reshape(&o, &[2, 5, 2, 4])?)?;
    // A product viewed with other rows ([6, 4] as [2, 2, 3, 2]) keeps its swap.
    let c = b.matmul(&shaped(&[6, 8]), &shaped(&[8, 4]))?;
    b.swap12(&b.reshape(&c, &[2, 2, 3, 2])?)?;
    let made = b.made();
    assert_eq!(epilogue(&made[3]), Some("bias_and_heads".into()));
    assert!(made[4].launches.is_empty(), "{:?}", made[4]);
    assert_eq!(made[6].launches[0].variant.family, "swap_axes");
    assert_eq!(epilogue(&made[7]), Some("none".into()));
    assert_eq!(made[8].launches[0].variant.family, "swap_axes");
    // An elementwise op with nothing to ride on (silu has no product epilogue) launches its own.
    let s = b.matmul(&shaped(&[8, 8]), &shaped(&[8, 8]))?;
    b.elementwise(kiln::ElementOp::Silu, &[&s])?;
    let made = b.made();
    assert_eq!(made[10].launches[0].variant.family, "silu");
    Ok(())
}
