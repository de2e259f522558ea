//! Elementwise addition with broadcasting on the GPU.

use crate::error::Result;
use crate::gpu::Dispatch;
use crate::select::{self, Choice, Request};
use crate::shape::Broadcast;
use crate::tensor::Tensor;

use super::{check_no_alias, check_operands, check_out_shape, dtype_param};

const OP: &str = "add";

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    count: u32,
    _pad: [u32; 3],
    shape: [u32; 4],
    stride_a: [u32; 4],
    stride_b: [u32; 4],
}

/// C = A + B, broadcasting numpy-style (rank ≤ 4).
pub fn add(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let bc = Broadcast::new(OP, a.shape(), b.shape())?;
    let c = Tensor::uninit(a.gpu(), &bc.shape, a.dtype())?;
    add_into(a, b, &c, None)?;
    Ok(c)
}

/// Writes A + B into `c`, with the named variant or the selector's choice.
pub fn add_into(a: &Tensor, b: &Tensor, c: &Tensor, named: Option<&str>) -> Result<Choice> {
    let (dispatch, choice) = plan(a, b, c, named)?;
    a.gpu().submit(&[&dispatch]);
    Ok(choice)
}

/// The variant the selector picks for these shapes on this device.
pub fn choose(a: &Tensor, b: &Tensor, named: Option<&str>) -> Result<Choice> {
    let bc = Broadcast::new(OP, a.shape(), b.shape())?;
    let same = bc.is_same_shape(a.shape(), b.shape());
    let count = a.numel().max(b.numel());
    let fits = |v: &crate::registry::Variant| match v.text("form") {
        "contiguous" => same,
        "vec4" => same && count.is_multiple_of(4),
        _ => true,
    };
    let score = |v: &crate::registry::Variant| {
        let form = match v.text("form") {
            "vec4" => 2,
            "contiguous" => 1,
            _ => 0,
        };
        form * 1000 + v.int("wg")
    };
    let request = Request {
        op: OP,
        fixed: vec![dtype_param(a)],
        bucket: format!("n{}", select::bucket(bc.shape.iter().product())),
        fits: &fits,
        score: &score,
        rule: "vec4 when shapes match and the count divides by 4, else contiguous, else broadcast; 256 threads",
    };
    let gpu = a.gpu();
    select::choose(gpu.registry(), gpu.profile(), gpu.tuned(), &request, named)
}

/// Checks the call and prepares its launch.
pub fn plan(a: &Tensor, b: &Tensor, c: &Tensor, named: Option<&str>) -> Result<(Dispatch, Choice)> {
    check_operands(OP, &[a, b, c])?;
    let bc = Broadcast::new(OP, a.shape(), b.shape())?;
    check_out_shape(OP, c, &bc.shape)?;
    check_no_alias(OP, c, &[a, b])?;
    let choice = choose(a, b, named)?;
    let gpu = a.gpu();
    let lanes = if choice.variant.text("form") == "vec4" {
        4
    } else {
        1
    };
    let count = (c.numel() / lanes) as u64;
    let wg = choice.variant.int("wg").max(1) as u64;
    let groups = gpu.groups(OP, count.div_ceil(wg))?;
    let as_u32 = |x: [usize; 4]| x.map(|v| v as u32);
    let params = gpu.uniform(&Params {
        count: count as u32,
        _pad: [0; 3],
        shape: as_u32(bc.shape4),
        stride_a: as_u32(bc.stride_a),
        stride_b: as_u32(bc.stride_b),
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
