//! A transformer's feed-forward block, gelu(x · W1 + b1) · W2 + b2, with the hidden layer kept in
//! workgroup memory: one launch writes the second product as slices over parts of the hidden
//! units, and the launch after it adds them with the bias — `matmul_reduce` here, or the
//! residual layer norm that reads the block (`reduce_layernorm`, as `kiln::fusion` plans it for a
//! captured pass whose hidden layer nothing reads). Two launches where the products took two to
//! four, and the [M, H] hidden layer never goes through memory.

pub(crate) mod cases;
pub mod cpu;

use crate::device::DeviceProfile;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::families::matmul::Epilogue;
use crate::gpu::Dispatch;
use crate::launch::{
    check_input_shape, check_no_alias, check_operands, dtype_value, grid, record, software,
};
use crate::registry::Variant;
use crate::select::{self, Bucket, Choice, Key, Request, filter, prefer};
use crate::shape::rows_cols;
use crate::tensor::Tensor;

const OP: &str = "mlp";

/// What the launcher reads of a variant: the tile a workgroup owns and the hidden chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Design {
    pub rows: u32,
    pub cols: u32,
    pub hidden: u32,
}

impl Design {
    pub fn parse(v: &Variant) -> Result<Self> {
        Ok(Design {
            rows: v.count("rows")?,
            cols: v.count("cols")?,
            hidden: v.count("hidden")?,
        })
    }

    /// Workgroups per slice: row tiles × column tiles.
    fn tiles(self, m: usize, n: usize) -> usize {
        m.div_ceil(self.rows as usize) * n.div_ceil(self.cols as usize)
    }
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    m: u32,
    d: u32,
    hidden: u32,
    n: u32,
    per: u32,
    _pad: [u32; 3],
}

/// The selector's call: M rows of D into N output columns through H hidden units, into a given
/// number of slices (the variants whose chunks cut H into that many) or as many as the pick's
/// design makes ([`slices_for`]).
#[derive(Clone, Copy, Debug)]
pub struct Call {
    pub m: usize,
    pub d: usize,
    pub n: usize,
    pub hidden: usize,
    pub slices: Option<usize>,
}

impl Call {
    /// The call for a block of dimensions [M, D, H, N] (`dims`) into `slices` slices or as
    /// many as the pick makes.
    pub(crate) fn of([m, d, hidden, n]: [usize; 4], slices: Option<usize>) -> Call {
        Call {
            m,
            d,
            n,
            hidden,
            slices,
        }
    }
}

impl select::Call for Call {
    fn key(&self) -> Key {
        let dims = [
            self.m,
            self.d,
            self.n,
            self.hidden,
            self.slices.unwrap_or(0),
        ];
        Key::new(OP, DType::F32, &dims, 0, Bucket::NONE)
    }

    /// The least modelled time: rounds of as many workgroups as fill the device (128 on a GPU,
    /// 8 on a software adapter) times each workgroup's multiply-adds. Then the output columns
    /// in as few tiles as may be, the narrowest tile that does it; 16 rows a workgroup for 16
    /// rows or fewer, else 32; the widest hidden chunk (X is staged once a chunk).
    fn request(&self, profile: &DeviceProfile) -> Request<'_> {
        let Call {
            m,
            d,
            n,
            hidden,
            slices,
        } = *self;
        let enough = enough(profile);
        let cost = move |v: &Variant| -> Result<i64> {
            let design = Design::parse(v)?;
            let count = slices.unwrap_or_else(|| slices_filling(enough, design, m, n, hidden));
            let per = per_slice(design, hidden, count).unwrap_or(hidden);
            let rounds = (design.tiles(m, n) * count).div_ceil(enough);
            let work = design.rows as usize * per * (d + design.cols as usize);
            Ok(-((rounds * work) as i64))
        };
        let rows = if m <= 16 { 16 } else { 32 };
        let cuts = move |v: &Variant| -> Result<bool> {
            let design = Design::parse(v)?;
            Ok(slices.is_none_or(|s| per_slice(design, hidden, s).is_some()))
        };
        Request {
            key: self.key(),
            fixed: vec![dtype_value(DType::F32)],
            filters: vec![filter("chunks that cut H into the slices asked for", cuts)],
            order: vec![
                prefer(
                    "the least modelled time: rounds of 128 workgroups (8 on a software adapter) times a workgroup's multiply-adds",
                    cost,
                ),
                prefer("the fewest column tiles", move |v| {
                    Ok(-(n.div_ceil(Design::parse(v)?.cols as usize) as i64))
                }),
                prefer("the narrowest such tile", |v| {
                    Ok(-i64::from(Design::parse(v)?.cols))
                }),
                prefer("16 rows a workgroup for M ≤ 16, else 32", move |v| {
                    Ok(-(i64::from(Design::parse(v)?.rows) - rows).abs())
                }),
                prefer("the widest hidden chunk", |v| {
                    Ok(i64::from(Design::parse(v)?.hidden))
                }),
            ],
            left_open: &[],
        }
    }
}

