use crate::cpu::Array;
use crate::error::{Error, Result};

/// A split product's slices [splits, d0, d1, d2, d3, c] summed in order (with the bias added by
/// column of the product's rows, which are `bias`'s length), then the leading axes put in
/// `order`: `(C, Y)`, as `matmul_reduce` followed by `permute`.
pub fn reduce_permute(
    partials: &Array,
    bias: Option<&Array>,
    order: [usize; 4],
) -> Result<(Array, Array)> {
    let [splits, ref c_shape @ ..] = partials.shape[..] else {
        return Err(Error::shape("reduce_permute", "the slices have no shape"));
    };
    let count: usize = c_shape.iter().product();
    let n = bias.map_or(count, |b| b.data.len());
    if c_shape.len() != 5 || n == 0 || !count.is_multiple_of(n) {
        return Err(Error::shape(
            "reduce_permute",
            format!(
                "slices {:?} with a bias of {n}: expected [splits, d0, d1, d2, d3, c] in rows of the bias",
                partials.shape
            ),
        ));
    }
    let rows = Array::new(&[splits, count / n, n], partials.data.clone())?;
    let c = crate::cpu::matmul_reduce(&rows, bias, false)?;
    let c = Array::new(c_shape, c.data)?;
    let y = crate::cpu::permute(&c, order)?;
    Ok((c, y))
}
