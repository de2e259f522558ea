//! Batched matrix product on the GPU, with either operand read transposed in place and an
//! optional epilogue (bias, bias + gelu) applied as C is stored; the two-output epilogues also
//! write the gelu, or the gelu backward, that a training pass runs on C ([`fold`]).

pub(crate) mod cases;
pub mod cpu;
pub(crate) mod fold;

use crate::contract::Param;
use crate::device::DeviceProfile;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::gpu::Dispatch;
use crate::registry::Variant;
use crate::select::{self, Bucket, Choice, Key, Request, filter, prefer};
use crate::shape::MatmulDims;
use crate::tensor::Tensor;

use crate::launch::{
    check_no_alias, check_operands, check_out_shape, dtype_value, record, software,
};

const OP: &str = "matmul";

/// How a variant computes its C tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// Scalar tiles through workgroup memory: every adapter.
    Tiled,
    /// vec4 reads from double-buffered tiles: GPUs.
    Vec4,
    /// Cooperative 16×16 fragments from workgroup tiles.
    Coop,
    /// Cooperative fragments loaded straight from the buffers (M, N, K multiples of 16).
    CoopGlobal,
}

/// What the launcher and the rule read of a variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Design {
    pub dtype: DType,
    pub route: Route,
    /// Threads per side of the workgroup (tiled and vec4 routes).
    pub wg: u32,
    /// Accumulators per side of a thread's block (coop routes: fragments per subgroup).
    pub reg: u32,
    /// Depth of the K slice staged per step.
    pub tk: u32,
    pub epilogue: Epilogue,
    pub unroll: bool,
    /// vec4 route: A and B read from the buffers as vec4s (M, N, K multiples of 4).
    pub wide: bool,
    /// Rows of the C tile a workgroup computes.
    pub tile: u32,
    /// Its columns: `tile`, or half of it in a tall tile.
    pub tile_n: u32,
}

impl Design {
    pub fn parse(v: &Variant) -> Result<Self> {
        Ok(Design {
            dtype: v.dtype()?,
            route: v.one_of(
                "route",
                &[
                    ("tiled", Route::Tiled),
                    ("vec4", Route::Vec4),
                    ("coop", Route::Coop),
                    ("coop_global", Route::CoopGlobal),
                ],
            )?,
            wg: v.count("wg")?,
            reg: v.count("reg")?,
            tk: v.count("tk")?,
            epilogue: Epilogue::parse(v)?,
            unroll: v.flag("unroll")?,
            wide: v.flag("wide")?,
            tile: v.count("tile")?,
            tile_n: v.count("tile_n")?,
        })
    }
}

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
    a_row: u32,
    a_col: u32,
    b_row: u32,
    b_col: u32,
    splits: u32,
    k_split: u32,
    seq: u32,
    head: u32,
    heads: u32,
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
    /// C + bias[col] stored as C, and its gelu into a second output y.
    BiasAndGelu,
    /// C + bias[col] stored as C, and C · gelu′(x) into a second output y (x of C's shape).
    BiasAndGeluGrad,
    /// C + bias[col] stored as C [B·T, P·H·d], and again into y [P, B, H, T, d].
    BiasAndHeads,
}

impl Epilogue {
    /// A variant's `epilogue` value.
    pub fn parse(v: &Variant) -> Result<Self> {
        v.one_of(
            "epilogue",
            &[
                ("none", Epilogue::None),
                ("bias", Epilogue::Bias),
                ("bias_gelu", Epilogue::BiasGelu),
                ("bias_and_gelu", Epilogue::BiasAndGelu),
                ("bias_and_gelu_grad", Epilogue::BiasAndGeluGrad),
                ("bias_and_heads", Epilogue::BiasAndHeads),
            ],
        )
    }

