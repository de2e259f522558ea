//! The campaign's cases: for every kernel family, fixed shapes with seeded random inputs, the CPU
//! reference's answer, and how to launch the op with a named variant. The same shapes on every
//! device, so that results compare across a fleet.

use kiln::contract::Param;
use kiln::cpu::{self, Array};
use kiln::ops::attention::{self, BackwardVariants, Grads};
use kiln::tensor::round_to_f16;
use kiln::{Choice, DType, Dispatch, Gpu, Tensor, ops};
use rand::{Rng, SeedableRng, rngs::StdRng};

/// An output tensor and what the CPU reference says it holds.
pub(crate) enum Output {
    Values {
        t: Tensor,
        want: Vec<f32>,
    },
    /// Packed RGBA8 pixels, compared channel by channel.
    Pixels {
        t: Tensor,
        want: Vec<u32>,
    },
}

/// A planned launch: every dispatch in order, the ones to time, and the named variant's choice.
pub(crate) struct Planned {
    pub all: Vec<Dispatch>,
    pub timed: Vec<usize>,
    pub choice: Choice,
}

type Plan = Box<dyn Fn(&str) -> kiln::Result<Planned>>;

/// One family on one fixed shape.
pub(crate) struct Case {
    pub family: &'static str,
    pub name: String,
    /// The variables the call fixes (dtype, causal, head dim), for `Variant::takes`.
    pub fixed: Vec<(&'static str, Param)>,
    pub tolerance: f64,
    /// Floating-point operations and the fewest bytes moved by the timed dispatches.
    pub flops: f64,
    pub bytes: f64,
    pub outputs: Vec<Output>,
    plan: Plan,
}

impl Case {
    pub fn plan(&self, variant: &str) -> kiln::Result<Planned> {
        (self.plan)(variant)
    }
}

fn dtype_is(d: DType) -> (&'static str, Param) {
    ("dtype", Param::Str(d.wgsl().into()))
}

/// Seeded inputs, rounded to f16 when the tensor is f16 so that the CPU sees what the GPU sees.
struct Inputs {
    rng: StdRng,
}

impl Inputs {
    /// A generator seeded from the family's name: a family's inputs are the same whichever
    /// other families a campaign runs.
    fn for_family(family: &str) -> Self {
        // FNV-1a: stable across builds and platforms, unlike the standard library's hasher.
        let seed = family.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
        Inputs {
            rng: StdRng::seed_from_u64(seed),
        }
    }

    fn data(&mut self, n: usize, dtype: DType) -> Vec<f32> {
        let data: Vec<f32> = (0..n).map(|_| self.rng.random_range(-1.0..1.0)).collect();
        if dtype == DType::F16 {
            round_to_f16(&data)
        } else {
            data
        }
    }

