use crate::cpu::Array;
use crate::error::{Error, Result};

/// The output shape of [`permute`] and X's stride (in elements) along each of its leading
/// axes; refuses what is not rank 5 or an order that is not one of 0..4.
pub fn permuted(shape: &[usize], order: [usize; 4]) -> Result<([usize; 5], [usize; 4])> {
    let op = "permute";
    let [d0, d1, d2, d3, c] = shape[..] else {
        return Err(Error::shape(
            op,
            format!("shape {shape:?}: expected rank 5 ([d0, d1, d2, d3, c])"),
        ));
    };
    let mut seen = [false; 4];
    for &a in &order {
        if a >= 4 || std::mem::replace(&mut seen[a], true) {
            return Err(Error::shape(
                op,
                format!("order {order:?}: expected each of the axes 0, 1, 2 and 3 once"),
            ));
        }
    }
    let extents = [d0, d1, d2, d3];
    let strides = [d1 * d2 * d3 * c, d2 * d3 * c, d3 * c, c];
    let [e0, e1, e2, e3] = order.map(|a| extents[a]);
    Ok(([e0, e1, e2, e3, c], order.map(|a| strides[a])))
}

/// [d0, d1, d2, d3, c] → the leading axes in `order` (Y's axis i is X's axis `order[i]`),
/// rows of c copied whole.
pub fn permute(x: &Array, order: [usize; 4]) -> Result<Array> {
    let (shape, [s0, s1, s2, s3]) = permuted(&x.shape, order)?;
    let [e0, e1, e2, e3, c] = shape;
    let mut y = Vec::with_capacity(x.data.len());
    for i0 in 0..e0 {
        for i1 in 0..e1 {
            for i2 in 0..e2 {
                for i3 in 0..e3 {
                    let at = i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3;
                    y.extend_from_slice(&x.data[at..][..c]);
                }
            }
        }
    }
    Array::new(&shape, y)
}
