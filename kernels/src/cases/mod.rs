//! Case tables: for every kernel family, the inputs that prove it — seeded random tensors, the
//! CPU reference's answer, the tolerance, the FLOP and byte model — and how to launch the op
//! with a named variant. Each family's table lives in its folder (`families/<family>/cases.rs`)
//! and is found by the build script. The fleet campaign times variants on these cases, and the
//! every-variant test runs each offered variant on the [`Scale::Proof`] cases.

mod proof;
mod score;

pub use proof::{Proof, prove_family};
pub use score::{Expected, Output, Scored};

use crate::contract::Param;
use crate::cpu::{self, Array};
use crate::error::{Error, Result};
use crate::tensor::round_to_f16;
use crate::{Choice, DType, Dispatch, Gpu, Tensor};

/// What [`Case::check`] writes into every word of a u32 output before the launch.
pub(crate) const POISON_WORD: u32 = 0xdead_beef;

/// A case's launches: every dispatch in order, the ones to time, and the named variant's choice.
#[derive(Debug)]
pub struct Launches {
    pub all: Vec<Dispatch>,
    pub timed: Vec<usize>,
    pub choice: Choice,
}

/// Makes a case's launches with a named variant, or the selector's choice with `None`.
pub(crate) type Launcher = Box<dyn Fn(Option<&str>) -> Result<Launches>>;

/// One family on one fixed shape.
pub struct Case {
    pub family: &'static str,
    pub name: String,
    /// The variables the call fixes (dtype, causal, head dim, epilogue), for `Variant::takes`.
    pub fixed: Vec<(&'static str, Param)>,
    /// The largest relative L2 error against the CPU reference that counts as correct, for each
    /// output that has no bound of its own (a campaign's: every output).
    pub tolerance: f64,
    /// Floating-point operations and the fewest bytes moved by the timed dispatches.
    pub flops: f64,
    pub bytes: f64,
    pub outputs: Vec<Output>,
    pub(crate) launch: Launcher,
}

impl std::fmt::Debug for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Case")
            .field("family", &self.family)
            .field("name", &self.name)
            .field("tolerance", &self.tolerance)
            .finish_non_exhaustive()
    }
}

impl Case {
    /// The launch of `variant` on this case, or of the selector's choice with `None`.
    /// `Error::Shape` when the variant does not take the call (another dtype, head dim, a shape
    /// its route refuses).
    pub fn launches(&self, variant: Option<&str>) -> Result<Launches> {
        (self.launch)(variant)
    }

    /// Poisons the outputs (NaN, or a marker for pixels), runs every launch once and returns
    /// each output's relative L2 error against the CPU reference with its bound. A GPU error is
    /// returned as such.
    pub async fn check(&self, gpu: &Gpu, launches: &Launches) -> Result<Vec<Scored>> {
        for o in &self.outputs {
            match &o.expected {
                Expected::Values { t, .. } => t.write(&vec![f32::NAN; t.numel()])?,
                Expected::Words { t, .. } => t.write_u32(&vec![POISON_WORD; t.numel()])?,
            }
        }
        let all: Vec<_> = launches.all.iter().collect();
        gpu.submit(&all)?;
        gpu.check()?;
        let mut scores = Vec::with_capacity(self.outputs.len());
        for o in &self.outputs {
            let err = match &o.expected {
                Expected::Values { t, want } => cpu::rel_l2(&t.read().await?, want),
                Expected::Words { t, want } => {
                    let channels = |px: &[u32]| -> Vec<f32> {
                        px.iter()
                            .flat_map(|p| p.to_le_bytes())
                            .map(f32::from)
                            .collect()
                    };
                    cpu::rel_l2(&channels(&t.read_u32().await?), &channels(want))
                }
            };
            scores.push(Scored {
                output: o.name,
                err,
                tolerance: o.tolerance.unwrap_or(self.tolerance),
            });
        }
        Ok(scores)
    }
}

