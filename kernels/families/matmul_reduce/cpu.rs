use crate::cpu::Array;
use crate::error::Result;

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
        (Some(b), false) => crate::cpu::add(&sum, b),
        (Some(b), true) => crate::cpu::gelu(&crate::cpu::add(&sum, b)?),
        (None, true) => Err(crate::error::Error::shape(op, "gelu needs a bias")),
    }
}
