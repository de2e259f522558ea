use super::Array;
use crate::error::Result;
use crate::shape::MatmulDims;

/// C = A · B, batched: A [.., m, k], B [.., k, n] (ranks 2 or 3, a batch of 1 broadcasts).
pub fn matmul(a: &Array, b: &Array) -> Result<Array> {
    let d = MatmulDims::new(&a.shape, &b.shape)?;
    let mut c = vec![0.0f32; d.batch * d.m * d.n];
    for z in 0..d.batch {
        let a = &a.data[z * d.stride_a..][..d.m * d.k];
        let b = &b.data[z * d.stride_b..][..d.k * d.n];
        let c = &mut c[z * d.stride_c..][..d.m * d.n];
        // i-p-j order walks B and C along rows: the plain loop, in its cache-friendly order.
        for i in 0..d.m {
            for p in 0..d.k {
                let aip = a[i * d.k + p];
                for j in 0..d.n {
                    c[i * d.n + j] += aip * b[p * d.n + j];
                }
            }
        }
    }
    Array::new(&d.out_shape(&a.shape, &b.shape), c)
}

/// x · W + bias over the last axis of x (any leading extents), W [K, N], bias [N]: the
/// reference of the matmul's bias epilogue.
pub fn linear(x: &Array, w: &Array, bias: &Array) -> Result<Array> {
    let (rows, k) = crate::shape::rows_cols("linear", &x.shape)?;
    let y = matmul(&Array::new(&[rows, k], x.data.clone())?, w)?;
    let mut shape = x.shape.clone();
    if let (Some(last), [_, n]) = (shape.last_mut(), y.shape.as_slice()) {
        *last = *n;
    }
    super::add(&Array::new(&shape, y.data)?, bias)
}

/// gelu(x · W + bias): the reference of the matmul's bias + gelu epilogue.
pub fn linear_gelu(x: &Array, w: &Array, bias: &Array) -> Result<Array> {
    super::gelu(&linear(x, w, bias)?)
}

/// The sum of a split-K product's slices, [splits, rows, N] → [rows, N], added in slice order,
/// then + bias[col] (with `bias`) and gelu (with `gelu`, which needs a bias): the reference of
/// the `matmul_reduce` family.
pub fn matmul_reduce(partials: &Array, bias: Option<&Array>, gelu: bool) -> Result<Array> {
    let op = "matmul_reduce";
    let (splits, rest) = match partials.shape.split_first() {
        Some((&s, rest)) if s > 0 && !rest.is_empty() => (s, rest.to_vec()),
        _ => {
            return Err(crate::error::Error::shape(
                op,
                format!(
                    "partials of shape {:?}: expected [splits, .., N]",
                    partials.shape
                ),
            ));
        }
    };
    let count: usize = rest.iter().product();
    let mut sum = vec![0.0f32; count];
    for slice in partials.data.chunks_exact(count).take(splits) {
        for (acc, x) in sum.iter_mut().zip(slice) {
            *acc += x;
        }
    }
    let sum = Array::new(&rest, sum)?;
    match (bias, gelu) {
        (None, false) => Ok(sum),
        (Some(b), false) => super::add(&sum, b),
        (Some(b), true) => super::gelu(&super::add(&sum, b)?),
        (None, true) => Err(crate::error::Error::shape(op, "gelu needs a bias")),
    }
}
