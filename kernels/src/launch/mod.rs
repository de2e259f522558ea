//! What the families' launchers share: operand checks, grids, the designs and selector calls of
//! the elementwise and row-wise families, and `record`, the one body of every `*_into`. It sits
//! below both the families and `ops`, and names neither.

pub mod flash;

use crate::contract::Param;
use crate::device::DeviceProfile;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::gpu::{Dispatch, Gpu};
use crate::registry::Variant;
use crate::select::{self, Bucket, Call, Choice, Key, Request, prefer};
use crate::shape::rows_cols;
use crate::tensor::Tensor;

/// Records a planned launch into its device's current recording and returns the choice: the
/// body of every `<op>_into`.
pub(crate) fn record(gpu: &Gpu, (dispatch, choice): (Dispatch, Choice)) -> Result<Choice> {
    gpu.record_owned(dispatch)?;
    Ok(choice)
}

/// Tensors of one op must live on one device.
pub(crate) fn check_same_device(op: &'static str, tensors: &[&Tensor]) -> Result<()> {
    if tensors
        .iter()
        .any(|t| !t.gpu().same_device(tensors[0].gpu()))
    {
        return Err(Error::shape(op, "operands live on different devices"));
    }
    Ok(())
}

/// Tensors of one op must live on one device and share a dtype.
pub(crate) fn check_operands(op: &'static str, tensors: &[&Tensor]) -> Result<()> {
    check_same_device(op, tensors)?;
    let first = tensors[0];
    for t in &tensors[1..] {
        if t.dtype() != first.dtype() {
            return Err(Error::shape(
                op,
                format!(
                    "operands have different dtypes: {} and {}",
                    first.dtype().wgsl(),
                    t.dtype().wgsl()
                ),
            ));
        }
    }
    Ok(())
}

/// A one-word u32 operand (a cache's length, a token, a position) read or moved on when the
/// launch runs.
pub(crate) fn check_word(op: &'static str, name: &str, t: &Tensor) -> Result<()> {
    if t.dtype() != DType::U32 || t.numel() != 1 {
        return Err(Error::shape(
            op,
            format!(
                "the {name} must be one u32, got {} {:?}",
                t.dtype().wgsl(),
                t.shape()
            ),
        ));
    }
    Ok(())
}

/// An output may not share its buffer with an input: the kernels read inputs while writing.
pub(crate) fn check_no_alias(op: &'static str, out: &Tensor, inputs: &[&Tensor]) -> Result<()> {
    if inputs.iter().any(|t| t.overlaps(out)) {
        return Err(Error::InvalidArgument {
            op,
            detail: "the output shares its buffer with an input; give a separate tensor".into(),
        });
    }
    Ok(())
}

pub(crate) fn check_out_shape(op: &'static str, out: &Tensor, want: &[usize]) -> Result<()> {
    if out.shape() != want {
        return Err(Error::shape(
            op,
            format!("output has shape {:?}, the op makes {want:?}", out.shape()),
        ));
    }
    Ok(())
}

/// An input whose shape the op fixes (a gradient like its tensor, a [cols] vector).
pub(crate) fn check_input_shape(
    op: &'static str,
    name: &str,
    t: &Tensor,
    want: &[usize],
) -> Result<()> {
    if t.shape() != want {
        return Err(Error::shape(
            op,
            format!("{name} has shape {:?}, expected {want:?}", t.shape()),
        ));
    }
    Ok(())
}

/// A tensor of integer ids (tokens, targets) must be u32 and live on the op's device.
pub(crate) fn check_ids(op: &'static str, name: &str, ids: &Tensor, like: &Tensor) -> Result<()> {
    check_same_device(op, &[like, ids])?;
    if ids.dtype() != DType::U32 {
        return Err(Error::shape(
            op,
            format!("{name} must be a u32 tensor, got {}", ids.dtype().wgsl()),
        ));
    }
    if ids.shape().len() != 1 {
        return Err(Error::shape(
            op,
            format!("{name} has shape {:?}: expected one axis [n]", ids.shape()),
        ));
    }
    Ok(())
}

/// The parameter block of a kernel that reads only a count (elements, vectors), padded to 16
/// bytes as the templates declare it.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct CountParams {
    pub count: u32,
    _pad: [u32; 3],
}

