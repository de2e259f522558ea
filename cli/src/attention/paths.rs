//! The paths a run compares on the same inputs: the CPU reference, the flash kernels and the
//! naive GPU path, each prepared once and its outputs read back on the checked slices.

use rand::{Rng, SeedableRng, rngs::StdRng};
use serde_json::{Value, json};

use kiln::cpu::{self, Array};
use kiln::ops::attention::{self, BackwardVariants, Grads};
use kiln::shape::AttentionDims;
use kiln::tensor::round_to_f16;
use kiln::{DType, Dispatch, Gpu, Result, Tensor};

/// Inputs on the GPU and, for the CPU path, their first `slices` batch × head slices.
pub(super) struct Inputs {
    q: Tensor,
    k: Tensor,
    v: Tensor,
    d_o: Tensor,
    pub(super) cpu: [Array; 4],
}

/// Results of one path on the checked slices: O, then dQ, dK, dV with `--backward`.
pub(super) type Outputs = Vec<Vec<f32>>;

/// Q and dO shaped `q`, K and V shaped `kv`; the CPU path's copies hold the first `slices`
/// query matrices and the `slices / group` K/V matrices they read.
pub(super) fn inputs(
    gpu: &Gpu,
    [q_shape, kv_shape]: [&[usize; 4]; 2],
    slices: usize,
    group: usize,
    dtype: DType,
    seed: u64,
) -> Result<Inputs> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut make = |shape: &[usize; 4], slices: usize| -> Result<(Tensor, Array)> {
        let n: usize = shape.iter().product();
        let per_slice = shape[2] * shape[3];
        // Device tensor first: its limit check refuses absurd sizes before host memory is taken.
        let t = Tensor::uninit(gpu, shape, dtype)?;
        let mut data: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        if dtype == DType::F16 {
            data = round_to_f16(&data);
        }
        t.write(&data)?;
        data.truncate(slices * per_slice);
        Ok((t, Array::new(&[slices, shape[2], shape[3]], data)?))
    };
    let (q, qc) = make(q_shape, slices)?;
    let (k, kc) = make(kv_shape, slices / group)?;
    let (v, vc) = make(kv_shape, slices / group)?;
    let (d_o, dc) = make(q_shape, slices)?;
    Ok(Inputs {
        q,
        k,
        v,
        d_o,
        cpu: [qc, kc, vc, dc],
    })
}

pub(super) fn cpu_path(
    q: &Array,
    k: &Array,
    v: &Array,
    d_o: &Array,
    causal: bool,
    scale: f32,
    backward: bool,
) -> Result<Outputs> {
    if backward {
        // The standard backward runs the forward pass itself: this is forward + backward.
        let (o, g) = cpu::attention_forward_backward(q, k, v, d_o, causal, scale)?;
        Ok(vec![o.out.data, g.dq.data, g.dk.data, g.dv.data])
    } else {
        Ok(vec![cpu::attention(q, k, v, causal, scale)?.out.data])
    }
}

/// The worst relative L2 error over the outputs.
pub(super) fn error(got: &Outputs, want: &Outputs) -> f64 {
    got.iter()
        .zip(want)
        .map(|(g, w)| cpu::rel_l2(g, w))
        .fold(0.0, f64::max)
}

/// The first `slices` batch × head slices of a tensor.
async fn head(t: &Tensor, slices: usize, dims: &AttentionDims, rows: usize) -> Result<Vec<f32>> {
    let mut all = t.read().await?;
    all.truncate(slices * rows * dims.head_dim);
    Ok(all)
}

/// O and (with the backward pass) dQ, dK, dV on the checked slices.
async fn outputs(
    o: &Tensor,
    grads: Option<&Grads>,
    slices: usize,
    dims: &AttentionDims,
) -> Result<Outputs> {
    let mut out = vec![head(o, slices, dims, dims.q_len).await?];
    if let Some(g) = grads {
        out.push(head(&g.dq, slices, dims, dims.q_len).await?);
        // The K/V matrices the checked query matrices read.
        let kv_slices = slices / dims.group.max(1);
        out.push(head(&g.dk, kv_slices, dims, dims.kv_len).await?);
        out.push(head(&g.dv, kv_slices, dims, dims.kv_len).await?);
    }
    Ok(out)
}

pub(super) struct FlashRun {
    pub(super) dispatches: Vec<Dispatch>,
    pub(super) choices: Vec<Value>,
    o: Tensor,
    grads: Option<Grads>,
}

impl FlashRun {
    pub(super) fn prepare(
        x: &Inputs,
        causal: bool,
        scale: f32,
        backward: bool,
        fwd: Option<&str>,
        bwd: BackwardVariants<'_>,
    ) -> Result<FlashRun> {
        let gpu = x.q.gpu();
        let o = Tensor::full(gpu, x.q.shape(), f32::NAN, x.q.dtype())?;
        let lse = Tensor::full(gpu, &x.q.shape()[..3], f32::NAN, DType::F32)?;
        let (dispatch, choice) =
            attention::launch_forward(&x.q, &x.k, &x.v, &o, &lse, causal, scale, fwd)?;
        let mut choices = vec![describe(&choice)];
        let mut dispatches = vec![dispatch];
        let grads = if backward {
            let g = Grads {
                dq: Tensor::full(gpu, x.q.shape(), f32::NAN, x.q.dtype())?,
                dk: Tensor::full(gpu, x.k.shape(), f32::NAN, x.k.dtype())?,
                dv: Tensor::full(gpu, x.v.shape(), f32::NAN, x.v.dtype())?,
            };
            let plan = attention::launch_backward(
                &x.q, &x.k, &x.v, &o, &lse, &x.d_o, &g, causal, scale, bwd,
            )?;
            choices.extend(plan.choices.iter().map(describe));
            dispatches.extend(plan.dispatches);
            Some(g)
        } else {
            None
        };
        Ok(FlashRun {
            dispatches,
            choices,
            o,
            grads,
        })
    }

    pub(super) fn refs(&self) -> Vec<&Dispatch> {
        self.dispatches.iter().collect()
    }

    pub(super) async fn outputs(&self, slices: usize, dims: &AttentionDims) -> Result<Outputs> {
        outputs(&self.o, self.grads.as_ref(), slices, dims).await
    }
}

fn describe(c: &kiln::Choice) -> Value {
    json!({"family": c.variant.family, "variant": c.variant.name, "reason": c.reason.to_string()})
}

pub(super) struct NaiveRun {
    dispatches: Vec<Dispatch>,
    o: Tensor,
    grads: Option<Grads>,
}

impl NaiveRun {
    pub(super) fn prepare(
        x: &Inputs,
        causal: bool,
        scale: f32,
        backward: bool,
    ) -> Result<NaiveRun> {
        let fwd = attention::launch_naive_forward(&x.q, &x.k, &x.v, causal, scale)?;
        let mut dispatches = fwd.dispatches;
        let grads = if backward {
            let g = Grads::like(&x.q, &x.k, &x.v)?;
            dispatches.extend(attention::launch_naive_backward(
                &x.q, &x.k, &x.v, &fwd.probs, &x.d_o, &g, scale,
            )?);
            Some(g)
        } else {
            None
        };
        Ok(NaiveRun {
            dispatches,
            o: fwd.out,
            grads,
        })
    }

    pub(super) fn refs(&self) -> Vec<&Dispatch> {
        self.dispatches.iter().collect()
    }

    pub(super) async fn outputs(&self, slices: usize, dims: &AttentionDims) -> Result<Outputs> {
        outputs(&self.o, self.grads.as_ref(), slices, dims).await
    }
}
