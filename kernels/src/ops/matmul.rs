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
    _pad: u32,
}

/// C = A · B for A [.., M, K] and B [.., K, N] (rank 2 or 3; a batch of 1 broadcasts).
pub fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let d = MatmulDims::new(a.shape(), b.shape())?;
    let c = Tensor::uninit(a.gpu(), &d.out_shape(a.shape(), b.shape()), a.dtype())?;
    matmul_into(a, b, &c, None)?;
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
    let d = MatmulDims::new(a.shape(), b.shape())?;
    let gpu = a.gpu();
    // Rule: the largest C tile that still gives enough workgroups to fill the device — 128 on
    // a GPU (on the H200, 128² tiles beat 64² at 2048³ and on the waves frame, and lose at
    // 1024³ where they leave 64 workgroups), 8 on a software adapter with a few CPU cores —
    // else the smallest tile; K staged 16 deep; 16 × 16 threads.
    let enough = if gpu.profile().device_type == "cpu" {
        8
    } else {
        128
    };
    let groups = |t: usize| d.batch * d.m.div_ceil(t) * d.n.div_ceil(t);
    let target = [128, 64, 32, 16]
        .into_iter()
        .find(|&t| groups(t) >= enough)
        .unwrap_or(16) as i64;
    let score = |v: &crate::registry::Variant| {
        let tile = v.int("tile");
        -100 * (tile.max(target) / tile.min(target).max(1))
            - 10 * (v.int("tk") - 16).abs()
            - (16 - v.int("wg")).abs()
    };
    let request = Request {
        op: OP,
        fixed: vec![dtype_param(a)],
        bucket: bucket(&d),
        fits: &|_| true,
        score: &score,
        rule: "largest C tile (16..128) with ≥ 128 workgroups (8 on a CPU adapter), K slice 16, 16×16 threads",
    };
    select::choose(gpu.registry(), gpu.profile(), gpu.tuned(), &request, named)
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
    check_operands(OP, &[a, b, c])?;
    let d = MatmulDims::new(a.shape(), b.shape())?;
    check_out_shape(OP, c, &d.out_shape(a.shape(), b.shape()))?;
    check_no_alias(OP, c, &[a, b])?;
    let choice = choose(a, b, named)?;
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
        _pad: 0,
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