/// How large the cases are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// A hardware GPU's campaign: shapes large enough to time.
    Hardware,
    /// A software adapter's campaign (a CPU running the GPU's work): every family in minutes.
    Software,
    /// Two small sets of shapes that are not tile multiples, covering every value a call fixes
    /// (each dtype the adapter has, epilogue, mask, head dim, residual): every offered variant
    /// has cases it takes.
    Proof,
}

impl Scale {
    /// The campaign's scale for an adapter.
    pub fn campaign(gpu: &Gpu) -> Scale {
        if gpu.profile().is_software() {
            Scale::Software
        } else {
            Scale::Hardware
        }
    }

    fn sizes(self) -> &'static [Sizes] {
        match self {
            Scale::Hardware => std::slice::from_ref(&HARDWARE),
            Scale::Software => std::slice::from_ref(&SOFTWARE),
            Scale::Proof => &PROOF,
        }
    }
}

/// The shapes of one set of cases. The campaign's sets are the same on every device of a kind,
/// so that results compare across a fleet.
#[derive(Debug)]
pub(crate) struct Sizes {
    /// A proof set: every value a call fixes, every dtype the adapter has.
    pub full: bool,
    pub copy: usize,
    pub fma: (usize, u32),
    /// Workgroups and steps of the matrix units' chain (8 subgroups of 4 fragments each).
    pub mma: (usize, u32),
    /// (M, K, N) of the f32 products; the f16 products take the last (all of them in a proof
    /// set). Proof sets end with a shape whose sides are multiples of 16, for the routes that
    /// load whole cooperative fragments.
    pub matmul: &'static [(usize, usize, usize)],
    /// (rows, cols) of the row-wise families.
    pub rows: (usize, usize),
    pub elementwise: usize,
    pub transpose: [usize; 3],
    pub swap: [usize; 3],
    pub sinusoid: (usize, usize),
    pub pixels: (usize, usize),
    /// [B, H, Hkv, N] of the attention problems: Hkv K/V heads under H query heads (Hkv = H
    /// plain, fewer grouped-query attention); the head dim is `head_dims`'. Proof sets end with
    /// lengths that are multiples of 16, for the route that loads whole cooperative fragments.
    pub attention: &'static [[usize; 4]],
    pub head_dims: &'static [usize],
    /// (vocab, width) of the embedding families.
    pub vocab: (usize, usize),
    /// Slices, rows and columns of the split-K sum.
    pub reduce: [usize; 3],
}

const HARDWARE: Sizes = Sizes {
    full: false,
    copy: 1 << 22,
    fma: (1 << 20, 256),
    mma: (1056, 256),
    matmul: &[(256, 256, 256), (1024, 1024, 1024)],
    rows: (1024, 1024),
    elementwise: 1 << 20,
    transpose: [16, 256, 256],
    swap: [256, 16, 64],
    sinusoid: (128, 1024),
    pixels: (512, 512),
    attention: &[[1, 8, 8, 512]],
    head_dims: &[64],
    vocab: (256, 64),
    reduce: [4, 1024, 256],
};

const SOFTWARE: Sizes = Sizes {
    full: false,
    copy: 1 << 18,
    fma: (1 << 14, 64),
    mma: (8, 8),
    matmul: &[(64, 64, 64), (128, 128, 128)],
    rows: (256, 256),
    elementwise: 1 << 16,
    transpose: [4, 64, 64],
    swap: [64, 4, 32],
    sinusoid: (32, 256),
    pixels: (64, 64),
    attention: &[[1, 2, 2, 128]],
    head_dims: &[64],
    vocab: (256, 64),
    reduce: [4, 256, 256],
};

