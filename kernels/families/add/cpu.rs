use crate::cpu::Array;
use crate::error::Result;
use crate::shape::Broadcast;

/// C = A + B with numpy-style broadcasting (rank ≤ 4).
pub fn add(a: &Array, b: &Array) -> Result<Array> {
    let bc = Broadcast::new("add", &a.shape, &b.shape)?;
    let [s0, s1, s2, s3] = bc.shape4;
    let mut c = Vec::with_capacity(s0 * s1 * s2 * s3);
    for i0 in 0..s0 {
        for i1 in 0..s1 {
            for i2 in 0..s2 {
                for i3 in 0..s3 {
                    let at = |s: [usize; 4]| i0 * s[0] + i1 * s[1] + i2 * s[2] + i3 * s[3];
                    c.push(a.data[at(bc.stride_a)] + b.data[at(bc.stride_b)]);
                }
            }
        }
    }
    Array::new(&bc.shape, c)
}
