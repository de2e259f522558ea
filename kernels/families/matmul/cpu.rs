use crate::cpu::Array;
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
    let shape = crate::shape::with_last(&x.shape, &y.shape);
    crate::cpu::add(&Array::new(&shape, y.data)?, bias)
}

/// gelu(x · W + bias): the reference of the matmul's bias + gelu epilogue.
pub fn linear_gelu(x: &Array, w: &Array, bias: &Array) -> Result<Array> {
    crate::cpu::gelu(&linear(x, w, bias)?)
}
