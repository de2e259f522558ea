//! The kernel-level comparison: causal attention forward + backward at one shape over several
//! sequence lengths, on the flash kernels, the naive GPU path (scores materialised) and the CPU
//! path, with the bytes each GPU path moves (kiln's byte model) and the variants chosen.

use kiln_app::kiln::cpu::{self, Array};
use kiln_app::kiln::ops::attention::{self, BackwardVariants, Grads, traffic};
use kiln_app::kiln::{self, Choice, DType, Dispatch, Gpu, Tensor, bench};
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde::Serialize;

use crate::error::Result;

/// The shape swept: batch, heads, head dimension (the sequence length varies), and the GPU
/// paths' number format (the CPU path's is f32, on the same inputs rounded to it).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Shape {
    pub batch: usize,
    pub heads: usize,
    pub head_dim: usize,
    #[serde(serialize_with = "dtype_name")]
    pub dtype: DType,
}

impl Shape {
    /// The same shape in `dtype`.
    pub fn in_dtype(self, dtype: DType) -> Shape {
        Shape { dtype, ..self }
    }
}

fn dtype_name<S: serde::Serializer>(dtype: &DType, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(dtype.wgsl())
}

/// One sequence length's figures.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    pub seq: usize,
    /// Median ms of forward + backward.
    pub flash_ms: f64,
    pub naive_ms: f64,
    /// The CPU path's ms (wall clock), `None` where it was left out for time.
    pub cpu_ms: Option<f64>,
    pub flash_mb: f64,
    pub naive_mb: f64,
    /// What the naive path writes and reads of the N×N matrices alone.
    pub score_matrix_mb: f64,
    pub gpu_clock: bench::Clock,
    /// The worst relative L2 error of O, dQ, dK and dV against the CPU path, per GPU path
    /// (`None` where the CPU path was left out for time).
    pub flash_rel_l2: Option<f64>,
    pub naive_rel_l2: Option<f64>,
}

/// The whole sweep.
#[derive(Clone, Debug, Serialize)]
pub struct Sweep {
    pub adapter: String,
    pub shape: Shape,
    pub points: Vec<Point>,
    /// "family variant — why" for every kernel the flash path ran.
    pub flash_variants: Vec<String>,
    pub cpu_path: String,
}

/// Kiln's byte model of causal forward + backward at one length (no GPU needed: it is arithmetic
/// on the shape).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Bytes {
    pub flash_mb: f64,
    pub naive_mb: f64,
    /// What the naive path writes and reads of the N×N matrices alone.
    pub score_matrix_mb: f64,
}

impl Bytes {
    pub fn of(shape: Shape, n: usize) -> Result<Bytes> {
        let dims = [shape.batch, shape.heads, n, shape.head_dim];
        // talk:begin traffic
        let ad = kiln::shape::AttentionDims::new("sweep", &dims, &dims, &dims)?;
        let mb = |p| traffic::total(&traffic::traffic(&ad, shape.dtype, p, true)) as f64 / 1e6;
        Ok(Bytes {
            flash_mb: mb(traffic::Path::Flash),
            naive_mb: mb(traffic::Path::Naive),
            score_matrix_mb: traffic::score_matrix_bytes(&ad, shape.dtype) as f64 / 1e6,
        })
        // talk:end traffic
    }
}

/// The flash path's launches on Q, K, V and dO (causal, scale 1/√d): the forward, then the
/// backward's pre-pass, dK/dV and dQ, with the tensors they write.
struct FlashPath {
    forward: Dispatch,
    forward_choice: Choice,
    backward: attention::BackwardPlan,
    // Written by the launches: O, the log-sum-exp, the gradients.
    outputs: (Tensor, Tensor, Grads),
}

impl FlashPath {
    fn prepare(q: &Tensor, k: &Tensor, v: &Tensor, d_o: &Tensor) -> Result<FlashPath> {
        let dims = q.shape().to_vec();
        let scale = 1.0 / (dims[dims.len() - 1] as f32).sqrt();
        let o = Tensor::uninit(q.gpu(), &dims, q.dtype())?;
        let lse = Tensor::uninit(q.gpu(), &dims[..dims.len() - 1], DType::F32)?;
        let (forward, forward_choice) =
            attention::launch_forward(q, k, v, &o, &lse, true, scale, None)?;
        let grads = Grads::like(q, k, v)?;
        let backward = attention::launch_backward(
            q,
            k,
            v,
            &o,
            &lse,
            d_o,
            &grads,
            true,
            scale,
            BackwardVariants::default(),
        )?;
        Ok(FlashPath {
            forward,
            forward_choice,
            backward,
            outputs: (o, lse, grads),
        })
    }
}

