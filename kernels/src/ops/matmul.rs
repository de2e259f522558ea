//! Batched matrix product on the GPU.

use crate::error::Result;
use crate::gpu::Dispatch;
use crate::select::{self, Choice, Request};
use crate::shape::MatmulDims;
use crate::tensor::Tensor;

use super::{check_no_alias, check_operands, check_out_shape, dtype_param};

const OP: &str = "matmul";

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    m: u32,
    n: u32,
    k: u32,
    batch: u32,
    stride_a: u32,
    stride_b: u32,
    stride_c: u32,
    b_trans: u32,
}

/// C = A · B for A [.., M, K] and B [.., K, N] (rank 2 or 3; a batch of 1 broadcasts).
pub fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let d = MatmulDims::new(a.shape(), b.shape())?;
    let c = Tensor::uninit(a.gpu(), &d.out_shape(a.shape(), b.shape()), a.dtype())?;
    matmul_into(a, b, &c, None)?;
    Ok(c)
}

/// C = A · Bᵀ for A [.., M, K] and B [.., N, K]: the transpose is read in place, never made.
pub fn matmul_bt(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let d = MatmulDims::new_bt(a.shape(), b.shape())?;
    let c = Tensor::uninit(a.gpu(), &d.out_shape(a.shape(), b.shape()), a.dtype())?;
    let (dispatch, _) = plan_bt(a, b, &c, None)?;
    a.gpu().submit(&[&dispatch]);
    Ok(c)
}

/// Writes A · B into `c`, with the named variant or the selector's choice.
pub fn matmul_into(a: &Tensor, b: &Tensor, c: &Tensor, named: Option<&str>) -> Result<Choice> {
    let (dispatch, choice) = plan(a, b, c, named)?;
    a.gpu().submit(&[&dispatch]);
    Ok(choice)
}

/// The variant the selector picks for these shapes on this device.
pub fn choose(a: &Tensor, b: &Tensor, named: Option<&str>) -> Result<Choice> {
    choose_layout(a, &MatmulDims::new(a.shape(), b.shape())?, false, named)
}

fn choose_layout(a: &Tensor, d: &MatmulDims, b_trans: bool, named: Option<&str>) -> Result<Choice> {
    let gpu = a.gpu();
    let software = gpu.profile().device_type == "cpu";
    // Rule (measured on the H200 and lavapipe, PERF.md): on a GPU the cooperative-matrix route
    // that loads straight from the buffers when it takes the shape (f16, multiples of 16; 2 × 2
    // fragments per subgroup, 4 × 4 when B is transposed), else the vec4 route unrolled; on a
    // software adapter the plain tiled route. Then the largest C tile that still gives enough
    // workgroups to fill the device — 128 on a GPU, 8 on a software adapter with a few CPU
    // cores — else the smallest tile; K staged 16 deep; 16 × 16 threads.
    let enough = if software { 8 } else { 128 };
    let groups = |t: usize| d.batch * d.m.div_ceil(t) * d.n.div_ceil(t);
    let target = [128, 64, 32, 16]
        .into_iter()
        .find(|&t| groups(t) >= enough)
        .unwrap_or(16) as i64;
    let route_rank = |v: &crate::registry::Variant| -> i64 {
        match (software, v.text("route"), v.flag("unroll")) {
            (true, "tiled", _) => 0,
            (true, _, _) => 1,
            (false, "coop_global", _) => 0,
            (false, "vec4", true) => 1,
            (false, "vec4", false) => 2,
            (false, "tiled", _) => 3,
            _ => 4,
        }
    };
    let coop_frags = if b_trans { 4 } else { 2 };
    let score = |v: &crate::registry::Variant| {
        let tile = v.int("tile");
        let size = if v.text("route") == "coop_global" {
            -100 * i64::from(v.int("reg") != coop_frags)
        } else {
            -100 * (tile.max(target) / tile.min(target).max(1))
        };
        -1000 * route_rank(v) + size - 10 * (v.int("tk") - 16).abs() - (16 - v.int("wg")).abs()
    };
    let request = Request {
        op: OP,
        fixed: vec![dtype_param(a)],
        bucket: bucket(d),
        fits: &|v| fits(v, d),
        score: &score,
        rule: "GPU: coop_global when it fits, else vec4 unrolled; software adapter: tiled; then the largest C tile with ≥ 128 workgroups (8 on a CPU adapter), K slice 16",
    };
    select::choose(gpu.registry(), gpu.profile(), gpu.tuned(), &request, named)
}

/// Whether `variant` takes a call of these dimensions: routes that load whole cooperative
/// fragments from the buffers need M, N and K to be multiples of 16.
pub fn fits(variant: &crate::registry::Variant, d: &MatmulDims) -> bool {
    super::sizes_fit(variant, &[d.m, d.n, d.k])
}

/// The tuned-table bucket of a call: each size rounded up to a power of two.
pub fn bucket(d: &MatmulDims) -> String {
    format!(
        "m{}_n{}_k{}",
        select::bucket(d.m),
        select::bucket(d.n),
        select::bucket(d.k)
    )
}

/// Checks the call and prepares its launch.
pub fn plan(a: &Tensor, b: &Tensor, c: &Tensor, named: Option<&str>) -> Result<(Dispatch, Choice)> {
    plan_with(
        a,
        b,
        c,
        named,
        MatmulDims::new(a.shape(), b.shape())?,
        false,
    )
}

/// [`plan`] for C = A · Bᵀ, B stored [.., N, K].
pub fn plan_bt(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    plan_with(
        a,
        b,
        c,
        named,
        MatmulDims::new_bt(a.shape(), b.shape())?,
        true,
    )
}

fn plan_with(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    named: Option<&str>,
    d: MatmulDims,
    b_trans: bool,
) -> Result<(Dispatch, Choice)> {
    check_operands(OP, &[a, b, c])?;
    check_out_shape(OP, c, &d.out_shape(a.shape(), b.shape()))?;
    check_no_alias(OP, c, &[a, b])?;
    let choice = choose_layout(a, &d, b_trans, named)?;
    let gpu = a.gpu();
    let tile = choice.variant.int("tile").max(1) as usize;
    let groups = super::grid(OP, gpu, [d.n.div_ceil(tile), d.m.div_ceil(tile), d.batch])?;
    let params = gpu.uniform(&Params {
        m: d.m as u32,
        n: d.n as u32,
        k: d.k as u32,
        batch: d.batch as u32,
        stride_a: d.stride_a as u32,
        stride_b: d.stride_b as u32,
        stride_c: d.stride_c as u32,
        b_trans: u32::from(b_trans),
    });
    let pipeline = gpu.pipeline(&choice.variant)?;
    let dispatch = Dispatch::new(
        gpu,
        pipeline,
        &[a.buffer(), b.buffer(), c.buffer(), &params],
        groups,
    );
    Ok((dispatch, choice))
}
