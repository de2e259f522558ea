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
