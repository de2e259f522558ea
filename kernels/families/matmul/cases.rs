//! matmul's cases: square products in a campaign; in a proof, shapes that are not tile
//! multiples (the last with sides multiples of 16, for whole cooperative fragments), in every
//! dtype and with every epilogue (the gelu gradient's in f32 only; both results of a
//! two-output one checked).
use crate::cases::prelude::*;
use crate::families::matmul::{Epilogue, Layout, SecondOutput};

/// This family's campaign tolerance for f32 (`tolerance`'s `campaign`), also read without a GPU
/// by `kiln::cases::campaign_tolerance`.
pub(crate) const CAMPAIGN_TOLERANCE: f64 = 1e-4;

pub(crate) fn cases(gpu: &Gpu, z: &Sizes) -> Result<Vec<Case>> {
    let mut inputs = Inputs::for_family("matmul");
    let f16 = gpu.profile().features.shader_f16;
    let mut calls: Vec<((usize, usize, usize), DType)> =
        z.matmul.iter().map(|&s| (s, DType::F32)).collect();
    if f16 {
        if z.full {
            calls.extend(z.matmul.iter().map(|&s| (s, DType::F16)));
        } else if let Some(&last) = z.matmul.last() {
            calls.push((last, DType::F16));
        }
    }
    let epilogues: &[Epilogue] = if z.full {
        &[
            Epilogue::None,
            Epilogue::Bias,
            Epilogue::BiasGelu,
            Epilogue::BiasAndGelu,
            Epilogue::BiasAndGeluGrad,
            Epilogue::BiasAndHeads,
        ]
    } else {
        &[Epilogue::None]
    };
    let mut cases = Vec::new();
    for ((m, k, n), dtype) in calls {
        let (a, aa) = inputs.pair(gpu, &[m, k], dtype)?;
        let (b, ba) = inputs.pair(gpu, &[k, n], dtype)?;
        let (bias, biasa) = inputs.pair(gpu, &[n], dtype)?;
        // Where the gradient epilogue takes gelu's derivative.
        let (x, xa) = inputs.pair(gpu, &[m, n], dtype)?;
        for &epilogue in epilogues {
            // The gelu gradient's form has f32 variants only (matmul.toml).
            if epilogue == Epilogue::BiasAndGeluGrad && dtype != DType::F32 {
                continue;
            }
            let want = match epilogue {
                Epilogue::None => cpu::matmul(&aa, &ba)?,
                Epilogue::BiasGelu => cpu::linear_gelu(&aa, &ba, &biasa)?,
                _ => cpu::linear(&aa, &ba, &biasa)?,
            };
            // bias_and_heads: M rows as sequences of T, N columns as P parts of heads of d.
            let heads = heads_of(m, n);
            let second = match epilogue {
                Epilogue::BiasAndGelu => Some(crate::cpu::gelu(&want)?),
                Epilogue::BiasAndGeluGrad => Some(crate::cpu::gelu_backward(&xa, &want)?),
                Epilogue::BiasAndHeads => Some(split_heads(&want, heads)?),
                _ => None,
            };
            let (o, c) = out(gpu, &[m, n], dtype, want.data)?;
            let mut outputs = vec![o];
            let y = match second {
                Some(want) => {
                    let (o, y) = out(gpu, &want.shape, dtype, want.data)?;
                    outputs.push(o);
                    Some(y)
                }
                None => None,
            };
            let e = dtype.size() as f64;
            let (a, b, bias, x) = (a.clone(), b.clone(), bias.clone(), x.clone());
            let suffix = match epilogue {
                Epilogue::None => String::new(),
                other => format!(" {}", other.name()),
            };
            cases.push(Case {
                family: "matmul",
                fixed: vec![
                    dtype_is(dtype),
                    ("epilogue", Param::Str(epilogue.name().into())),
                ],
                name: format!("matmul {m}x{k}x{n}{suffix} {}", dtype.wgsl()),
                // 10× lavapipe's worst of every form (1.3e-7 f32, 2.1e-4 f16), each output.
                tolerance: tolerance(z, dtype, CAMPAIGN_TOLERANCE, [1.3e-6, 2.1e-3]),
                flops: 2.0 * (m * k * n) as f64,
                bytes: (m * k + k * n + m * n) as f64 * e,
                outputs,
                launch: Box::new(move |v| {
                    let second = y.as_ref().map(|y| match epilogue {
                        Epilogue::BiasAndGelu => SecondOutput::Gelu { y },
                        Epilogue::BiasAndHeads => SecondOutput::Heads { y, heads },
                        _ => SecondOutput::GeluGrad { x: &x, y },
                    });
                    let layout = Layout::default();
                    Ok(single(match second {
                        Some(second) => crate::families::matmul::launch_second(
                            &a, &b, &c, layout, &bias, second, v,
                        )?,
                        None => {
                            let e = (epilogue != Epilogue::None).then_some((&bias, epilogue));
                            crate::families::matmul::launch_with(&a, &b, &c, layout, e, v)?
                        }
                    }))
                }),
            });
        }
    }
    Ok(cases)
}

/// [T, H, d] for bias_and_heads at M × N: rows in sequences of T (a divisor of M), columns in
/// heads of d (a divisor of N) and parts of H heads, small enough to leave several of each.
fn heads_of(m: usize, n: usize) -> [usize; 3] {
    let divisor =
        |of: usize, at_most: usize| (1..=at_most.min(of)).rev().find(|t| of.is_multiple_of(*t));
    let t = divisor(m, m / 2).unwrap_or(1);
    let d = divisor(n, 8).unwrap_or(1);
    let h = divisor(n / d, 2).unwrap_or(1);
    [t, h, d]
}

/// C [B·T, P·H·d] as [P, B, H, T, d]: the reference of bias_and_heads' second output.
fn split_heads(c: &Array, [t, h, d]: [usize; 3]) -> Result<Array> {
    let (m, n) = (c.shape[0], c.shape[1]);
    let x = Array::new(&[m / t, t, n / (h * d), h, d], c.data.clone())?;
    crate::cpu::permute(&x, [2, 0, 3, 1])
}
