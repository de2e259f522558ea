use crate::cpu::{Array, check_array};
use crate::error::{Error, Result};
use crate::optim::AdamW;

/// One AdamW step in place, in f32 and in the order the GPU kernel uses:
/// m = β₁m + (1 − β₁)g; v = β₂v + (1 − β₂)g²; p = p − lr · ((m / bc1) / (√(v / bc2) + eps) + wd · p),
/// with (bc1, bc2) = [`AdamW::bias_corrections`]. `p`, `g`, `m` and `v` must share one shape.
pub fn adamw(p: &mut Array, g: &Array, m: &mut Array, v: &mut Array, h: &AdamW) -> Result<()> {
    let op = "adamw";
    h.check(op)?;
    for (name, t) in [("p", &*p), ("g", g), ("m", &*m), ("v", &*v)] {
        check_array(op, t)?;
        if t.shape != p.shape {
            return Err(Error::shape(
                op,
                format!("{name} has shape {:?}, p has {:?}", t.shape, p.shape),
            ));
        }
    }
    step_elements(&mut p.data, &g.data, &mut m.data, &mut v.data, h);
    Ok(())
}

/// The update of [`adamw`] on matching slices (checked by the caller): the one rule the CPU
/// path applies, per tensor or per row of an AdamW table.
pub(crate) fn step_elements(p: &mut [f32], g: &[f32], m: &mut [f32], v: &mut [f32], h: &AdamW) {
    let (bc1, bc2) = h.bias_corrections();
    for (((w, &gi), mi), vi) in p.iter_mut().zip(g).zip(m.iter_mut()).zip(v.iter_mut()) {
        *mi = h.beta1 * *mi + (1.0 - h.beta1) * gi;
        *vi = h.beta2 * *vi + (1.0 - h.beta2) * gi * gi;
        let update = (*mi / bc1) / ((*vi / bc2).sqrt() + h.eps) + h.weight_decay * *w;
        *w -= h.lr * update;
    }
}