impl CountParams {
    pub(crate) fn new(count: usize) -> CountParams {
        CountParams {
            count: count as u32,
            _pad: [0; 3],
        }
    }
}

/// The parameter block of a row-wise kernel: its rows, its columns, one number (eps, scale)
/// and one count a family may read (`reduce_layernorm`'s slices; padding elsewhere), 16 bytes
/// as the templates declare it.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct RowParams {
    pub rows: u32,
    pub cols: u32,
    pub value: f32,
    pub count: u32,
}

impl RowParams {
    pub(crate) fn new(rows: usize, cols: usize, value: f32) -> RowParams {
        RowParams::with_count(rows, cols, value, 0)
    }

    pub(crate) fn with_count(rows: usize, cols: usize, value: f32, count: usize) -> RowParams {
        RowParams {
            rows: rows as u32,
            cols: cols as u32,
            value,
            count: count as u32,
        }
    }
}

/// A normalisation's eps must be finite and ≥ 0.
pub(crate) fn check_eps(op: &'static str, eps: f32) -> Result<()> {
    if eps.is_finite() && eps >= 0.0 {
        Ok(())
    } else {
        Err(Error::InvalidArgument {
            op,
            detail: format!("eps must be finite and ≥ 0, got {eps}"),
        })
    }
}

/// Workgroup counts for a 3-D grid, each checked against the per-dimension limit.
pub(crate) fn grid(op: &'static str, gpu: &Gpu, counts: [usize; 3]) -> Result<[u32; 3]> {
    let max = gpu.profile().limits.max_compute_workgroups_per_dimension;
    let mut groups = [0u32; 3];
    for (g, count) in groups.iter_mut().zip(counts) {
        *g = u32::try_from(count)
            .ok()
            .filter(|&c| c <= max)
            .ok_or(Error::OverLimit {
                op,
                what: format!("a grid of {count} workgroups in one dimension"),
                limit: "max_compute_workgroups_per_dimension",
                needed: count as u64,
                allowed: u64::from(max),
            })?;
    }
    Ok(groups)
}

/// The design of a family whose variants differ only in dtype and threads per workgroup
/// (elementwise and per-column families).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElementDesign {
    pub dtype: DType,
    pub wg: u32,
}

impl ElementDesign {
    pub fn parse(v: &Variant) -> Result<Self> {
        Ok(ElementDesign {
            dtype: v.dtype()?,
            wg: v.count("wg")?,
        })
    }
}

/// How a row's threads combine their partial results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduce {
    /// Through workgroup memory: every adapter.
    Shared,
    /// With subgroup operations, where the adapter has them.
    Subgroup,
}

impl Reduce {
    pub(crate) fn parse(v: &Variant) -> Result<Self> {
        v.one_of(
            "reduce",
            &[("shared", Reduce::Shared), ("subgroup", Reduce::Subgroup)],
        )
    }
}

/// The design of a row-wise family (a workgroup per row): dtype, threads per row, reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowDesign {
    pub dtype: DType,
    pub wg: u32,
    pub reduce: Reduce,
}

impl RowDesign {
    pub fn parse(v: &Variant) -> Result<Self> {
        Ok(RowDesign {
            dtype: v.dtype()?,
            wg: v.count("wg")?,
            reduce: Reduce::parse(v)?,
        })
    }
}

/// The call of a simple family (elementwise, per column): only the dtype is fixed, every
/// variant takes it, the widest workgroup wins.
#[derive(Clone, Copy, Debug)]
pub struct Elementwise {
    pub family: &'static str,
    pub dtype: DType,
    /// The element count, for the families whose tuned entries are bucketed by it.
    pub count: Option<usize>,
}

impl Call for Elementwise {
    fn key(&self) -> Key {
        let count = self.count.map(select::bucket);
        let bucket = count.map_or(Bucket::NONE, |n| Bucket::new(&[('n', n)]));
        Key::new(self.family, self.dtype, &[count.unwrap_or(0)], 0, bucket)
    }

    fn request(&self, _: &DeviceProfile) -> Request<'_> {
        Request {
            key: self.key(),
            fixed: vec![dtype_value(self.dtype)],
            filters: Vec::new(),
            order: vec![prefer("the widest workgroup", |v| {
                Ok(i64::from(ElementDesign::parse(v)?.wg))
            })],
            left_open: &[],
        }
    }
}

