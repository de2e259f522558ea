//! The one body of every elementwise family: an op over operands of one shape whose folder holds
//! only its contract (an `[elementwise]` table: the operands, the output, one line of WGSL) and
//! its CPU reference of one element (`cpu.rs`). The build script writes each family's module as
//! calls into the functions here and one [`ElementOp`] variant per family, through which every
//! path reaches it ([`Backend::elementwise`](crate::Backend::elementwise)); the template is the
//! shared `_elementwise.wgsl.jinja`. A new op is its contract and its function.

use crate::cases::{Case, Inputs, Sizes, dtype_is, dtypes, out, single, tolerance};
use crate::cpu::{Array, check_array};
use crate::error::{Error, Result};
use crate::gpu::{Dispatch, Gpu};
use crate::launch::{
    CountParams, check_input_shape, check_no_alias, check_operands, check_out_shape,
    launch_elementwise, record,
};
use crate::select::Choice;
use crate::tensor::Tensor;

// `ElementOp`, written by the build script from the elementwise families' contracts.
include!(concat!(env!("OUT_DIR"), "/element_ops.rs"));

/// One element of an op's CPU reference, by its number of operands.
#[derive(Clone, Copy, Debug)]
pub enum Scalar {
    One(fn(f32) -> f32),
    Two(fn(f32, f32) -> f32),
    Three(fn(f32, f32, f32) -> f32),
}

impl Scalar {
    /// Element `i` of the op over `values` (one slice per operand, as many as it takes).
    fn at(self, values: &[&[f32]], i: usize) -> f32 {
        match self {
            Scalar::One(f) => f(values[0][i]),
            Scalar::Two(f) => f(values[0][i], values[1][i]),
            Scalar::Three(f) => f(values[0][i], values[1][i], values[2][i]),
        }
    }
}

/// Refuses a call with another number of operands than `op` takes.
fn check_arity(op: ElementOp, given: usize) -> Result<()> {
    let want = op.operands();
    if given != want.len() {
        return Err(Error::InvalidArgument {
            op: op.family(),
            detail: format!(
                "takes {} operand(s) ({}), got {given}",
                want.len(),
                want.join(", ")
            ),
        });
    }
    Ok(())
}

/// `op` over `operands` into a new tensor. Where the first operand the op reads of a product
/// is the product recorded last and that launch has a form that writes the op's result too
/// (`matmul`'s two-output epilogues), the product's launch writes it.
pub fn apply(op: ElementOp, operands: &[&Tensor]) -> Result<Tensor> {
    check_arity(op, operands.len())?;
    let first = operands[0];
    let y = Tensor::uninit(first.gpu(), first.shape(), first.dtype())?;
    if !crate::fusion::elementwise(op, operands, &y)? {
        apply_into(op, operands, &y, None)?;
    }
    Ok(y)
}

/// `op` over `operands` written into `y`, with the named variant or the selector's choice.
pub fn apply_into(
    op: ElementOp,
    operands: &[&Tensor],
    y: &Tensor,
    named: Option<&str>,
) -> Result<Choice> {
    record(y.gpu(), launch(op, operands, y, named)?)
}

/// Checks the call and prepares its launch: operands of one shape, dtype and device, the
/// output of their shape and apart from them.
pub fn launch(
    op: ElementOp,
    operands: &[&Tensor],
    y: &Tensor,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    check_arity(op, operands.len())?;
    let family = op.family();
    let mut all = operands.to_vec();
    all.push(y);
    check_operands(family, &all)?;
    let first = operands[0];
    for (name, t) in op.operands().iter().zip(operands).skip(1) {
        check_input_shape(family, name, t, first.shape())?;
    }
    check_out_shape(family, y, first.shape())?;
    check_no_alias(family, y, operands)?;
    let params = CountParams::new(first.numel());
    launch_elementwise(family, first, None, first.numel(), named, &all, &params)
}

/// `op`'s CPU reference over whole arrays of one shape.
pub fn cpu(op: ElementOp, operands: &[&Array]) -> Result<Array> {
    check_arity(op, operands.len())?;
    let family = op.family();
    let first = operands[0];
    for (name, a) in op.operands().iter().zip(operands) {
        check_array(family, a)?;
        if a.shape != first.shape {
            return Err(Error::shape(
                family,
                format!(
                    "{name} has shape {:?}, {} has {:?}",
                    a.shape,
                    op.operands()[0],
                    first.shape
                ),
            ));
        }
    }
    let values: Vec<&[f32]> = operands.iter().map(|a| a.data.as_slice()).collect();
    let scalar = op.scalar();
    let data = (0..first.data.len())
        .map(|i| scalar.at(&values, i))
        .collect();
    Array::new(&first.shape, data)
}

/// `op`'s cases: each operand a fresh random vector of the sizes' elementwise length, in every
/// dtype the adapter has.
pub(crate) fn cases(op: ElementOp, gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let family = op.family();
    let mut inputs = Inputs::for_family(family);
    let n = z.elementwise;
    let mut cases = Vec::new();
    for dtype in dtypes(gpu, z) {
        let mut tensors = Vec::new();
        let mut arrays = Vec::new();
        for _ in op.operands() {
            let (t, a) = inputs.pair(gpu, &[n], dtype)?;
            tensors.push(t);
            arrays.push(a);
        }
        let want = cpu(op, &arrays.iter().collect::<Vec<_>>())?;
        let (o, y) = out(gpu, &[n], dtype, want.data)?;
        let moved = (op.operands().len() + 1) as f64;
        cases.push(Case {
            family,
            fixed: vec![dtype_is(dtype)],
            name: format!("{family} {n} {}", dtype.wgsl()),
            tolerance: tolerance(z, dtype, op.campaign_tolerance(), op.tolerance()),
            flops: op.flops() * n as f64,
            bytes: moved * n as f64 * dtype.size() as f64,
            outputs: vec![o],
            launch: Box::new(move |v| {
                let operands: Vec<&Tensor> = tensors.iter().collect();
                Ok(single(launch(op, &operands, &y, v)?))
            }),
        });
    }
    Ok(cases)
}
