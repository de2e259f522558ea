//! flash_decode_combine's cases: the CPU split pass's partials of the decoding problems
//! (`families/flash_decode/cases.rs`) merged into O and the LSE.
use crate::cases::prelude::*;

use crate::families::flash_decode::cases::problems;

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-5;

/// Keys per chunk of the partials: several chunks on every shape.
const CHUNK: usize = 128;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut cases = Vec::new();
    for p in problems(gpu, z, "flash_decode_combine")? {
        let parts = cpu::decode_split(&p.q.1, &p.k.1, &p.v.1, p.dims.len, p.causal, p.scale, CHUNK)?;
        let rows = p.dims.rows();
        let d = p.dims.head_dim;
        let part_out = Tensor::from_slice(gpu, &[rows, parts.chunks, d], &parts.out, DType::F32)?;
        let part_ms = Tensor::from_slice(gpu, &[rows, parts.chunks, 2], &parts.max_sum, DType::F32)?;
        let want = cpu::decode_combine(&parts, &p.q.1.shape)?;
        let (o, o_t) = out(gpu, &p.q.1.shape, p.dtype, want.out.data)?;
        let (lse, lse_t) = out(gpu, &p.q.1.shape[..3], DType::F32, want.lse)?;
        cases.push(Case {
            family: "flash_decode_combine",
            fixed: vec![dtype_is(p.dtype)],
            name: format!("flash_decode_combine {} chunks{}", p.suffix, parts.chunks),
            tolerance: tolerance(z, p.dtype, CAMPAIGN_TOLERANCE, 7e-7),
            flops: (rows * parts.chunks * d * 2) as f64,
            bytes: ((rows * parts.chunks * (d + 2)) * 4) as f64 + (rows * d) as f64 * p.dtype.size() as f64,
            outputs: vec![o, lse],
            plan: Box::new(move |name| {
                Ok(single(super::plan(&part_out, &part_ms, &o_t, &lse_t, name)?))
            }),
        });
    }
    Ok(cases)
}
