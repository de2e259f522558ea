//! Batched matrix product on the GPU, with either operand read transposed in place and an
//! optional epilogue (bias, bias + gelu) applied as C is stored.

use crate::contract::Param;
use crate::device::DeviceProfile;
use crate::error::Result;
use crate::gpu::Dispatch;
use crate::registry::Variant;
use crate::select::{self, Choice, Key, Request, filter, prefer};
use crate::shape::MatmulDims;
use crate::tensor::{DType, Tensor};

use super::{check_no_alias, check_operands, check_out_shape, dtype_value, software};

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
    a_trans: u32,
    _pad: [u32; 3],
}

/// What happens to C as it is stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Epilogue {
    #[default]
    None,
    /// C + bias[col].
    Bias,
    /// gelu(C + bias[col]), the exact (erf) gelu.
    BiasGelu,
}

impl Epilogue {
    /// The template's `epilogue` value.
    pub fn name(self) -> &'static str {
        match self {
            Epilogue::None => "none",
            Epilogue::Bias => "bias",
            Epilogue::BiasGelu => "bias_gelu",
        }
    }
}

/// How A and B are stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Layout {
    /// A stored [.., K, M]: C = Aᵀ · B.
    pub a_trans: bool,
    /// B stored [.., N, K]: C = A · Bᵀ.
    pub b_trans: bool,
}

/// A matmul call as the selector sees it.
#[derive(Clone, Copy, Debug)]
pub struct Call {
    pub dtype: DType,
    pub dims: MatmulDims,
    pub layout: Layout,
    pub epilogue: Epilogue,
}

impl Call {
    /// C = A · B of these sizes, no epilogue.
    pub fn new(dtype: DType, batch: usize, m: usize, n: usize, k: usize) -> Call {
        Call {
            dtype,
            dims: MatmulDims {
                batch,
                m,
                k,
                n,
                stride_a: m * k,
                stride_b: k * n,
                stride_c: m * n,
            },
            layout: Layout::default(),
            epilogue: Epilogue::None,
        }
    }
}

impl select::Call for Call {
    fn key(&self) -> Key {
        let d = &self.dims;
        let flags = u32::from(self.layout.a_trans)
            | u32::from(self.layout.b_trans) << 1
            | (self.epilogue as u32) << 2;
        Key::new(OP, self.dtype, &[d.batch, d.m, d.n, d.k], flags)
    }

    /// On a GPU the cooperative-matrix route that loads straight from the buffers when it
    /// takes the shape (f16, multiples of 16), else the vec4 route unrolled; on a software
    /// adapter the plain tiled route (measured on the H200 and lavapipe, PERF.md). Then the C
    /// tile nearest the largest that still gives enough workgroups to fill the device (128 on a
    /// GPU, 8 on a software adapter with a few cores) — for coop_global 2 × 2 fragments per
    /// subgroup (4 × 4 when B is transposed) — the K slice nearest 16, and 16 × 16 threads.
    fn request(&self, profile: &DeviceProfile) -> Request<'_> {
        let d = self.dims;
        let software = software(profile);
        let enough = if software { 8 } else { 128 };
        let groups = |t: usize| d.batch * d.m.div_ceil(t) * d.n.div_ceil(t);
        let target = [128, 64, 32, 16]
            .into_iter()
            .find(|&t| groups(t) >= enough)
            .unwrap_or(16) as i64;
        let coop_frags = if self.layout.b_trans { 4 } else { 2 };
        let route_rank = move |v: &Variant| -> i64 {
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
        Request {
            op: OP,
            fixed: vec![
                dtype_value(self.dtype),
                ("epilogue", Param::Str(self.epilogue.name().into())),
            ],
            bucket: bucket(&d),
            filters: vec![filter(
                "coop_global needs M, N and K multiples of 16",
                move |v| fits(v, &d),
            )],
            order: vec![
                prefer(
                    "GPU: coop_global, vec4 unrolled, vec4, tiled; software adapter: tiled",
                    move |v| -route_rank(v),
                ),
                prefer(
                    "the C tile nearest the largest with ≥ 128 workgroups (8 on a software adapter); coop_global: 2 × 2 fragments a subgroup (4 × 4 with B transposed)",
                    move |v| {
                        let tile = v.int("tile");
                        if v.text("route") == "coop_global" {
                            -i64::from(v.int("reg") != coop_frags)
                        } else {
                            -(tile.max(target) / tile.min(target).max(1))
                        }
                    },
                ),
                prefer("a K slice of 16", |v| -(v.int("tk") - 16).abs()),
                prefer("16 × 16 threads", |v| -(16 - v.int("wg")).abs()),
            ],
            ride: &["epilogue"],
        }
    }
}

/// C = A · B for A [.., M, K] and B [.., K, N] (rank 2 or 3; a batch of 1 broadcasts).
pub fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    product(a, b, Layout::default(), None)
}

/// C = A · Bᵀ for A [.., M, K] and B [.., N, K]: the transpose is read in place, never made.
pub fn matmul_bt(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let layout = Layout {
        a_trans: false,
        b_trans: true,
    };
    product(a, b, layout, None)
}