/// How many slices a launch of `design` writes for M rows, N columns and H hidden units: enough
/// workgroups to fill the device (128 on a GPU, 8 on a software adapter), each slice whole
/// chunks of the hidden layer.
pub fn slices_for(profile: &DeviceProfile, design: Design, m: usize, n: usize, h: usize) -> usize {
    slices_filling(enough(profile), design, m, n, h)
}

/// As many slices as make `enough` workgroups, each slice whole chunks.
fn slices_filling(enough: usize, design: Design, m: usize, n: usize, h: usize) -> usize {
    let chunks = h.div_ceil(design.hidden.max(1) as usize).max(1);
    let wanted = enough.div_ceil(design.tiles(m, n).max(1)).clamp(1, chunks);
    chunks.div_ceil(chunks.div_ceil(wanted))
}

/// Workgroups that fill the device, for the rule: 128 on a GPU, 8 on a software adapter.
fn enough(profile: &DeviceProfile) -> usize {
    if software(profile) { 8 } else { 128 }
}

/// Hidden units a slice takes when `slices` slices cover H in chunks of `design.hidden` (at most
/// H: one slice takes them all, whatever the chunk): `None` where no such cut makes exactly that
/// many.
pub(crate) fn per_slice(design: Design, h: usize, slices: usize) -> Option<usize> {
    let chunk = design.hidden.max(1) as usize;
    let chunks = h.div_ceil(chunk);
    let per = chunks.div_ceil(slices.max(1)) * chunk;
    (slices > 0 && h.div_ceil(per) == slices).then_some(per.min(h))
}

/// The block's dimensions (M, D, H, N) after checking the operands.
fn dims(x: &Tensor, w1: &Tensor, b1: &Tensor, w2: &Tensor) -> Result<[usize; 4]> {
    check_operands(OP, &[x, w1, b1, w2])?;
    if x.dtype() != DType::F32 {
        return Err(Error::InvalidArgument {
            op: OP,
            detail: "every tensor is f32".into(),
        });
    }
    let (m, d) = rows_cols(OP, x.shape())?;
    let [d1, h] = *w1.shape() else {
        return Err(Error::shape(
            OP,
            format!("W1 {:?}: expected [{d}, hidden]", w1.shape()),
        ));
    };
    if d1 != d {
        return Err(Error::shape(
            OP,
            format!("W1 {:?} after X of {d} columns", w1.shape()),
        ));
    }
    check_input_shape(OP, "b1", b1, &[h])?;
    let [h2, n] = *w2.shape() else {
        return Err(Error::shape(
            OP,
            format!("W2 {:?}: expected [{h}, cols]", w2.shape()),
        ));
    };
    if h2 != h || n == 0 {
        return Err(Error::shape(
            OP,
            format!("W2 {:?} after {h} hidden units", w2.shape()),
        ));
    }
    Ok([m, d, h, n])
}