    /// The template's `epilogue` value.
    pub fn name(self) -> &'static str {
        match self {
            Epilogue::None => "none",
            Epilogue::Bias => "bias",
            Epilogue::BiasGelu => "bias_gelu",
            Epilogue::BiasAndGelu => "bias_and_gelu",
            Epilogue::BiasAndGeluGrad => "bias_and_gelu_grad",
            Epilogue::BiasAndHeads => "bias_and_heads",
        }
    }

    /// Whether it writes a second output (and so is never cut along K: the sum has no such
    /// form).
    pub fn two_outputs(self) -> bool {
        matches!(
            self,
            Epilogue::BiasAndGelu | Epilogue::BiasAndGeluGrad | Epilogue::BiasAndHeads
        )
    }
}

/// The second result of a two-output epilogue, of C's shape.
#[derive(Clone, Copy, Debug)]
pub enum Second<'a> {
    /// y = gelu(C + bias).
    Gelu { y: &'a Tensor },
    /// y = (C + bias) · gelu′(x).
    GeluGrad { x: &'a Tensor, y: &'a Tensor },
    /// C + bias [B·T, P·H·d] again as y [P, B, H, T, d] (`heads`: [T, H, d]); a batch of one.
    Heads { y: &'a Tensor, heads: [usize; 3] },
}

impl Second<'_> {
    pub fn epilogue(&self) -> Epilogue {
        match self {
            Second::Gelu { .. } => Epilogue::BiasAndGelu,
            Second::GeluGrad { .. } => Epilogue::BiasAndGeluGrad,
            Second::Heads { .. } => Epilogue::BiasAndHeads,
        }
    }

    /// The tensors the launch binds after the bias, in binding order (y, then x).
    fn bound(&self) -> Vec<&Tensor> {
        match *self {
            Second::Gelu { y } | Second::Heads { y, .. } => vec![y],
            Second::GeluGrad { x, y } => vec![y, x],
        }
    }

    /// y's shape for a C of `c_shape`, or why there is none.
    fn shape(&self, c_shape: &[usize]) -> std::result::Result<Vec<usize>, String> {
        let Second::Heads {
            heads: [t, h, d], ..
        } = *self
        else {
            return Ok(c_shape.to_vec());
        };
        match *c_shape {
            [m, n] if t > 0 && h * d > 0 && m.is_multiple_of(t) && n.is_multiple_of(h * d) => {
                Ok(vec![n / (h * d), m / t, h, t, d])
            }
            _ => Err(format!(
                "C {c_shape:?} does not split into rows of {t} and heads of {h} × {d}"
            )),
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
        Key::new(OP, self.dtype, &[d.batch, d.m, d.n, d.k], flags, bucket(d))
    }

    /// On a GPU the cooperative-matrix route that loads straight from the buffers when it
    /// takes the shape (f16, multiples of 16), else the vec4 route unrolled, with wide reads
    /// where the sizes are multiples of 4; on a software adapter the plain tiled route
    /// (measured on the H200 and lavapipe, PERF.md). Square tiles, except on a GPU 128 × 64
    /// ones for a single f32 product of one to two rounds of 128 square 128 × 128 tiles whose K
    /// is not long (measured on the H100). Then the C tile nearest the largest that still gives
    /// enough workgroups to fill the device (128 on a GPU, 8 on a software adapter with a few
    /// cores), or the largest for an f32 product of at least 2¹⁹ outputs and K ≥ 1536 (its K
    /// cut instead) — for coop_global 2 × 2 fragments per subgroup (4 × 4 when B is
    /// transposed) — the K slice nearest 16, and 16 × 16 threads.
    fn request(&self, profile: &DeviceProfile) -> Request<'_> {
        let d = self.dims;
        let software = software(profile);
        let enough = if software { 8 } else { 128 };
        let groups = |t: usize| d.batch * d.m.div_ceil(t) * d.n.div_ceil(t);
        // An f32 product with a large C and a long K keeps the largest tile and has its K cut
        // to fill the device (`split_for`): at the Mega step's shapes, [2048, 512] by K 2048,
        // that took 0.158 ms to 0.136 (H200, PERF.md 2026-12-05).
        let long = !software && long_k(self.dtype, &d);
        let target = [128, 64, 32, 16]
            .into_iter()
            .find(|&t| long || groups(t) >= enough)
            .unwrap_or(16) as i64;
        // Between one and two rounds of 128 square 128 × 128 tiles, an f32 product takes twice
        // as many 128 × 64 ones with K slices of 8: [2048, 512] by [512, 1536] (192 square
        // tiles) took 0.107 ms so and 0.138 square, where [2048, 512] by [512, 2048] (256)
        // stayed faster square (H100, PERF.md 2026-12-06, session 2).
        let tall_pays = !software
            && !long
            && self.dtype == DType::F32
            && d.batch == 1
            && (enough..2 * enough).contains(&groups(128));
        let coop_frags = if self.layout.b_trans { 4 } else { 2 };
        let route_rank = move |v: &Variant| -> Result<i64> {
            let design = Design::parse(v)?;
            Ok(match (software, design.route, design.unroll) {
                (true, Route::Tiled, _) => 0,
                (true, _, _) => 1,
                (false, Route::CoopGlobal, _) => 0,
                (false, Route::Vec4, true) if design.wide => 1,
                (false, Route::Vec4, true) => 2,
                (false, Route::Vec4, false) => 3,
                (false, Route::Tiled, _) => 4,
                (false, Route::Coop, _) => 5,
            })
        };
        Request {
            key: self.key(),
            fixed: vec![
                dtype_value(self.dtype),
                ("epilogue", Param::Str(self.epilogue.name().into())),
            ],
            filters: vec![filter(
                "coop_global needs M, N and K multiples of 16",
                move |v| fits(v, &d),
            )],
            order: vec![
                prefer(
                    "GPU: coop_global, vec4 unrolled (wide reads first), vec4, tiled; software adapter: tiled",
                    move |v| Ok(-route_rank(v)?),
                ),
                prefer(
                    "on a GPU, f32 of 128 to 255 square 128 × 128 tiles (a batch of one, K not long): 128 × 64 tiles with K slices of 8; square tiles otherwise",
                    move |v| {
                        let design = Design::parse(v)?;
                        Ok(if design.tile_n == design.tile {
                            0
                        } else if tall_pays && design.tk == 8 {
                            1
                        } else {
                            -1
                        })
                    },
                ),
                prefer(
                    "the C tile nearest the largest with ≥ 128 workgroups (8 on a software adapter), the largest for f32 with ≥ 2^19 outputs and K ≥ 1536 (K cut to fill the device); coop_global: 2 × 2 fragments a subgroup (4 × 4 with B transposed)",
                    move |v| {
                        let design = Design::parse(v)?;
                        let tile = i64::from(design.tile);
                        Ok(if design.route == Route::CoopGlobal {
                            -i64::from(design.reg != coop_frags)
                        } else {
                            -(tile.max(target) / tile.min(target).max(1))
                        })
                    },
                ),
                prefer("a K slice of 16", |v| {
                    Ok(-(i64::from(Design::parse(v)?.tk) - 16).abs())
                }),
                prefer("16 × 16 threads", |v| {
                    Ok(-(16 - i64::from(Design::parse(v)?.wg)).abs())
                }),
            ],
            left_open: &["epilogue"],
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

/// Writes Aᵀ · B into `c` (A [.., K, M], B [.., K, N]; `c` [.., M, N], which may be a view of
/// a packed buffer: a weight gradient where the optimiser reads it), K cut as the ops cut it.
pub fn matmul_at_into(a: &Tensor, b: &Tensor, c: &Tensor) -> Result<()> {
    let layout = Layout {
        a_trans: true,
        b_trans: false,
    };
    let plan = plan_split(a, b, c, layout, None, None)?;
    a.gpu().record_all(plan.dispatches)
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

/// gelu(x · W) in one launch, for x [.., K] and W [K, N]: the `bias_gelu` epilogue over a zero
/// bias the device keeps (`gelu(acc + 0)` is `gelu(acc)`), so the product's variants and
/// proofs serve it and a call uploads nothing.
pub fn matmul_gelu(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    let n = w.shape().last().copied().unwrap_or(0);
    let zeros = Tensor::kept_zeros(x.gpu(), &[n], x.dtype())?;
    linear_with(x, w, &zeros, Epilogue::BiasGelu)
}

fn linear_with(x: &Tensor, w: &Tensor, bias: &Tensor, epilogue: Epilogue) -> Result<Tensor> {
    let (rows, k) = crate::shape::rows_cols(OP, x.shape())?;
    let y = product(
        &x.reshape(&[rows, k])?,
        w,
        Layout::default(),
        Some((bias, epilogue)),
    )?;
    y.reshape(&crate::shape::with_last(x.shape(), y.shape()))
}

fn product(
    a: &Tensor,
    b: &Tensor,
    layout: Layout,
    epilogue: Option<(&Tensor, Epilogue)>,
) -> Result<Tensor> {
    let d = MatmulDims::transposed(a.shape(), b.shape(), layout.a_trans, layout.b_trans)?;
    let c = Tensor::uninit(a.gpu(), &d.out_shape(a.shape(), b.shape()), a.dtype())?;
    let plan = plan_split(a, b, &c, layout, epilogue, None)?;
    a.gpu().record_all(plan.dispatches)?;
    Ok(c)
}

/// How a product's K is cut across workgroups (`splits` = 1: not at all).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Split {
    pub splits: usize,
    /// K elements per slice, a multiple of 32 (every K slice a tile stages divides it).
    pub k_split: usize,
}

impl Split {
    pub const NONE: Split = Split {
        splits: 1,
        k_split: usize::MAX,
    };

    /// `splits` slices of K (clamped to 1..=K/32), as equal as multiples of 32 allow.
    pub fn of_k(k: usize, splits: usize) -> Split {
        let splits = splits.clamp(1, k.div_ceil(32).max(1));
        if splits == 1 {
            return Split::NONE;
        }
        let k_split = k.div_ceil(splits).next_multiple_of(32);
        Split {
            splits: k.div_ceil(k_split),
            k_split,
        }
    }
}

/// The rule for cutting K (measured on the H200, PERF.md: a product of few output tiles is
/// bound by the length of its K loop, 26 µs for 17×384·384×1152 on 18 workgroups): on a hardware
/// GPU, an f32 product on the tiled or vec4 route whose tiles make fewer than 128 workgroups is
/// cut into enough K slices of at least 64 to make 128 (at most 16 slices), where that is three
/// slices or more (two at K ≥ 2048; a power of two for the long-K products); the slices go to a
/// workspace that a second kernel adds in order, with the epilogue.
pub fn split_for(profile: &DeviceProfile, variant: &Variant, call: &Call) -> Result<Split> {
    let d = &call.dims;
    let design = Design::parse(variant)?;
    let (rows, cols) = (design.tile.max(1) as usize, design.tile_n.max(1) as usize);
    let base = d.batch * d.m.div_ceil(rows) * d.n.div_ceil(cols);
    let routes = matches!(design.route, Route::Tiled | Route::Vec4);
    let whole = profile.is_software() || call.epilogue.two_outputs();
    if whole || call.dtype != DType::F32 || !routes || base >= 128 {
        return Ok(Split::NONE);
    }
    let mut splits = 128usize.div_ceil(base).min(d.k / 64).min(16);
    let fewest = if long_k(call.dtype, d) {
        // A count of slices that divides K evenly: at [512, 1536] by K 2048, 3 slices took
        // 0.164 ms where 2 took 0.134 (H200, PERF.md 2026-12-05).
        splits = 1 << splits.max(1).ilog2();
        2
    } else if d.k >= 2048 {
        // A smaller C at a K as long: [512, 512] by K 2048 took 0.056 ms in two slices and
        // 0.096 whole (H100, PERF.md 2026-12-06, session 2).
        2
    } else {
        // Below the long-K products a cut in two costs its sum's launch for what it saves:
        // [1024, 128] by [128, 384] took 17.1 µs cut in two and 13.8 whole, [212, 384] by
        // [384, 1536] 25.7 and 24.7 (H200, PERF.md 2026-12-05, later).
        3
    };
    if splits < fewest {
        return Ok(Split::NONE);
    }
    Ok(Split::of_k(d.k, splits))
}

/// An f32 product with a large C (≥ 2¹⁹ outputs) and a long K (≥ 1536): on a hardware GPU it
/// keeps the largest tile and has K cut into a power of two of slices to fill the device.
fn long_k(dtype: DType, d: &MatmulDims) -> bool {
    dtype == DType::F32 && d.m * d.n >= 1 << 19 && d.k >= 1536
}

/// A product's launches: the matmul alone, or its K slices into a workspace and their sum.
#[derive(Debug)]
pub struct SplitPlan {
    pub dispatches: Vec<Dispatch>,
    pub choice: Choice,
    pub split: Split,
    /// The [splits, batch · M · N] f32 slices, when K is cut.
    pub workspace: Option<Tensor>,
}

/// [`plan_with`], cutting K as [`split_for`] says (or into `force` slices): the launches of a
/// product as the ops run it.
pub fn plan_split(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    layout: Layout,
    epilogue: Option<(&Tensor, Epilogue)>,
    force: Option<usize>,
) -> Result<SplitPlan> {
    plan_split_named(a, b, c, layout, epilogue, force, None)
}

/// A product's variant and how its K is cut: the named variant or the selector's, cut as
/// [`split_for`] says (or into `force` slices).
fn decide(
    sel: &select::Selector<'_>,
    call: &Call,
    named: Option<&str>,
    force: Option<usize>,
) -> Result<(Choice, Split)> {
    let choice = choose(sel, call, named)?;
    let split = match force {
        Some(n) if !call.epilogue.two_outputs() => Split::of_k(call.dims.k, n),
        _ => split_for(sel.profile, &choice.variant, call)?,
    };
    Ok((choice, split))
}

/// The choices of the launches [`plan_split`] makes for `call`, from the call alone (a
/// plan-only run): the product's, then the sum's when K is cut. Under a cut the slices run the
/// chosen variant's plain form and its epilogue rides on the sum.
pub fn choices_for(sel: &select::Selector<'_>, call: &Call) -> Result<Vec<Choice>> {
    let (choice, split) = decide(sel, call, None, None)?;
    if split.splits == 1 {
        return Ok(vec![choice]);
    }
    let sum = crate::families::matmul_reduce::Call::sum(call.epilogue);
    Ok(vec![choice, sel.choose(&sum, None)?])
}

/// [`plan_split`] with a named variant (for tests and benchmarks).
pub fn plan_split_named(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    layout: Layout,
    epilogue: Option<(&Tensor, Epilogue)>,
    force: Option<usize>,
    named: Option<&str>,
) -> Result<SplitPlan> {
    let (call, bias) = checked_call(a, b, c, layout, epilogue)?;
    let gpu = a.gpu();
    let (choice, split) = decide(&gpu.selector(), &call, named, force)?;
    if split.splits == 1 {
        let dispatch = whole(a, b, c, bias, &call, &choice)?;
        return Ok(SplitPlan {
            dispatches: vec![dispatch],
            choice,
            split,
            workspace: None,
        });
    }
    if call.dtype != DType::F32 {
        return Err(Error::InvalidArgument {
            op: OP,
            detail: "K is cut only for f32 products (the slices are added in f32)".into(),
        });
    }
    // The slices come from the plain form of the chosen variant; the epilogue goes to the sum.
    let plain = plain_of(gpu.registry(), &choice.variant)?;
    let plain = Choice {
        variant: std::sync::Arc::new(plain),
        ..choice.clone()
    };
    let d = &call.dims;
    let count = d.batch * d.m * d.n;
    let workspace = Tensor::uninit(gpu, &[split.splits, count], DType::F32)?;
    let slices = launch(a, b, &workspace, &[], &call, &plain, split, NO_HEADS)?;
    let epilogue = bias.map(|b| (b, call.epilogue));
    let (sum, _) = crate::families::matmul_reduce::plan(&workspace, c, d.n, epilogue, None)?;
    Ok(SplitPlan {
        dispatches: vec![slices, sum],
        choice,
        split,
        workspace: Some(workspace),
    })
}

/// The variant with the same values and no epilogue.
fn plain_of(registry: &crate::registry::Registry, v: &Variant) -> Result<Variant> {
    with_epilogue(registry, v, Epilogue::None)
}

/// The variant with the same values and `epilogue`.
pub(crate) fn with_epilogue(
    registry: &crate::registry::Registry,
    v: &Variant,
    epilogue: Epilogue,
) -> Result<Variant> {
    let set = [("epilogue", Param::Str(epilogue.name().into()))];
    registry.like(OP, v, &set).cloned()
}

/// Writes A · B into `c`, with the named variant or the selector's choice.
pub fn matmul_into(a: &Tensor, b: &Tensor, c: &Tensor, named: Option<&str>) -> Result<Choice> {
    record(a.gpu(), plan(a, b, c, named)?)
}

/// The variant the selector picks for a call. An epilogue rides on the tuned entries of the
/// plain product (they name plain variants).
pub fn choose(sel: &select::Selector<'_>, call: &Call, named: Option<&str>) -> Result<Choice> {
    sel.choose(call, named)
}

/// Whether `variant` takes a call of these dimensions: routes that load whole cooperative
/// fragments from the buffers need M, N and K to be multiples of 16.
pub fn fits(variant: &Variant, d: &MatmulDims) -> Result<bool> {
    crate::launch::sizes_fit(variant, &[d.m, d.n, d.k])
}

/// The tuned-table bucket of a call: each size rounded up to a power of two.
pub fn bucket(d: &MatmulDims) -> Bucket {
    Bucket::new(&[
        ('m', select::bucket(d.m)),
        ('n', select::bucket(d.n)),
        ('k', select::bucket(d.k)),
    ])
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

/// [`plan`] with any layout and an optional epilogue (its bias [N] and kind): one launch, K not
/// cut.
pub fn plan_with(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    layout: Layout,
    epilogue: Option<(&Tensor, Epilogue)>,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    let (call, bias) = checked_call(a, b, c, layout, epilogue)?;
    let choice = choose(&a.gpu().selector(), &call, named)?;
    let dispatch = whole(a, b, c, bias, &call, &choice)?;
    Ok((dispatch, choice))
}

/// [`plan_with`] for a two-output epilogue: C = A · B + bias stored, and `second` written from
/// it (one launch, K never cut).
pub fn plan_second(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    layout: Layout,
    bias: &Tensor,
    second: Second<'_>,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    let (call, bias) = checked_call(a, b, c, layout, Some((bias, second.epilogue())))?;
    let extra = second.bound();
    check_operands(OP, &extra)?;
    let y_shape = second.shape(c.shape()).map_err(|e| Error::shape(OP, e))?;
    check_out_shape(OP, extra[0], &y_shape)?;
    if let Some(x) = extra.get(1) {
        crate::launch::check_input_shape(OP, "x", x, c.shape())?;
    }
    let mut inputs = vec![a, b, c];
    inputs.extend(bias);
    inputs.extend(extra.get(1));
    check_no_alias(OP, extra[0], &inputs)?;
    if let Some(x) = extra.get(1) {
        check_no_alias(OP, c, &[x])?;
    }
    let choice = choose(&a.gpu().selector(), &call, named)?;
    let mut bound = Vec::from_iter(bias);
    bound.extend(extra);
    let heads = match second {
        Second::Heads { heads, .. } => heads,
        _ => NO_HEADS,
    };
    let dispatch = launch(a, b, c, &bound, &call, &choice, Split::NONE, heads)?;
    Ok((dispatch, choice))
}

/// Checks a call's operands and describes it to the selector; the epilogue's bias, if any.
fn checked_call<'a>(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    layout: Layout,
    epilogue: Option<(&'a Tensor, Epilogue)>,
) -> Result<(Call, Option<&'a Tensor>)> {
    let d = MatmulDims::transposed(a.shape(), b.shape(), layout.a_trans, layout.b_trans)?;
    check_operands(OP, &[a, b, c])?;
    check_out_shape(OP, c, &d.out_shape(a.shape(), b.shape()))?;
    check_no_alias(OP, c, &[a, b])?;
    let (bias, kind) = match epilogue {
        Some((bias, kind)) if kind != Epilogue::None => {
            check_operands(OP, &[a, bias])?;
            crate::launch::check_input_shape(OP, "bias", bias, &[d.n])?;
            check_no_alias(OP, c, &[bias])?;
            (Some(bias), kind)
        }
        _ => (None, Epilogue::None),
    };
    let call = Call {
        dtype: a.dtype(),
        dims: d,
        layout,
        epilogue: kind,
    };
    Ok((call, bias))
}

/// The one launch of a product whose K is not cut, with its bias if any.
fn whole(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    bias: Option<&Tensor>,
    call: &Call,
    choice: &Choice,
) -> Result<Dispatch> {
    let bound = Vec::from_iter(bias);
    launch(a, b, c, &bound, call, choice, Split::NONE, NO_HEADS)
}

/// bias_and_heads' [T, H, d] for a launch of any other epilogue (not read there).
const NO_HEADS: [usize; 3] = [1, 1, 1];

/// The launch of `choice` for a checked call, writing `out` (C, or the slices of a cut K), with
/// the epilogue's tensors after it (the bias, then a second output's) and bias_and_heads' sizes
/// `[T, H, d]`.
#[allow(clippy::too_many_arguments)]
fn launch(
    a: &Tensor,
    b: &Tensor,
    out: &Tensor,
    epilogue: &[&Tensor],
    call: &Call,
    choice: &Choice,
    split: Split,
    [t, h, hd]: [usize; 3],
) -> Result<Dispatch> {
    let (d, layout) = (&call.dims, call.layout);
    let gpu = a.gpu();
    let design = Design::parse(&choice.variant)?;
    let (rows, cols) = (design.tile.max(1) as usize, design.tile_n.max(1) as usize);
    let groups = crate::launch::grid(
        OP,
        gpu,
        [
            d.n.div_ceil(cols),
            d.m.div_ceil(rows),
            d.batch * split.splits,
        ],
    )?;
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
        // A[r, kk] and B[kk, col]: row-major, or the stored transpose read in place.
        a_row: if layout.a_trans { 1 } else { d.k as u32 },
        a_col: if layout.a_trans { d.m as u32 } else { 1 },
        b_row: if layout.b_trans { 1 } else { d.n as u32 },
        b_col: if layout.b_trans { d.k as u32 } else { 1 },
        splits: split.splits as u32,
        k_split: split.k_split.min(d.k) as u32,
        seq: t as u32,
        head: hd as u32,
        heads: h as u32,
        _pad: [0; 3],
    };
    let mut tensors = vec![a, b, out];
    tensors.extend(epilogue);
    Dispatch::new(gpu, &choice.variant, &tensors, &params, groups)
}

/// A launch's parameter block with bias_and_heads' sizes ([T, H, d]) set; `None` for a block
/// that is not this family's.
fn with_heads(params: &[u8], [t, h, d]: [usize; 3]) -> Option<Vec<u8>> {
    let mut p: Params =
        bytemuck::try_pod_read_unaligned(params.get(..size_of::<Params>())?).ok()?;
    (p.seq, p.heads, p.head) = (t as u32, h as u32, d as u32);
    let mut bytes = params.to_vec();
    bytes[..size_of::<Params>()].copy_from_slice(bytemuck::bytes_of(&p));
    Some(bytes)
}

/// What `kiln::ops` offers of this family (the build script re-exports it).
pub mod api {
    pub use super::{
        linear, linear_gelu, matmul, matmul_at, matmul_at_into, matmul_bt, matmul_gelu, matmul_into,
    };
}