/// The variants the flash path runs at one shape, in the order the walkthrough shows them.
#[derive(Clone, Debug)]
pub struct FlashChoices {
    pub forward: Choice,
    pub dq: Choice,
    pub dkdv: Choice,
    /// The D = rowsum(dO ∘ O) pre-pass of the backward.
    pub delta: Choice,
}

impl FlashChoices {
    /// What the selector picks for causal attention at `shape` and length `n`, found by preparing
    /// the launches on unwritten tensors: the same calls the sweep makes, so the same answer.
    pub fn for_shape(gpu: &Gpu, shape: Shape, n: usize) -> Result<FlashChoices> {
        let dims = [shape.batch, shape.heads, n, shape.head_dim];
        let t = || Tensor::uninit(gpu, &dims, shape.dtype);
        let (q, k, v, d_o) = (t()?, t()?, t()?, t()?);
        let plan = FlashPath::prepare(&q, &k, &v, &d_o)?;
        let forward = plan.forward_choice;
        // launch_backward's choices: the pre-pass, dK/dV, dQ.
        match <[Choice; 3]>::try_from(plan.backward.choices) {
            Ok([delta, dkdv, dq]) => Ok(FlashChoices {
                forward,
                dq,
                dkdv,
                delta,
            }),
            Err(c) => Err(kiln::Error::InvalidArgument {
                op: "flash",
                detail: format!("the backward plan made {} choices, not 3", c.len()),
            }
            .into()),
        }
    }

    /// Forward, dQ, dK/dV, then the pre-pass.
    pub fn all(&self) -> Vec<Choice> {
        vec![
            self.forward.clone(),
            self.dq.clone(),
            self.dkdv.clone(),
            self.delta.clone(),
        ]
    }
}

/// The CPU path's column of the sweep alone, for a page without WebGPU.
#[derive(Clone, Debug, Serialize)]
pub struct CpuPoint {
    pub seq: usize,
    pub cpu_ms: f64,
    #[serde(flatten)]
    pub bytes: Bytes,
}

/// Times the CPU path (kiln's standard attention forward + backward, one thread) at length `n`,
/// on inputs drawn like [`run`]'s; the byte model beside it.
pub fn run_cpu(shape: Shape, n: usize) -> Result<CpuPoint> {
    let mut rng = StdRng::seed_from_u64(11);
    let dims = [shape.batch, shape.heads, n, shape.head_dim];
    let scale = 1.0 / (shape.head_dim as f32).sqrt();
    let len = dims.iter().product();
    let mut array = || {
        Array::new(
            &dims,
            (0..len).map(|_| rng.random_range(-1.0..1.0)).collect(),
        )
    };
    let (qa, ka, va, doa) = (array()?, array()?, array()?, array()?);
    let t = bench::time_cpu(0, 1, 0.0, || {
        let _ = cpu::attention_forward_backward(&qa, &ka, &va, &doa, true, scale);
    })?;
    Ok(CpuPoint {
        seq: n,
        cpu_ms: t.median_ms,
        bytes: Bytes::of(shape, n)?,
    })
}

/// The largest relative L2 error of the tensors against the CPU path's arrays.
async fn worst_error(got: [&Tensor; 4], want: [&Vec<f32>; 4]) -> Result<f64> {
    let mut worst = 0.0f64;
    for (g, w) in got.into_iter().zip(want) {
        let e = cpu::rel_l2(&g.read().await?, w);
        // NaN is worse than any number (f64::max would drop it).
        worst = if e.is_nan() { f64::NAN } else { worst.max(e) };
        if worst.is_nan() {
            break;
        }
    }
    Ok(worst)
}

/// Inputs in [-1, 1) as the GPU holds them in `dtype` (f16-rounded for f16): the tensor, and the
/// CPU path's array of the same values.
fn random(gpu: &Gpu, shape: &[usize], dtype: DType, rng: &mut StdRng) -> Result<(Tensor, Array)> {
    let n = shape.iter().product();
    let mut data: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
    if dtype == DType::F16 {
        data = kiln::tensor::round_to_f16(&data);
    }
    Ok((
        Tensor::from_slice(gpu, shape, &data, dtype)?,
        Array::new(shape, data)?,
    ))
}

