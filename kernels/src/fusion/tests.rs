//! The fusion rules on lavapipe's recordings: folds noted on the steps they took, chains left
//! to their rewrite, a cut feed-forward block still fused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::chains::{self, Rewrites};
use super::{Noted, note};
use crate::error::Result;
use crate::families::matmul::{Epilogue, Layout, launch_split};
use crate::gpu::Plan;
use crate::tensor::Tensor;
use crate::{DType, Gpu, GpuOptions, ops};

/// The family of each of the plan's launches.
fn families(plan: &Plan) -> Vec<&str> {
    plan.kernels()
        .iter()
        .map(|k| k.split('/').next().unwrap_or(""))
        .collect()
}

/// Records `a · b` into `c` with K cut in `splits` (as a GPU cuts a product of few rows),
/// noted as `what` made it.
fn record_cut(
    [a, b, c]: [&Tensor; 3],
    epilogue: Option<(&Tensor, Epilogue)>,
    splits: usize,
    what: impl FnOnce() -> Noted<Tensor>,
) -> Result<()> {
    let gpu = a.gpu();
    let from = gpu.note_from();
    let cut = launch_split(a, b, c, Layout::default(), epilogue, Some(splits))?;
    gpu.record(&cut.dispatches.iter().collect::<Vec<_>>())?;
    note(gpu, from, what);
    Ok(())
}

/// O = P · V for P [h, n, n] and V [h, n, d], K cut in 3, noted as attention's weighted
/// values (a link of the chain a rewrite takes whole).
fn weighted_cut(p: &Tensor, v: &Tensor) -> Result<Tensor> {
    let [h, n, d] = [p.shape()[0], p.shape()[1], v.shape()[2]];
    let o = Tensor::uninit(p.gpu(), &[h, n, d], DType::F32)?;
    record_cut([p, v, &o], None, 3, || Noted::Weighted {
        p: p.clone(),
        v: v.clone(),
        o: o.clone(),
    })?;
    Ok(o)
}

/// A call whose launch takes the place of the step before it is noted on that step (the
/// swap into heads that takes a cut product's sum, `reduce_permute`); a fold made before a
/// call began is not the call's (an unnoted swap folds the sum, then a noted swap of a
/// single head, a view that records nothing, is noted on no step).
#[test]
fn a_folding_call_notes_the_step_it_took() -> Result<()> {
    use crate::Backend;
    let gpu = &pollster::block_on(Gpu::new(&GpuOptions::default()))?;
    let path = crate::GpuBackend { gpu: gpu.clone() };
    let (h, n, d) = (2, 100, 32);
    let ones = |shape: &[usize]| Tensor::full(gpu, shape, 0.5, DType::F32);
    let (p, v, one) = (ones(&[h, n, n])?, ones(&[h, n, d])?, ones(&[n, d])?);
    for noted_fold in [true, false] {
        let (c, _) = gpu.capture_steps(|| {
            let o = weighted_cut(&p, &v)?;
            let heads = o.reshape(&[1, h, n, d])?;
            if noted_fold {
                return path.swap12(&heads);
            }
            ops::swap_axes12(&heads)?;
            path.swap12(&one.reshape(&[1, 1, n, d])?)
        })?;
        let label = |i: usize| c.launch(i).map(|(l, _)| l.split('/').next().unwrap_or(""));
        assert_eq!(
            [label(0), label(1)],
            [Some("matmul"), Some("reduce_permute")]
        );
        let steps: Vec<_> = c.notes.iter().map(|n| n.steps.clone()).collect();
        // The product keeps its slices; the folding call has the sum's place.
        let swap = if noted_fold { 1..2 } else { 2..2 };
        assert_eq!(steps, [0..1, swap], "noted fold: {noted_fold}");
    }
    Ok(())
}

/// A split product's sum that ends a chain of noted calls (the weighted values after the
/// softmax) is left for the chain's rewrite: the swap after it does not take it. Without
/// the softmax noted before it, the same sum is folded into the swap.
#[test]
fn a_fold_leaves_the_sum_that_ends_a_noted_chain() -> Result<()> {
    let gpu = &pollster::block_on(Gpu::new(&GpuOptions::default()))?;
    // 100 keys: K long enough to cut in 3 slices of 32 or more.
    let (h, n, d) = (2, 100, 32);
    let ones = |shape: &[usize]| Tensor::full(gpu, shape, 0.5, DType::F32);
    let (s, v) = (ones(&[h, n, n])?, ones(&[h, n, d])?);
    for chained in [true, false] {
        let (captured, _) = gpu.capture_steps(|| {
            let from = gpu.note_from();
            let p = ops::softmax(&s, false, 1.0)?;
            if chained {
                note(gpu, from, || Noted::Softmax {
                    s: s.clone(),
                    p: p.clone(),
                    causal: false,
                    scale: 1.0,
                });
            }
            let o = weighted_cut(&p, &v)?;
            ops::swap_axes12(&o.reshape(&[1, h, n, d])?)
        })?;
        let plan = gpu.plan_of(captured)?;
        let want: &[&str] = match chained {
            true => &["softmax", "matmul", "matmul_reduce", "swap_axes"],
            false => &["softmax", "matmul", "reduce_permute"],
        };
        assert_eq!(families(&plan), want, "chained: {chained}");
    }
    Ok(())
}