/// Two sets, neither a multiple of any tile or workgroup (counts are whole vec4s where a kernel
/// reads vec4s: add's vec4 form, copy; whole groups of 16 for the FMA chain).
const PROOF: [Sizes; 2] = [
    Sizes {
        full: true,
        copy: 1000,
        fma: (1008, 8),
        mma: (2, 8),
        // 144 rows: two row tiles of the largest (128), which no other proof shape reaches.
        matmul: &[(37, 45, 29), (48, 80, 112), (144, 80, 48)],
        rows: (12, 37),
        elementwise: 1000,
        transpose: [2, 37, 45],
        swap: [7, 3, 37],
        sinusoid: (5, 300),
        pixels: (37, 45),
        // Two heads at both lengths (O merged into rows at H > 1, the cooperative routes at 48),
        // grouped query heads at 48.
        attention: &[[1, 2, 2, 37], [1, 2, 1, 48]],
        head_dims: &[16, 32, 64, 80, 96, 128],
        vocab: (50, 37),
        reduce: [3, 12, 37],
    },
    Sizes {
        full: true,
        copy: 4100,
        fma: (336, 16),
        mma: (3, 5),
        matmul: &[(70, 33, 51), (80, 48, 144)],
        rows: (5, 300),
        elementwise: 4099,
        transpose: [3, 20, 17],
        swap: [5, 9, 20],
        sinusoid: (3, 77),
        pixels: (20, 33),
        attention: &[[2, 1, 1, 70], [1, 1, 1, 80]],
        head_dims: &[16, 32, 64, 80, 96, 128],
        vocab: (33, 70),
        reduce: [2, 5, 300],
    },
];

/// One family's table: its cases on one set of shapes.
pub(crate) type Table = fn(&Gpu, &Sizes) -> Result<Vec<Case>>;

/// What the case tables (`families/<family>/cases.rs`) build with.
pub(crate) mod prelude {
    pub(crate) use super::{
        Attention, Case, Inputs, Launches, Output, Sizes, dtype_is, dtypes, out, proof_bound,
        single, tolerance, values,
    };
    pub(crate) use crate::contract::Param;
    pub(crate) use crate::cpu::{self, Array};
    pub(crate) use crate::error::Result;
    pub(crate) use crate::tensor::round_to_f16;
    pub(crate) use crate::{DType, Gpu, Tensor};
}

use crate::families::{CAMPAIGN_TOLERANCES, TABLES};

/// The families that have a case table, in name order.
pub fn families() -> impl Iterator<Item = &'static str> {
    TABLES.iter().map(|(f, _)| *f)
}

/// The largest relative L2 error a campaign case of `family` in `dtype` allows, as the family's
/// case table sets it (the same constant, through the same rule), without a GPU: the fleet's
/// merge holds crowd reports to it rather than to the tolerance a report states. `None` for a
/// family without a case table.
pub fn campaign_tolerance(family: &str, dtype: DType) -> Option<f64> {
    CAMPAIGN_TOLERANCES
        .iter()
        .find(|(f, _)| *f == family)
        .map(|&(_, campaign)| tolerance(&HARDWARE, dtype, campaign, [0.0; 2]))
}

/// A family's cases at `scale` (both sets for a proof).
pub fn for_family(gpu: &Gpu, family: &str, scale: Scale) -> Result<Vec<Case>> {
    let table = TABLES
        .iter()
        .find(|(f, _)| *f == family)
        .map(|(_, t)| t)
        .ok_or_else(|| Error::UnknownKernel(format!("{family} (no case table)")))?;
    let mut cases = Vec::new();
    for sizes in scale.sizes() {
        cases.extend(table(gpu, sizes)?);
    }
    Ok(cases)
}

/// The cases of the `wanted` families at `scale`, family by family.
pub fn all(gpu: &Gpu, scale: Scale, wanted: &dyn Fn(&str) -> bool) -> Result<Vec<Case>> {
    let mut cases = Vec::new();
    for family in families().filter(|f| wanted(f)) {
        cases.extend(for_family(gpu, family, scale)?);
    }
    Ok(cases)
}

// ---- helpers the tables share ----

pub(crate) fn dtype_is(d: DType) -> (&'static str, Param) {
    ("dtype", Param::Str(d.wgsl().into()))
}

/// The dtypes a set covers on this adapter: f32, and f16 too in a proof set when the adapter
/// has SHADER_F16.
pub(crate) fn dtypes(gpu: &Gpu, z: &Sizes) -> Vec<DType> {
    let mut d = vec![DType::F32];
    if z.full && gpu.profile().features.shader_f16 {
        d.push(DType::F16);
    }
    d
}