pub(crate) fn choose_elementwise(
    op: &'static str,
    t: &Tensor,
    count: Option<usize>,
    named: Option<&str>,
) -> Result<Choice> {
    let call = Elementwise {
        family: op,
        dtype: t.dtype(),
        count,
    };
    t.gpu().selector().choose(&call, named)
}

/// The launch of an elementwise family: the selector's choice for `like`'s dtype (`bucket`: the
/// element count its tuned entries are bucketed by, if any), one invocation per each of
/// `threads` items, binding `tensors` in order.
#[allow(clippy::too_many_arguments)]
pub(crate) fn launch_elementwise<P: bytemuck::Pod>(
    op: &'static str,
    like: &Tensor,
    bucket: Option<usize>,
    threads: usize,
    named: Option<&str>,
    tensors: &[&Tensor],
    params: &P,
) -> Result<(Dispatch, Choice)> {
    let choice = choose_elementwise(op, like, bucket, named)?;
    let gpu = like.gpu();
    let wg = u64::from(ElementDesign::parse(&choice.variant)?.wg.max(1));
    let groups = gpu.groups(op, (threads as u64).div_ceil(wg))?;
    let dispatch = Dispatch::new(gpu, &choice.variant, tensors, params, groups)?;
    Ok((dispatch, choice))
}

/// The call of a row-wise family (softmax, layernorm, …): one workgroup per row of `cols`.
#[derive(Clone, Copy, Debug)]
pub struct Rowwise {
    pub family: &'static str,
    pub dtype: DType,
    pub cols: usize,
    /// A boolean variable the call fixes: softmax's `causal`, layernorm's `residual`.
    pub flag: Option<(&'static str, bool)>,
}

impl Call for Rowwise {
    fn key(&self) -> Key {
        let flag = self.flag.map_or(0, |(_, on)| 1 + u32::from(on));
        let bucket = Bucket::new(&[('c', select::bucket(self.cols))]);
        Key::new(self.family, self.dtype, &[self.cols], flag, bucket)
    }

    /// Subgroup reductions where offered; about as many threads as the row is long (64 to 256).
    fn request(&self, _: &DeviceProfile) -> Request<'_> {
        let target = (self.cols.next_power_of_two() as i64).clamp(64, 256);
        let mut fixed = vec![dtype_value(self.dtype)];
        if let Some((name, on)) = self.flag {
            fixed.push((name, Param::Bool(on)));
        }
        Request {
            key: self.key(),
            fixed,
            filters: Vec::new(),
            order: vec![
                prefer("subgroup reductions where offered", |v| {
                    Ok(i64::from(RowDesign::parse(v)?.reduce == Reduce::Subgroup))
                }),
                prefer(
                    "threads per row nearest the row length within 64..256",
                    move |v| Ok(-(i64::from(RowDesign::parse(v)?.wg) - target).abs()),
                ),
            ],
            // A tuned entry names the plain form; its residual and accumulating forms ride on it.
            left_open: &["residual", "accumulate"],
        }
    }
}

/// The row-wise choice for `x`'s last axis.
pub(crate) fn choose_rowwise(
    op: &'static str,
    x: &Tensor,
    flag: Option<(&'static str, bool)>,
    named: Option<&str>,
) -> Result<Choice> {
    let (_, cols) = rows_cols(op, x.shape())?;
    let call = Rowwise {
        family: op,
        dtype: x.dtype(),
        cols,
        flag,
    };
    x.gpu().selector().choose(&call, named)
}

/// Whether every size is a multiple of the variant's derived `multiple` (1 when absent): routes
/// that load whole cooperative fragments from the buffers need multiples of 16.
pub(crate) fn sizes_fit(variant: &Variant, sizes: &[usize]) -> Result<bool> {
    let m = variant.needs.multiple as usize;
    Ok(sizes.iter().all(|s| s.is_multiple_of(m)))
}

pub(crate) fn dtype_value(dtype: DType) -> (&'static str, Param) {
    ("dtype", Param::Str(dtype.wgsl().to_string()))
}

/// Whether the profile is a software adapter (a CPU rasterizer such as lavapipe).
pub(crate) fn software(profile: &DeviceProfile) -> bool {
    profile.is_software()
}