/// A feed-forward block whose products were both cut along K (a GPU's picks at few rows):
/// the norm took the second product's sum into its launch as it was recorded, and the
/// rewrite still finds the block and runs it as `mlp` and the norm, right.
#[test]
fn a_block_whose_products_were_cut_is_still_fused() -> Result<()> {
    use crate::cases::Inputs;
    use crate::cpu;
    let gpu = &pollster::block_on(Gpu::new(&GpuOptions::default()))?;
    let path = crate::GpuBackend { gpu: gpu.clone() };
    // K 64 cut in 2, K 150 cut in 3; 13 rows, no tile multiple.
    let (rows, d, hidden) = (13, 64, 150);
    let mut inputs = Inputs::for_family("mlp");
    let mut pair = |shape: &[usize]| inputs.pair(gpu, shape, DType::F32);
    let (x, xa) = pair(&[rows, d])?;
    let (w1, w1a) = pair(&[d, hidden])?;
    let (b1, b1a) = pair(&[hidden])?;
    let (w2, w2a) = pair(&[hidden, d])?;
    let (b2, b2a) = pair(&[d])?;
    let (g, ga) = pair(&[d])?;
    let (beta, betaa) = pair(&[d])?;
    let h = Tensor::uninit(gpu, &[rows, hidden], DType::F32)?;
    let ff = Tensor::uninit(gpu, &[rows, d], DType::F32)?;
    let (mut captured, (_, y)) = gpu.capture_steps(|| {
        let gelu = Some((&b1, Epilogue::BiasGelu));
        record_cut([&x, &w1, &h], gelu, 2, || Noted::LinearGelu {
            x: x.clone(),
            w: w1.clone(),
            b: b1.clone(),
            h: h.clone(),
        })?;
        let bias = Some((&b2, Epilogue::Bias));
        record_cut([&h, &w2, &ff], bias, 3, || Noted::Linear {
            x: h.clone(),
            w: w2.clone(),
            b: b2.clone(),
            y: ff.clone(),
        })?;
        crate::Backend::add_layernorm(&path, &ff, &x, &g, &beta, 1e-5)
    })?;
    let recorded: Vec<String> = captured
        .notes
        .iter()
        .map(|n| format!("{:?}", n.steps))
        .collect();
    assert_eq!(
        recorded,
        ["0..2", "2..3", "3..4"],
        "the norm took the sum's place"
    );
    let mut path = super::gpu::GpuChains {
        gpu,
        captured: &mut captured,
    };
    let ff = Rewrites { feed_forward: true };
    let fused = chains::rewrite(&mut path, ff, std::slice::from_ref(&y));
    assert_eq!(fused.feed_forward, 1);
    let plan = gpu.plan_of(captured)?;
    assert_eq!(families(&plan), ["mlp", "reduce_layernorm"]);
    y.write(&vec![f32::NAN; y.numel()])?;
    plan.replay()?;
    let hidden_a = cpu::linear_gelu(&xa, &w1a, &b1a)?;
    let (_, want) =
        cpu::add_layernorm(&cpu::linear(&hidden_a, &w2a, &b2a)?, &xa, &ga, &betaa, 1e-5)?;
    let got = pollster::block_on(y.read())?;
    let err = cpu::rel_l2(&got, &want.data);
    assert!(err < 1e-6, "relative L2 {err:.2e}");
    Ok(())
}

/// A swap noted right before a split product (a flash layer's merged heads, then its output
/// projection) is no link of a chain: the product's sum still folds into the norm after it.
#[test]
fn a_noted_swap_does_not_hold_back_the_next_products_fold() -> Result<()> {
    let gpu = &pollster::block_on(Gpu::new(&GpuOptions::default()))?;
    // K = h · d = 64: two slices of 32.
    let (h, n, d) = (2, 9, 32);
    let ones = |shape: &[usize]| Tensor::full(gpu, shape, 0.5, DType::F32);
    let (o, w, r) = (ones(&[1, h, n, d])?, ones(&[h * d, 24])?, ones(&[n, 24])?);
    let (gamma, beta) = (ones(&[24])?, ones(&[24])?);
    let (captured, _) = gpu.capture_steps(|| {
        let from = gpu.note_from();
        let rows = ops::swap_axes12(&o)?;
        note(gpu, from, || Noted::Swapped {
            x: o.clone(),
            y: rows.clone(),
        });
        let rows = rows.reshape(&[n, h * d])?;
        let c = Tensor::uninit(gpu, &[n, 24], DType::F32)?;
        record_cut([&rows, &w, &c], None, 2, || Noted::Weighted {
            p: rows.clone(),
            v: w.clone(),
            o: c.clone(),
        })?;
        ops::add_layernorm(&c, &r, &gamma, &beta, 1e-5)
    })?;
    let plan = gpu.plan_of(captured)?;
    assert_eq!(families(&plan), ["swap_axes", "matmul", "reduce_layernorm"]);
    Ok(())
}