/// Sweeps `seqs`; the CPU path runs while its forward + backward stays under `cpu_limit_ms`
/// (estimated from the previous length, as the work grows with N²).
pub async fn run(
    gpu: &Gpu,
    shape: Shape,
    seqs: &[usize],
    repeats: usize,
    cpu_limit_ms: f64,
) -> Result<Sweep> {
    let mut rng = StdRng::seed_from_u64(11);
    let mut points = Vec::new();
    let mut flash_variants = Vec::new();
    let mut last_cpu: Option<(usize, f64)> = None;
    for (i, &n) in seqs.iter().enumerate() {
        let dims = [shape.batch, shape.heads, n, shape.head_dim];
        let scale = 1.0 / (shape.head_dim as f32).sqrt();
        let (q, qa) = random(gpu, &dims, shape.dtype, &mut rng)?;
        let (k, ka) = random(gpu, &dims, shape.dtype, &mut rng)?;
        let (v, va) = random(gpu, &dims, shape.dtype, &mut rng)?;
        let (d_o, doa) = random(gpu, &dims, shape.dtype, &mut rng)?;

        // Flash: forward, then the three backward kernels.
        let plan = FlashPath::prepare(&q, &k, &v, &d_o)?;
        let mut flash: Vec<&Dispatch> = vec![&plan.forward];
        flash.extend(plan.backward.dispatches.iter());
        if i + 1 == seqs.len() {
            for c in std::iter::once(&plan.forward_choice).chain(&plan.backward.choices) {
                flash_variants.push(format!(
                    "{} {} — {}",
                    c.variant.family, c.variant.name, c.reason
                ));
            }
        }
        let flash_t = bench::time_dispatches(gpu, &flash, 2, repeats).await?;

        // talk:begin naive
        // Naive: S, P, O materialised; the textbook backward from P.
        let naive = attention::launch_naive_forward(&q, &k, &v, true, scale)?;
        let ngrads = Grads::like(&q, &k, &v)?;
        let nb = attention::launch_naive_backward(&q, &k, &v, &naive.probs, &d_o, &ngrads, scale)?;
        // talk:end naive
        let mut naive_d: Vec<&Dispatch> = naive.dispatches.iter().collect();
        naive_d.extend(nb.iter());
        let naive_t = bench::time_dispatches(gpu, &naive_d, 2, repeats).await?;

        // The CPU path, while it stays affordable; both GPU paths checked against it.
        let estimate = last_cpu.map(|(m, ms)| ms * (n * n) as f64 / (m * m) as f64);
        let (mut cpu_ms, mut flash_rel_l2, mut naive_rel_l2) = (None, None, None);
        if estimate.is_none_or(|e| e <= cpu_limit_ms) {
            let mut want = None;
            let t = bench::time_cpu(0, 1, 0.0, || {
                want = Some(cpu::attention_forward_backward(
                    &qa, &ka, &va, &doa, true, scale,
                ));
            })?;
            last_cpu = Some((n, t.median_ms));
            cpu_ms = Some(t.median_ms);
            if let Some(want) = want {
                let (f, g) = want?;
                let want = [&f.out.data, &g.dq.data, &g.dk.data, &g.dv.data];
                let (o, _, fg) = &plan.outputs;
                flash_rel_l2 = Some(worst_error([o, &fg.dq, &fg.dk, &fg.dv], want).await?);
                let got = [&naive.out, &ngrads.dq, &ngrads.dk, &ngrads.dv];
                naive_rel_l2 = Some(worst_error(got, want).await?);
            }
        }

        let bytes = Bytes::of(shape, n)?;
        points.push(Point {
            seq: n,
            flash_ms: flash_t.median_ms,
            naive_ms: naive_t.median_ms,
            cpu_ms,
            flash_mb: bytes.flash_mb,
            naive_mb: bytes.naive_mb,
            score_matrix_mb: bytes.score_matrix_mb,
            gpu_clock: flash_t.clock,
            flash_rel_l2,
            naive_rel_l2,
        });
    }
    Ok(Sweep {
        adapter: gpu.profile().name.clone(),
        shape,
        points,
        flash_variants,
        cpu_path: "kiln::cpu standard attention forward + backward, one thread".into(),
    })
}