/// The variant for the block (the named one or the selector's) and a workspace of as many
/// slices as [`slices_for`] says, [S, M · N] f32, for [`plan`] to write with that variant (named:
/// asked again with the slice count, the selector's rule may rank another first).
pub fn workspace(
    x: &Tensor,
    w1: &Tensor,
    b1: &Tensor,
    w2: &Tensor,
    named: Option<&str>,
) -> Result<(Tensor, String)> {
    let [m, d, h, n] = dims(x, w1, b1, w2)?;
    let gpu = x.gpu();
    let choice = gpu
        .selector()
        .choose(&Call::of([m, d, h, n], None), named)?;
    let design = Design::parse(&choice.variant)?;
    let slices = slices_for(gpu.profile(), design, m, n, h);
    let partials = Tensor::uninit(gpu, &[slices, m * n], DType::F32)?;
    Ok((partials, choice.variant.name.clone()))
}

/// Checks the call and prepares its launch: `partials` [S, M · N] gets slice s of
/// gelu(x · W1 + b1) · W2, the hidden units cut in S parts of whole chunks.
pub fn launch(
    x: &Tensor,
    w1: &Tensor,
    b1: &Tensor,
    w2: &Tensor,
    partials: &Tensor,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    let [m, d, h, n] = dims(x, w1, b1, w2)?;
    check_operands(OP, &[x, partials])?;
    let gpu = x.gpu();
    let slices = partials.shape().first().copied();
    let choice = gpu
        .selector()
        .choose(&Call::of([m, d, h, n], slices), named)?;
    let design = Design::parse(&choice.variant)?;
    let bad = || {
        Error::shape(
            OP,
            format!(
                "the slices are {:?}: expected [S, {}] with S parts of {h} hidden units in chunks of {}",
                partials.shape(),
                m * n,
                design.hidden
            ),
        )
    };
    let [slices, count] = *partials.shape() else {
        return Err(bad());
    };
    let per = per_slice(design, h, slices)
        .filter(|_| count == m * n)
        .ok_or_else(bad)?;
    check_no_alias(OP, partials, &[x, w1, b1, w2])?;
    let word = |v: usize, what: &str| {
        u32::try_from(v).map_err(|_| Error::shape(OP, format!("{what} {v} does not fit 32 bits")))
    };
    let params = Params {
        m: word(m, "M")?,
        d: word(d, "D")?,
        hidden: word(h, "H")?,
        n: word(n, "N")?,
        per: word(per, "a slice's units")?,
        _pad: [0; 3],
    };
    word(slices * m * n, "the slices' elements")?;
    let cols = n.div_ceil(design.cols as usize);
    let groups = grid(OP, gpu, [cols, m.div_ceil(design.rows as usize), slices])?;
    let dispatch = Dispatch::new(
        gpu,
        &choice.variant,
        &[x, w1, b1, w2, partials],
        &params,
        groups,
    )?;
    Ok((dispatch, choice))
}

/// gelu(x · W1 + b1) · W2 + b2 for x [.., D], W1 [D, H], W2 [H, N]: the slices, then their sum
/// with the bias (`matmul_reduce`).
pub fn mlp(x: &Tensor, w1: &Tensor, b1: &Tensor, w2: &Tensor, b2: &Tensor) -> Result<Tensor> {
    let (rows, d) = rows_cols(OP, x.shape())?;
    let flat = x.reshape(&[rows, d])?;
    let (partials, variant) = workspace(&flat, w1, b1, w2, None)?;
    let n = w2.shape().last().copied().unwrap_or(0);
    check_operands(OP, &[x, b2])?;
    check_input_shape(OP, "b2", b2, &[n])?;
    let y = Tensor::uninit(
        x.gpu(),
        &crate::shape::with_last(x.shape(), &[n]),
        DType::F32,
    )?;
    let gpu = x.gpu();
    record(gpu, launch(&flat, w1, b1, w2, &partials, Some(&variant))?)?;
    let sum =
        crate::families::matmul_reduce::launch(&partials, &y, n, Some((b2, Epilogue::Bias)), None)?;
    record(gpu, sum)?;
    Ok(y)
}

/// What `kiln::ops` offers of this family (the build script re-exports it).
pub mod api {
    pub use super::mlp;
}