/// The largest relative L2 error a case allows. A campaign (larger shapes, any device) keeps a
/// margin: `campaign` for f32, 100× that for f16. A proof set allows `proof[0]` in f32 and
/// `proof[1]` in f16: each at most about 10× the worst any variant measured (kernels/README.md's
/// "Proofs and their bounds" lists the measurement and the bound per family, output and dtype),
/// 0 for data moves, which are exact.
pub(crate) fn tolerance(z: &Sizes, dtype: DType, campaign: f64, proof: [f64; 2]) -> f64 {
    match (dtype == DType::F16, z.full) {
        (true, false) => campaign * 100.0,
        (true, true) => proof[1],
        (false, false) => campaign,
        (false, true) => proof[0],
    }
}

impl Output {
    /// The output held to exactly the reference's values on a proof set (a data move, ids);
    /// a campaign holds every output to its case's bound, which its report gives.
    pub(crate) fn exact_in(self, z: &Sizes) -> Self {
        self.within(z.full.then_some(0.0))
    }
}

/// An output's own bound on a proof set, `proof` in f32 and f16 as [`tolerance`] reads it:
/// `None` in a campaign, where every output is held to its case's bound.
pub(crate) fn proof_bound(z: &Sizes, dtype: DType, proof: [f64; 2]) -> Option<f64> {
    z.full.then(|| tolerance(z, dtype, 0.0, proof))
}

/// Seeded inputs, rounded to f16 when the tensor is f16 so that the CPU sees what the GPU sees.
pub(crate) struct Inputs {
    rng: fastrand::Rng,
}

impl Inputs {
    /// A generator seeded from the family's name: a family's inputs are the same whichever
    /// other families run.
    pub fn for_family(family: &str) -> Self {
        // FNV-1a: stable across builds and platforms, unlike the standard library's hasher.
        let seed = family.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
        Inputs {
            rng: fastrand::Rng::with_seed(seed),
        }
    }

    /// `n` values uniform in [-1, 1).
    pub fn data(&mut self, n: usize, dtype: DType) -> Vec<f32> {
        let data: Vec<f32> = (0..n).map(|_| self.rng.f32() * 2.0 - 1.0).collect();
        if dtype == DType::F16 {
            round_to_f16(&data)
        } else {
            data
        }
    }

    /// `n` ids below `below`.
    pub fn ids(&mut self, n: usize, below: usize) -> Vec<u32> {
        (0..n).map(|_| self.rng.u32(0..below as u32)).collect()
    }

    /// A tensor of random values and the same values for the CPU.
    pub fn pair(&mut self, gpu: &Gpu, shape: &[usize], dtype: DType) -> Result<(Tensor, Array)> {
        let data = self.data(shape.iter().product(), dtype);
        let t = Tensor::from_slice(gpu, shape, &data, dtype)?;
        Ok((t, Array::new(shape, data)?))
    }
}

/// An output tensor for the op to write, and its entry for the check.
pub(crate) fn out(
    gpu: &Gpu,
    shape: &[usize],
    dtype: DType,
    want: Vec<f32>,
) -> Result<(Output, Tensor)> {
    let t = Tensor::uninit(gpu, shape, dtype)?;
    Ok((values(&t, &want), t))
}

/// An output entry for a tensor the launches write.
pub(crate) fn values(t: &Tensor, want: &[f32]) -> Output {
    Output::unnamed(Expected::Values {
        t: t.clone(),
        want: want.to_vec(),
    })
}

/// One dispatch, timed.
pub(crate) fn single((dispatch, choice): (Dispatch, Choice)) -> Launches {
    Launches {
        all: vec![dispatch],
        timed: vec![0],
        choice,
    }
}