    fn pair(&mut self, gpu: &Gpu, shape: &[usize], dtype: DType) -> kiln::Result<(Tensor, Array)> {
        let data = self.data(shape.iter().product(), dtype);
        let t = Tensor::from_slice(gpu, shape, &data, dtype)?;
        Ok((t, Array::new(shape, data)?))
    }
}

/// An output tensor for the op to write, and its entry for the check.
fn out(gpu: &Gpu, shape: &[usize], dtype: DType, want: Vec<f32>) -> kiln::Result<(Output, Tensor)> {
    let t = Tensor::uninit(gpu, shape, dtype)?;
    Ok((Output::Values { t: t.clone(), want }, t))
}

fn tol(dtype: DType) -> f64 {
    if dtype == DType::F16 { 1e-2 } else { 1e-4 }
}

/// One dispatch, timed.
fn single((dispatch, choice): (Dispatch, Choice)) -> Planned {
    Planned {
        all: vec![dispatch],
        timed: vec![0],
        choice,
    }
}

/// The fixed shapes: one set for hardware GPUs, a smaller one for software adapters (a CPU
/// running the GPU's work), so that a campaign there reaches every family in minutes. Device
/// classes keep the two apart: a class is backend, device type and vendor.
struct Sizes {
    copy: usize,
    fma: (usize, u32),
    matmul: [usize; 2],
    rows: usize,
    elementwise: usize,
    transpose: [usize; 3],
    swap: [usize; 3],
    sinusoid: (usize, usize),
    pixels: usize,
    attention: [usize; 4],
}

const HARDWARE: Sizes = Sizes {
    copy: 1 << 22,
    fma: (1 << 20, 256),
    matmul: [256, 1024],
    rows: 1024,
    elementwise: 1 << 20,
    transpose: [16, 256, 256],
    swap: [256, 16, 64],
    sinusoid: (128, 1024),
    pixels: 512,
    attention: [1, 8, 512, 64],
};

const SOFTWARE: Sizes = Sizes {
    copy: 1 << 18,
    fma: (1 << 14, 64),
    matmul: [64, 128],
    rows: 256,
    elementwise: 1 << 16,
    transpose: [4, 64, 64],
    swap: [64, 4, 32],
    sinusoid: (32, 256),
    pixels: 64,
    attention: [1, 2, 128, 64],
};

/// The cases of the `wanted` families (the others are not built: their CPU references take
/// seconds), in a fixed order, with f16 cases where the adapter has SHADER_F16.
pub(crate) fn all(gpu: &Gpu, wanted: &dyn Fn(&str) -> bool) -> kiln::Result<Vec<Case>> {
    let f16 = gpu.profile().features.shader_f16;
    let z = if gpu.profile().is_software() {
        &SOFTWARE
    } else {
        &HARDWARE
    };
    let mut cases = Vec::new();
    let f32b = 4.0;

    // Ceilings' kernels as families of their own.
    if wanted("copy") {
        let mut inputs = Inputs::for_family("copy");
        let n = z.copy;
        let (x, xa) = inputs.pair(gpu, &[n], DType::F32)?;
        let (o, y) = out(gpu, &[n], DType::F32, xa.data.clone())?;
        cases.push(Case {
            family: "copy",
            fixed: vec![dtype_is(DType::F32)],
            name: format!("copy {n} f32"),
            tolerance: 1e-7,
            flops: 0.0,
            bytes: 2.0 * n as f64 * f32b,
            outputs: vec![o],
            plan: Box::new(move |v| Ok(single(ops::ceiling::plan_copy(&x, &y, Some(v))?))),
        });
    }
    if wanted("fma_chain") {
        let mut inputs = Inputs::for_family("fma_chain");
        let ((n, iters), a, b) = (z.fma, 0.999f32, 0.001f32);
        let (x, xa) = inputs.pair(gpu, &[n], DType::F32)?;
        let want = cpu::fma_chain(&xa, iters, a, b)?.data;
        let (o, y) = out(gpu, &[n], DType::F32, want)?;
        cases.push(Case {
            family: "fma_chain",
            fixed: vec![dtype_is(DType::F32)],
            name: format!("fma_chain {n}×{iters} f32"),
            tolerance: 1e-5,
            flops: 2.0 * n as f64 * f64::from(iters),
            bytes: 2.0 * n as f64 * f32b,
            outputs: vec![o],
            plan: Box::new(move |v| {
                Ok(single(ops::ceiling::plan_fma_chain(
                    &x,
                    &y,
                    iters,
                    a,
                    b,
                    Some(v),
                )?))
            }),
        });
    }

    // matmul
    if wanted("matmul") {
        let mut inputs = Inputs::for_family("matmul");
        let mut mm = vec![(z.matmul[0], DType::F32), (z.matmul[1], DType::F32)];
        if f16 {
            mm.push((z.matmul[1], DType::F16));
        }
        for (s, dtype) in mm {
            let (a, aa) = inputs.pair(gpu, &[s, s], dtype)?;
            let (b, ba) = inputs.pair(gpu, &[s, s], dtype)?;
            let (o, c) = out(gpu, &[s, s], dtype, cpu::matmul(&aa, &ba)?.data)?;
            let e = dtype.size() as f64;
            cases.push(Case {
                family: "matmul",
                fixed: vec![dtype_is(dtype)],
                name: format!("matmul {s}x{s}x{s} {}", dtype.wgsl()),
                tolerance: tol(dtype),
                flops: 2.0 * (s * s * s) as f64,
                bytes: 3.0 * (s * s) as f64 * e,
                outputs: vec![o],
                plan: Box::new(move |v| Ok(single(ops::matmul::plan(&a, &b, &c, Some(v))?))),
            });
        }
    }

    // add: same shape and a broadcast row
    if wanted("add") {
        let mut inputs = Inputs::for_family("add");
        let r = z.rows;
        for (b_shape, what) in [(vec![r, r], "same shape"), (vec![r], "broadcast")] {
            let (a, aa) = inputs.pair(gpu, &[r, r], DType::F32)?;
            let (b, ba) = inputs.pair(gpu, &b_shape, DType::F32)?;
            let (o, c) = out(gpu, &[r, r], DType::F32, cpu::add(&aa, &ba)?.data)?;
            let nb = b_shape.iter().product::<usize>();
            cases.push(Case {
                family: "add",
                fixed: vec![dtype_is(DType::F32)],
                name: format!("add {r}x{r} + {b_shape:?} ({what}) f32"),
                tolerance: 1e-6,
                flops: (r * r) as f64,
                bytes: (2 * r * r + nb) as f64 * f32b,
                outputs: vec![o],
                plan: Box::new(move |v| Ok(single(ops::add::plan(&a, &b, &c, Some(v))?))),
            });
        }
    }

    // Row-wise: softmax (plain and causal), layernorm, softmax backward.
    let (rows, cols) = (z.rows, z.rows);
    let rc = (rows * cols) as f64;
    if wanted("softmax") {
        let mut inputs = Inputs::for_family("softmax");
        for causal in [false, true] {
            let (x, xa) = inputs.pair(gpu, &[rows, cols], DType::F32)?;
            let want = cpu::softmax(&xa, causal, 0.5)?.data;
            let (o, y) = out(gpu, &[rows, cols], DType::F32, want)?;
            cases.push(Case {
                family: "softmax",
                fixed: vec![dtype_is(DType::F32), ("causal", Param::Bool(causal))],
                name: format!(
                    "softmax {rows}x{cols}{} f32",
                    if causal { " causal" } else { "" }
                ),
                tolerance: 1e-5,
                flops: 5.0 * rc,
                bytes: 2.0 * rc * f32b,
                outputs: vec![o],
                plan: Box::new(move |v| {
                    Ok(single(ops::softmax::plan(&x, &y, causal, 0.5, Some(v))?))
                }),
            });
        }
    }
    if wanted("layernorm") {
        let mut inputs = Inputs::for_family("layernorm");
        let (x, xa) = inputs.pair(gpu, &[rows, cols], DType::F32)?;
        let (g, ga) = inputs.pair(gpu, &[cols], DType::F32)?;
        let (b, ba) = inputs.pair(gpu, &[cols], DType::F32)?;
        let want = cpu::layernorm(&xa, &ga, &ba, 1e-5)?.data;
        let (o, y) = out(gpu, &[rows, cols], DType::F32, want)?;
        cases.push(Case {
            family: "layernorm",
            fixed: vec![dtype_is(DType::F32)],
            name: format!("layernorm {rows}x{cols} f32"),
            tolerance: 1e-5,
            flops: 8.0 * rc,
            bytes: 2.0 * rc * f32b,
            outputs: vec![o],
            plan: Box::new(move |v| {
                Ok(single(ops::layernorm::plan(&x, &g, &b, &y, 1e-5, Some(v))?))
            }),
        });
    }
    if wanted("softmax_backward") {
        let mut inputs = Inputs::for_family("softmax_backward");
        let xa = Array::new(&[rows, cols], inputs.data(rows * cols, DType::F32))?;
        let pa = cpu::softmax(&xa, false, 1.0)?;
        let p = Tensor::from_slice(gpu, &[rows, cols], &pa.data, DType::F32)?;
        let (dp, dpa) = inputs.pair(gpu, &[rows, cols], DType::F32)?;
        let want = cpu::softmax_backward(&pa, &dpa, 0.5)?.data;
        let (o, dx) = out(gpu, &[rows, cols], DType::F32, want)?;
        cases.push(Case {
            family: "softmax_backward",
            fixed: vec![dtype_is(DType::F32)],
            name: format!("softmax_backward {rows}x{cols} f32"),
            tolerance: 1e-5,
            flops: 4.0 * rc,
            bytes: 3.0 * rc * f32b,
            outputs: vec![o],
            plan: Box::new(move |v| {
                Ok(single(ops::softmax_backward::plan(
                    &p,
                    &dp,
                    &dx,
                    0.5,
                    Some(v),
                )?))
            }),
        });
    }

    // The second pass of a split-K product, with each epilogue.
    if wanted("matmul_reduce") {
        let mut inputs = Inputs::for_family("matmul_reduce");
        let (splits, rows, n) = (4, z.rows, 256);
        let (partials, pa) = inputs.pair(gpu, &[splits, rows * n], DType::F32)?;
        let pa = Array::new(&[splits, rows, n], pa.data)?;
        let (bias, ba) = inputs.pair(gpu, &[n], DType::F32)?;
        for epilogue in [
            ops::matmul::Epilogue::None,
            ops::matmul::Epilogue::Bias,
            ops::matmul::Epilogue::BiasGelu,
        ] {
            let with_bias = epilogue != ops::matmul::Epilogue::None;
            let gelu = epilogue == ops::matmul::Epilogue::BiasGelu;
            let want = cpu::matmul_reduce(&pa, with_bias.then_some(&ba), gelu)?.data;
            let (o, c) = out(gpu, &[rows, n], DType::F32, want)?;
            let (partials, bias) = (partials.clone(), bias.clone());
            cases.push(Case {
                family: "matmul_reduce",
                fixed: vec![
                    dtype_is(DType::F32),
                    ("epilogue", Param::Str(epilogue.name().into())),
                ],
                name: format!("matmul_reduce {splits}x{rows}x{n} {} f32", epilogue.name()),
                tolerance: 1e-6,
                flops: (splits * rows * n) as f64,
                bytes: ((splits + 1) * rows * n) as f64 * f32b,
                outputs: vec![o],
                plan: Box::new(move |v| {
                    let e = with_bias.then_some((&bias, epilogue));
                    Ok(single(ops::matmul::plan_reduce(
                        &partials,
                        &c,
                        n,
                        e,
                        Some(v),
                    )?))
                }),
            });
        }
    }

    // Elementwise and layout.
    if wanted("gelu") {
        let mut inputs = Inputs::for_family("gelu");
        let n = z.elementwise;
        let (x, xa) = inputs.pair(gpu, &[n], DType::F32)?;
        let (o, y) = out(gpu, &[n], DType::F32, cpu::gelu(&xa)?.data)?;
        cases.push(Case {
            family: "gelu",
            fixed: vec![dtype_is(DType::F32)],
            name: format!("gelu {n} f32"),
            tolerance: 1e-5,
            flops: 20.0 * n as f64,
            bytes: 2.0 * n as f64 * f32b,
            outputs: vec![o],
            plan: Box::new(move |v| Ok(single(ops::gelu::plan(&x, &y, Some(v))?))),
        });
    }
    if wanted("transpose") {
        let mut inputs = Inputs::for_family("transpose");
        let [b, r, c] = z.transpose;
        let (x, xa) = inputs.pair(gpu, &[b, r, c], DType::F32)?;
        let (o, y) = out(gpu, &[b, c, r], DType::F32, cpu::transpose(&xa)?.data)?;
        cases.push(Case {
            family: "transpose",
            fixed: vec![dtype_is(DType::F32)],
            name: format!("transpose {b}x{r}x{c} f32"),
            tolerance: 1e-7,
            flops: 0.0,
            bytes: 2.0 * (b * r * c) as f64 * f32b,
            outputs: vec![o],
            plan: Box::new(move |v| Ok(single(ops::transpose::plan(&x, &y, Some(v))?))),
        });
    }
    if wanted("swap_axes") {
        let mut inputs = Inputs::for_family("swap_axes");
        let [a, b, c] = z.swap;
        let (x, xa) = inputs.pair(gpu, &[a, b, c], DType::F32)?;
        let (o, y) = out(gpu, &[b, a, c], DType::F32, cpu::swap_axes01(&xa)?.data)?;
        cases.push(Case {
            family: "swap_axes",
            fixed: vec![dtype_is(DType::F32)],
            name: format!("swap_axes {a}x{b}x{c} f32"),
            tolerance: 1e-7,
            flops: 0.0,
            bytes: 2.0 * (a * b * c) as f64 * f32b,
            outputs: vec![o],
            plan: Box::new(move |v| Ok(single(ops::swap_axes::plan(&x, &y, Some(v))?))),
        });
    }
    // Training: gradients, the loss, the optimiser step, the embedding and its gradient.
    if wanted("gelu_backward") {
        let mut inputs = Inputs::for_family("gelu_backward");
        let n = z.elementwise;
        let (x, xa) = inputs.pair(gpu, &[n], DType::F32)?;
        let (dy, dya) = inputs.pair(gpu, &[n], DType::F32)?;
        let (o, dx) = out(gpu, &[n], DType::F32, cpu::gelu_backward(&xa, &dya)?.data)?;
        cases.push(Case {
            family: "gelu_backward",
            fixed: vec![dtype_is(DType::F32)],
            name: format!("gelu_backward {n} f32"),
            tolerance: 1e-5,
            flops: 30.0 * n as f64,
            bytes: 3.0 * n as f64 * f32b,
            outputs: vec![o],
            plan: Box::new(move |v| Ok(single(ops::gelu_backward::plan(&x, &dy, &dx, Some(v))?))),
        });
    }
    let layernorm_backward = ["layernorm_backward", "layernorm_params_backward"];
    if layernorm_backward.iter().any(|f| wanted(f)) {
        // One input set; each family's case names its own kernel and times its own dispatch
        // (dX and the row statistics first, then dgamma and dbeta).
        let mut inputs = Inputs::for_family("layernorm_backward");
        let (x, xa) = inputs.pair(gpu, &[rows, cols], DType::F32)?;
        let (g, ga) = inputs.pair(gpu, &[cols], DType::F32)?;
        let (dy, dya) = inputs.pair(gpu, &[rows, cols], DType::F32)?;
        let (want_dx, want_dg, want_db) = cpu::layernorm_backward(&xa, &ga, &dya, 1e-5)?;
        for (index, family) in layernorm_backward.into_iter().enumerate() {
            let (dx, dg, db) = (
                Tensor::uninit(gpu, &[rows, cols], DType::F32)?,
                Tensor::uninit(gpu, &[cols], DType::F32)?,
                Tensor::uninit(gpu, &[cols], DType::F32)?,
            );
            let values = |t: &Tensor, want: &[f32]| Output::Values {
                t: t.clone(),
                want: want.to_vec(),
            };
            let (outputs, bytes) = if index == 0 {
                (vec![values(&dx, &want_dx.data)], 4.0 * rc * f32b)
            } else {
                (
                    vec![values(&dg, &want_dg.data), values(&db, &want_db.data)],
                    2.0 * rc * f32b,
                )
            };
            let (x, g, dy) = (x.clone(), g.clone(), dy.clone());
            cases.push(Case {
                family,
                fixed: vec![dtype_is(DType::F32)],
                name: format!("{family} {rows}x{cols} f32"),
                tolerance: 1e-5,
                flops: 12.0 * rc,
                bytes,
                outputs,
                plan: Box::new(move |v| {
                    let named = if index == 0 {
                        ops::layernorm_backward::BackwardVariants {
                            rows: Some(v),
                            params: None,
                        }
                    } else {
                        ops::layernorm_backward::BackwardVariants {
                            rows: None,
                            params: Some(v),
                        }
                    };
                    let plan =
                        ops::layernorm_backward::plan(&x, &g, &dy, &dx, &dg, &db, 1e-5, named)?;
                    let choice = plan.choices[index].clone();
                    Ok(Planned {
                        all: plan.dispatches,
                        timed: vec![index],
                        choice,
                    })
                }),
            });
        }
    }
    if wanted("cross_entropy") {
        let mut inputs = Inputs::for_family("cross_entropy");
        let (logits, la) = inputs.pair(gpu, &[rows, cols], DType::F32)?;
        let targets: Vec<u32> = (0..rows)
            .map(|_| inputs.rng.random_range(0..cols as u32))
            .collect();
        let t = Tensor::from_u32(gpu, &[rows], &targets)?;
        let scale = 1.0 / rows as f32;
        let (want_loss, want_d) = cpu::cross_entropy(&la, &targets, scale)?;
        let (o_loss, loss) = out(gpu, &[rows], DType::F32, want_loss.data)?;
        let (o_d, d) = out(gpu, &[rows, cols], DType::F32, want_d.data)?;
        cases.push(Case {
            family: "cross_entropy",
            fixed: vec![dtype_is(DType::F32)],
            name: format!("cross_entropy {rows}x{cols} f32"),
            tolerance: 1e-5,
            flops: 5.0 * rc,
            bytes: 2.0 * rc * f32b,
            outputs: vec![o_loss, o_d],
            plan: Box::new(move |v| {
                Ok(single(ops::cross_entropy::plan(
                    &logits,
                    &t,
                    &loss,
                    &d,
                    scale,
                    Some(v),
                )?))
            }),
        });
    }
    if wanted("adamw") {
        // In place: each run first copies the starting parameters and moments back in, then
        // steps; only the step is timed.
        let mut inputs = Inputs::for_family("adamw");
        let n = z.elementwise;
        let (p0, mut pa) = inputs.pair(gpu, &[n], DType::F32)?;
        let (g, ga) = inputs.pair(gpu, &[n], DType::F32)?;
        let (m0, mut ma) = inputs.pair(gpu, &[n], DType::F32)?;
        let v_start: Vec<f32> = inputs.data(n, DType::F32).iter().map(|x| x.abs()).collect();
        let v0 = Tensor::from_slice(gpu, &[n], &v_start, DType::F32)?;
        let mut va = Array::new(&[n], v_start)?;
        let h = kiln::optim::AdamW {
            lr: 1e-3,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.01,
            step: 10,
        };
        cpu::adamw(&mut pa, &ga, &mut ma, &mut va, &h)?;
        let (o_p, p) = out(gpu, &[n], DType::F32, pa.data)?;
        let (o_m, m) = out(gpu, &[n], DType::F32, ma.data)?;
        let (o_v, v) = out(gpu, &[n], DType::F32, va.data)?;
        cases.push(Case {
            family: "adamw",
            fixed: vec![dtype_is(DType::F32)],
            name: format!("adamw {n} f32"),
            tolerance: 1e-5,
            flops: 16.0 * n as f64,
            bytes: 7.0 * n as f64 * f32b,
            outputs: vec![o_p, o_m, o_v],
            plan: Box::new(move |name| {
                let (step, choice) = ops::adamw::plan(&p, &g, &m, &v, &h, Some(name))?;
                Ok(Planned {
                    all: vec![
                        ops::ceiling::plan_copy(&p0, &p, None)?.0,
                        ops::ceiling::plan_copy(&m0, &m, None)?.0,
                        ops::ceiling::plan_copy(&v0, &v, None)?.0,
                        step,
                    ],
                    timed: vec![3],
                    choice,
                })
            }),
        });
    }
    // A byte-sized vocabulary, as the training demo's: the gradient's work is vocab · cols · n.
    let (vocab, width) = (256, 64);
    if wanted("embedding") {
        let mut inputs = Inputs::for_family("embedding");
        let (table, ta) = inputs.pair(gpu, &[vocab, width], DType::F32)?;
        let tokens: Vec<u32> = (0..rows)
            .map(|_| inputs.rng.random_range(0..vocab as u32))
            .collect();
        let t = Tensor::from_u32(gpu, &[rows], &tokens)?;
        let (o, y) = out(
            gpu,
            &[rows, width],
            DType::F32,
            cpu::embedding(&ta, &tokens)?.data,
        )?;
        cases.push(Case {
            family: "embedding",
            fixed: vec![dtype_is(DType::F32)],
            name: format!("embedding {rows} of {vocab}x{width} f32"),
            tolerance: 1e-7,
            flops: 0.0,
            bytes: 2.0 * (rows * width) as f64 * f32b,
            outputs: vec![o],
            plan: Box::new(move |v| Ok(single(ops::embedding::plan(&table, &t, &y, Some(v))?))),
        });
    }
    if wanted("embedding_backward") {
        let mut inputs = Inputs::for_family("embedding_backward");
        let (dy, dya) = inputs.pair(gpu, &[rows, width], DType::F32)?;
        let tokens: Vec<u32> = (0..rows)
            .map(|_| inputs.rng.random_range(0..vocab as u32))
            .collect();
        let t = Tensor::from_u32(gpu, &[rows], &tokens)?;
        let want = cpu::embedding_backward(&dya, &tokens, vocab)?.data;
        let (o, d) = out(gpu, &[vocab, width], DType::F32, want)?;
        cases.push(Case {
            family: "embedding_backward",
            fixed: vec![dtype_is(DType::F32)],
            name: format!("embedding_backward {rows} into {vocab}x{width} f32"),
            tolerance: 1e-6,
            flops: (rows * width) as f64,
            bytes: ((rows + vocab) * width) as f64 * f32b,
            outputs: vec![o],
            plan: Box::new(move |v| {
                Ok(single(ops::embedding_backward::plan(&dy, &t, &d, Some(v))?))
            }),
        });
    }
    if wanted("sinusoid") {
        let mut inputs = Inputs::for_family("sinusoid");
        let (waves, n) = z.sinusoid;
        let freq = inputs.data(waves, DType::F32);
        let phase = inputs.data(waves, DType::F32);
        let want = cpu::sinusoid(&freq, &phase, n, 0.0, 0.01)?.data;
        let f = Tensor::from_slice(gpu, &[waves], &freq, DType::F32)?;
        let ph = Tensor::from_slice(gpu, &[waves], &phase, DType::F32)?;
        let (o, y) = out(gpu, &[2 * waves, n], DType::F32, want)?;
        cases.push(Case {
            family: "sinusoid",
            fixed: vec![dtype_is(DType::F32)],
            name: format!("sinusoid {waves}x{n} f32"),
            // WGSL lets sin and cos be off by 2⁻¹¹ absolute; SwiftShader uses that room.
            tolerance: 1e-3,
            flops: 2.0 * (2 * waves * n) as f64,
            bytes: (2 * waves * n) as f64 * f32b,
            outputs: vec![o],
            plan: Box::new(move |v| {
                Ok(single(ops::sinusoid::plan(
                    &f,
                    &ph,
                    &y,
                    0.0,
                    0.01,
                    Some(v),
                )?))
            }),
        });
    }
    if wanted("rgba8") {
        let mut inputs = Inputs::for_family("rgba8");
        let (h, w) = (z.pixels, z.pixels);
        let (planes, pa) = inputs.pair(gpu, &[4, h, w], DType::F32)?;
        let want = cpu::rgba8(&pa, 100.0, 128.0)?;
        let pixels = Tensor::uninit(gpu, &[h, w], DType::U32)?;
        let px = pixels.clone();
        cases.push(Case {
            family: "rgba8",
            fixed: vec![dtype_is(DType::F32)],
            name: format!("rgba8 4x{h}x{w} f32"),
            tolerance: 5e-3,
            flops: 0.0,
            bytes: (5 * h * w) as f64 * f32b,
            outputs: vec![Output::Pixels { t: pixels, want }],
            plan: Box::new(move |v| {
                Ok(single(ops::rgba8::plan(
                    &planes,
                    &px,
                    100.0,
                    128.0,
                    Some(v),
                )?))
            }),
        });
    }

    // Attention: forward, the backward's pre-pass and its two passes.
    let attention = [
        "flash_fwd",
        "attention_delta",
        "flash_bwd_dkdv",
        "flash_bwd_dq",
    ];
    if attention.iter().any(|f| wanted(f)) {
        let mut inputs = Inputs::for_family("attention");
        let mut att = vec![(DType::F32, false), (DType::F32, true)];
        if f16 {
            att.push((DType::F16, false));
        }
        for (dtype, causal) in att {
            let shape = z.attention;
            let [_, heads, n, d] = shape;
            let (q, qa) = inputs.pair(gpu, &shape, dtype)?;
            let (k, ka) = inputs.pair(gpu, &shape, dtype)?;
            let (v, va) = inputs.pair(gpu, &shape, dtype)?;
            let (d_o, doa) = inputs.pair(gpu, &shape, dtype)?;
            let scale = 1.0 / (d as f32).sqrt();
            let fwd = cpu::attention(&qa, &ka, &va, causal, scale)?;
            let grads = cpu::attention_backward(&qa, &ka, &va, &doa, causal, scale)?;
            let delta: Vec<f32> = fwd
                .out
                .data
                .chunks(d)
                .zip(doa.data.chunks(d))
                .map(|(o, g)| o.iter().zip(g).map(|(a, b)| a * b).sum())
                .collect();
            let flops = 4.0 * (heads * n * n * d) as f64 / if causal { 2.0 } else { 1.0 };
            let e = dtype.size() as f64;
            let tensor_bytes = (heads * n * d) as f64 * e;
            let suffix = format!(
                "B1 H{heads} N{n} D{d}{} {}",
                if causal { " causal" } else { "" },
                dtype.wgsl()
            );
            let tolerance = if dtype == DType::F16 { 1e-2 } else { 1e-4 };

            // The flash families take the call's dtype, mask and head dim.
            let flash_fixed = vec![
                dtype_is(dtype),
                ("causal", Param::Bool(causal)),
                ("head_dim", Param::Int(d as i64)),
            ];
            // Forward: O and the LSE.
            let (o_fwd, o_t) = out(gpu, &shape, dtype, fwd.out.data.clone())?;
            let (lse_fwd, lse_t) = out(gpu, &[1, heads, n], DType::F32, fwd.lse.clone())?;
            let (q2, k2, v2) = (q.clone(), k.clone(), v.clone());
            cases.push(Case {
                family: "flash_fwd",
                fixed: flash_fixed.clone(),
                name: format!("flash_fwd {suffix}"),
                tolerance,
                flops,
                bytes: 4.0 * tensor_bytes,
                outputs: vec![o_fwd, lse_fwd],
                plan: Box::new(move |name| {
                    let (d, c) = attention::plan_forward(
                        &q2,
                        &k2,
                        &v2,
                        &o_t,
                        &lse_t,
                        causal,
                        scale,
                        Some(name),
                    )?;
                    Ok(single((d, c)))
                }),
            });

            // The backward families run after a forward by the selector's choice. Each family's
            // case checks its own outputs and times its own dispatch of the backward plan
            // (D = rowsum(dO ∘ O), dK/dV, dQ, in that order).
            let (o, lse) = attention::flash_attention(&q, &k, &v, causal, scale)?;
            for (index, family) in ["attention_delta", "flash_bwd_dkdv", "flash_bwd_dq"]
                .into_iter()
                .enumerate()
            {
                let g = Grads::like(&q, &k, &v)?;
                // The pre-pass writes a scratch tensor made by each plan: its check reads a copy
                // the plan's dispatch list ends with.
                let delta_out = Tensor::uninit(gpu, &[1, heads, n], DType::F32)?;
                let values = |t: &Tensor, want: &[f32]| Output::Values {
                    t: t.clone(),
                    want: want.to_vec(),
                };
                let (outputs, fixed, fam_flops, fam_bytes, fam_tolerance) = match family {
                    "attention_delta" => (
                        vec![values(&delta_out, &delta)],
                        vec![dtype_is(dtype)],
                        2.0 * (heads * n * d) as f64,
                        2.0 * tensor_bytes,
                        tolerance,
                    ),
                    "flash_bwd_dkdv" => (
                        vec![values(&g.dk, &grads.dk.data), values(&g.dv, &grads.dv.data)],
                        flash_fixed.clone(),
                        flops * 2.0,
                        6.0 * tensor_bytes,
                        tolerance * 3.0,
                    ),
                    _ => (
                        vec![values(&g.dq, &grads.dq.data)],
                        flash_fixed.clone(),
                        flops * 1.5,
                        5.0 * tensor_bytes,
                        tolerance * 3.0,
                    ),
                };
                let (q2, k2, v2, o2, lse2, do2) = (
                    q.clone(),
                    k.clone(),
                    v.clone(),
                    o.clone(),
                    lse.clone(),
                    d_o.clone(),
                );
                cases.push(Case {
                    family,
                    name: format!("{family} {suffix}"),
                    fixed,
                    tolerance: fam_tolerance,
                    flops: fam_flops,
                    bytes: fam_bytes,
                    outputs,
                    plan: Box::new(move |name| {
                        let mut named = BackwardVariants::default();
                        match index {
                            0 => named.delta = Some(name),
                            1 => named.dkdv = Some(name),
                            _ => named.dq = Some(name),
                        }
                        let plan = attention::plan_backward(
                            &q2, &k2, &v2, &o2, &lse2, &do2, &g, causal, scale, named,
                        )?;
                        let choice = plan.choices[index].clone();
                        let mut all = plan.dispatches;
                        if index == 0 {
                            all.push(ops::ceiling::plan_copy(&plan.delta, &delta_out, None)?.0);
                        }
                        Ok(Planned {
                            all,
                            timed: vec![index],
                            choice,
                        })
                    }),
                });
            }
        }
    }
    // The attention families are built together; keep only the wanted ones.
    cases.retain(|c| wanted(c.family));
    Ok(cases)
}
