//! A product's launches: the checks, the parameter block, one launch or a cut K's slices and
//! their sum, and a recorded product read back for a fold (`kiln::fusion`).

use super::*;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(super) struct Params {
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

/// A product's launches: the matmul alone, or its K slices into a workspace and their sum.
#[derive(Debug)]
pub struct ProductLaunches {
    pub dispatches: Vec<Dispatch>,
    pub choice: Choice,
    pub split: Split,
    /// The [splits, batch · M · N] f32 slices, when K is cut.
    pub workspace: Option<Tensor>,
}

/// [`launch_with`], cutting K as [`split_for`] says (or into `force` slices): the launches of a
/// product as the ops run it.
pub fn launch_split(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    layout: Layout,
    epilogue: Option<(&Tensor, Epilogue)>,
    force: Option<usize>,
) -> Result<ProductLaunches> {
    launch_split_named(a, b, c, layout, epilogue, force, None)
}

/// [`launch_split`] with a named variant (for tests and benchmarks).
pub fn launch_split_named(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    layout: Layout,
    epilogue: Option<(&Tensor, Epilogue)>,
    force: Option<usize>,
    named: Option<&str>,
) -> Result<ProductLaunches> {
    let (call, bias) = checked_call(a, b, c, layout, epilogue)?;
    let gpu = a.gpu();
    let (choice, split) = decide(&gpu.selector(), &call, named, force)?;
    if split.splits == 1 {
        let dispatch = whole(a, b, c, bias, &call, &choice)?;
        return Ok(ProductLaunches {
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
    let slices = launch_of(a, b, &workspace, &[], &call, &plain, split, NO_HEADS)?;
    let epilogue = bias.map(|b| (b, call.epilogue));
    let (sum, _) = crate::families::matmul_reduce::launch(&workspace, c, d.n, epilogue, None)?;
    Ok(ProductLaunches {
        dispatches: vec![slices, sum],
        choice,
        split,
        workspace: Some(workspace),
    })
}

/// Checks the call and prepares its launch.
pub fn launch(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    launch_with(a, b, c, Layout::default(), None, named)
}

/// [`plan`] for C = A · Bᵀ, B stored [.., N, K].
pub fn launch_bt(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    let layout = Layout {
        a_trans: false,
        b_trans: true,
    };
    launch_with(a, b, c, layout, None, named)
}

/// [`plan`] with any layout and an optional epilogue (its bias [N] and kind): one launch, K not
/// cut.
pub fn launch_with(
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

/// [`launch_with`] for a two-output epilogue: C = A · B + bias stored, and `second` written from
/// it (one launch, K never cut).
pub fn launch_second(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    layout: Layout,
    bias: &Tensor,
    second: SecondOutput<'_>,
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
        SecondOutput::Heads { heads, .. } => heads,
        _ => NO_HEADS,
    };
    let dispatch = launch_of(a, b, c, &bound, &call, &choice, Split::NONE, heads)?;
    Ok((dispatch, choice))
}

/// Checks a call's operands and describes it to the selector; the epilogue's bias, if any.
pub(super) fn checked_call<'a>(
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
pub(super) fn whole(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    bias: Option<&Tensor>,
    call: &Call,
    choice: &Choice,
) -> Result<Dispatch> {
    let bound = Vec::from_iter(bias);
    launch_of(a, b, c, &bound, call, choice, Split::NONE, NO_HEADS)
}

/// bias_and_heads' [T, H, d] for a launch of any other epilogue (not read there).
pub(super) const NO_HEADS: [usize; 3] = [1, 1, 1];

/// The launch of `choice` for a checked call, writing `out` (C, or the slices of a cut K), with
/// the epilogue's tensors after it (the bias, then a second output's) and bias_and_heads' sizes
/// `[T, H, d]`.
#[allow(clippy::too_many_arguments)]
pub(super) fn launch_of(
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
pub(crate) fn with_heads(params: &[u8], [t, h, d]: [usize; 3]) -> Option<Vec<u8>> {
    let mut p: Params =
        bytemuck::try_pod_read_unaligned(params.get(..size_of::<Params>())?).ok()?;
    (p.seq, p.heads, p.head) = (t as u32, h as u32, d as u32);
    let mut bytes = params.to_vec();
    bytes[..size_of::<Params>()].copy_from_slice(bytemuck::bytes_of(&p));
    Some(bytes)
}

/// A product's launch as a recording holds it, read for a fold (`kiln::fusion`): its variant,
/// what it binds and its dimensions.
#[derive(Debug)]
pub(crate) struct Launched<'a> {
    pub variant: &'a Variant,
    /// A, B and C.
    pub operands: [&'a crate::gpu::memory::Slice; 3],
    pub bias: Option<&'a crate::gpu::memory::Slice>,
    pub batch: usize,
    pub m: usize,
    pub n: usize,
    /// Slices K is cut into (1: C written whole).
    pub splits: usize,
}

/// Reads the launch `label` (`matmul/<variant>`) binding `buffers` with `params`, when it is a
/// product with no epilogue or a bias.
pub(crate) fn launched<'a>(
    registry: &'a crate::registry::Registry,
    label: &str,
    buffers: &'a [crate::gpu::memory::Slice],
    params: &[u8],
) -> Option<Launched<'a>> {
    let variant = registry.variant(OP, label.strip_prefix("matmul/")?).ok()?;
    let (operands, bias) = match (Design::parse(variant).ok()?.epilogue, buffers) {
        (Epilogue::None, [a, b, c]) => ([a, b, c], None),
        (Epilogue::Bias, [a, b, c, bias]) => ([a, b, c], Some(bias)),
        _ => return None,
    };
    let p: Params = bytemuck::try_pod_read_unaligned(params.get(..size_of::<Params>())?).ok()?;
    Some(Launched {
        variant,
        operands,
        bias,
        batch: p.batch as usize,
        m: p.m as usize,
        n: p.n as usize,
        splits: p.splits as usize,
    })
}