/// The attention problems of a set: every (dtype, mask, head dim) it covers, with inputs, the
/// CPU forward (and backward when asked) and the names the cases share.
pub(crate) struct Attention {
    pub dtype: DType,
    pub causal: bool,
    pub shape: [usize; 4],
    pub scale: f32,
    pub q: (Tensor, Array),
    pub k: (Tensor, Array),
    pub v: (Tensor, Array),
    pub d_o: (Tensor, Array),
    pub fwd: cpu::Forward,
    pub grads: Option<cpu::Grads>,
    /// `B1 H8 N512 D64 causal f32`.
    pub suffix: String,
    pub flops: f64,
    /// Bytes of one [B, H, N, D] tensor.
    pub tensor_bytes: f64,
}

impl Attention {
    /// The problems of `family`'s cases: a campaign set has f32, f32 causal and (with f16) f16;
    /// a proof set has every dtype the adapter has, both masks and every head dim.
    pub fn problems(gpu: &Gpu, z: &Sizes, family: &str, backward: bool) -> Result<Vec<Attention>> {
        let mut inputs = Inputs::for_family(family);
        let f16 = gpu.profile().features.shader_f16;
        let mut kinds = Vec::new();
        for &d in z.head_dims {
            if z.full {
                for dtype in dtypes(gpu, z) {
                    kinds.extend([(dtype, false, d), (dtype, true, d)]);
                }
            } else {
                kinds.extend([(DType::F32, false, d), (DType::F32, true, d)]);
                if f16 {
                    kinds.push((DType::F16, false, d));
                }
            }
        }
        let calls = z
            .attention
            .iter()
            .flat_map(|&bhn| kinds.iter().map(move |&kind| (bhn, kind)));
        calls
            .map(|([b, heads, kv_heads, n], (dtype, causal, d))| {
                let shape = [b, heads, n, d];
                let kv_shape = [b, kv_heads, n, d];
                let q = inputs.pair(gpu, &shape, dtype)?;
                let k = inputs.pair(gpu, &kv_shape, dtype)?;
                let v = inputs.pair(gpu, &kv_shape, dtype)?;
                let d_o = inputs.pair(gpu, &shape, dtype)?;
                let scale = 1.0 / (d as f32).sqrt();
                let fwd = cpu::attention(&q.1, &k.1, &v.1, causal, scale)?;
                let grads = if backward {
                    Some(cpu::attention_backward(
                        &q.1, &k.1, &v.1, &d_o.1, causal, scale,
                    )?)
                } else {
                    None
                };
                let grouped = match kv_heads == heads {
                    true => String::new(),
                    false => format!("/{kv_heads}"),
                };
                let suffix = format!(
                    "B{b} H{heads}{grouped} N{n} D{d}{} {}",
                    if causal { " causal" } else { "" },
                    dtype.wgsl()
                );
                Ok(Attention {
                    dtype,
                    causal,
                    shape,
                    scale,
                    q,
                    k,
                    v,
                    d_o,
                    fwd,
                    grads,
                    suffix,
                    flops: 4.0 * (b * heads * n * n * d) as f64 / if causal { 2.0 } else { 1.0 },
                    tensor_bytes: (b * heads * n * d) as f64 * dtype.size() as f64,
                })
            })
            .collect()
    }

    /// The values a flash call fixes.
    pub fn fixed(&self) -> Vec<(&'static str, Param)> {
        vec![
            dtype_is(self.dtype),
            ("causal", Param::Bool(self.causal)),
            ("head_dim", Param::Int(self.shape[3] as i64)),
        ]
    }

    /// The rows of the LSE and D: [B, H, N].
    pub fn rows(&self) -> [usize; 3] {
        [self.shape[0], self.shape[1], self.shape[2]]
    }

    /// The forward pass on the GPU by the selector's choice (the backward's inputs).
    pub fn gpu_forward(&self) -> Result<(Tensor, Tensor)> {
        crate::ops::attention::flash_attention(
            &self.q.0,
            &self.k.0,
            &self.v.0,
            self.causal,
            self.scale,
        )
    }

    /// The backward's gradients from the CPU.
    pub fn grads(&self) -> Result<&cpu::Grads> {
        self.grads.as_ref().ok_or_else(|| Error::InvalidArgument {
            op: "cases",
            detail: "an attention case built without its backward".into(),
        })
    }
}