/// C = Aᵀ · B for A [.., K, M] and B [.., K, N] (a weight gradient Xᵀ · dY), A read in place.
pub fn matmul_at(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let layout = Layout {
        a_trans: true,
        b_trans: false,
    };
    product(a, b, layout, None)
}

/// x · W + bias for x [.., K] (any leading extents) and W [K, N], bias [N]: a linear layer
/// in one launch.
pub fn linear(x: &Tensor, w: &Tensor, bias: &Tensor) -> Result<Tensor> {
    linear_with(x, w, bias, Epilogue::Bias)
}

/// gelu(x · W + bias), in one launch.
pub fn linear_gelu(x: &Tensor, w: &Tensor, bias: &Tensor) -> Result<Tensor> {
    linear_with(x, w, bias, Epilogue::BiasGelu)
}

fn linear_with(x: &Tensor, w: &Tensor, bias: &Tensor, epilogue: Epilogue) -> Result<Tensor> {
    let (rows, k) = crate::shape::rows_cols(OP, x.shape())?;
    let y = product(
        &x.reshape(&[rows, k])?,
        w,
        Layout::default(),
        Some((bias, epilogue)),
    )?;
    let mut shape = x.shape().to_vec();
    if let (Some(last), [_, n]) = (shape.last_mut(), y.shape()) {
        *last = *n;
    }
    y.reshape(&shape)
}

fn product(
    a: &Tensor,
    b: &Tensor,
    layout: Layout,
    epilogue: Option<(&Tensor, Epilogue)>,
) -> Result<Tensor> {
    let d = MatmulDims::transposed(a.shape(), b.shape(), layout.a_trans, layout.b_trans)?;
    let c = Tensor::uninit(a.gpu(), &d.out_shape(a.shape(), b.shape()), a.dtype())?;
    let (dispatch, _) = plan_with(a, b, &c, layout, epilogue, None)?;
    a.gpu().record_owned(dispatch)?;
    Ok(c)
}

/// Writes A · B into `c`, with the named variant or the selector's choice.
pub fn matmul_into(a: &Tensor, b: &Tensor, c: &Tensor, named: Option<&str>) -> Result<Choice> {
    let (dispatch, choice) = plan(a, b, c, named)?;
    a.gpu().record_owned(dispatch)?;
    Ok(choice)
}

/// The variant the selector picks for a call. An epilogue rides on the tuned entries of the
/// plain product (they name plain variants).
pub fn choose(sel: &select::Selector<'_>, call: &Call, named: Option<&str>) -> Result<Choice> {
    sel.choose(call, named)
}

/// Whether `variant` takes a call of these dimensions: routes that load whole cooperative
/// fragments from the buffers need M, N and K to be multiples of 16.
pub fn fits(variant: &Variant, d: &MatmulDims) -> bool {
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
    plan_with(a, b, c, Layout::default(), None, named)
}

/// [`plan`] for C = A · Bᵀ, B stored [.., N, K].
pub fn plan_bt(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    let layout = Layout {
        a_trans: false,
        b_trans: true,
    };
    plan_with(a, b, c, layout, None, named)
}

/// [`plan`] with any layout and an optional epilogue (its bias [N] and kind).
pub fn plan_with(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    layout: Layout,
    epilogue: Option<(&Tensor, Epilogue)>,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    let d = MatmulDims::transposed(a.shape(), b.shape(), layout.a_trans, layout.b_trans)?;
    check_operands(OP, &[a, b, c])?;
    check_out_shape(OP, c, &d.out_shape(a.shape(), b.shape()))?;
    check_no_alias(OP, c, &[a, b])?;
    let (bias, kind) = match epilogue {
        Some((bias, kind)) if kind != Epilogue::None => {
            check_operands(OP, &[a, bias])?;
            super::check_input_shape(OP, "bias", bias, &[d.n])?;
            check_no_alias(OP, c, &[bias])?;
            (Some(bias), kind)
        }
        _ => (None, Epilogue::None),
    };
    let gpu = a.gpu();
    let call = Call {
        dtype: a.dtype(),
        dims: d,
        layout,
        epilogue: kind,
    };
    let choice = choose(&gpu.selector(), &call, named)?;
    let tile = choice.variant.int("tile").max(1) as usize;
    let groups = super::grid(OP, gpu, [d.n.div_ceil(tile), d.m.div_ceil(tile), d.batch])?;
    let params = Params {
        m: d.m as u32,
        n: d.n as u32,
        k: d.k as u32,
        batch: d.batch as u32,
        stride_a: d.stride_a as u32,
        stride_b: d.stride_b as u32,
        stride_c: d.stride_c as u32,
        b_trans: u32::from(layout.b_trans),
        a_trans: u32::from(layout.a_trans),
        _pad: [0; 3],
    };
    let mut tensors = vec![a, b, c];
    tensors.extend(bias);
    let dispatch = Dispatch::new(gpu, &choice.variant, &tensors, &params, groups)?;
    Ok((dispatch, choice))
}
