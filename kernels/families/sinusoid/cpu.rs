use crate::cpu::Array;
use crate::error::{Error, Result};

/// Rows 2r and 2r+1 of the [2R, n] result hold sin and cos of freq[r]·(start + x·step) + phase[r].
pub fn sinusoid(freq: &[f32], phase: &[f32], n: usize, start: f32, step: f32) -> Result<Array> {
    if freq.len() != phase.len() || freq.is_empty() {
        return Err(Error::shape(
            "sinusoid",
            format!(
                "freq [{}] and phase [{}] must be equal and non-empty",
                freq.len(),
                phase.len()
            ),
        ));
    }
    let mut out = vec![0.0f32; 2 * freq.len() * n];
    for (r, (&f, &ph)) in freq.iter().zip(phase).enumerate() {
        for x in 0..n {
            let angle = f * (start + x as f32 * step) + ph;
            out[2 * r * n + x] = angle.sin();
            out[(2 * r + 1) * n + x] = angle.cos();
        }
    }
    Array::new(&[2 * freq.len(), n], out)
}
