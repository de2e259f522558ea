//! Bringing a GPU's clocks up before anything is timed: an idle or long-waiting GPU runs
//! several times slower for its first few hundred milliseconds of work.

use super::*;

/// What warming up took.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WarmUp {
    /// Units of work run.
    pub runs: usize,
    /// Wall time spent, ms.
    pub ms: f64,
    /// Wall time per unit in the last batch, ms.
    pub last_ms: f64,
    /// Whether three successive batches agreed within 5 % (else the budget ran out first).
    pub steady: bool,
}

/// Runs `work` — one unit of what is about to be timed (a frame, a forward pass, a step) —
/// unmeasured until the GPU's clocks are up: in batches of at least 40 ms, until three
/// successive batches agree within 5 % per unit (and at least 300 ms have passed), or until
/// `budget_ms` is spent (nothing at all for a budget of 0). A GPU that sat idle, or waited through a long CPU phase, runs several
/// times slower for the first few hundred milliseconds.
pub async fn warm_up<E>(
    mut work: impl AsyncFnMut() -> Result<(), E>,
    budget_ms: f64,
) -> Result<WarmUp, E> {
    let start = Instant::now();
    let elapsed = |t: Instant| t.elapsed().as_secs_f64() * 1e3;
    let mut per_unit: Vec<f64> = Vec::new();
    let mut runs = 0;
    if budget_ms <= 0.0 {
        return Ok(WarmUp {
            runs,
            ms: 0.0,
            last_ms: 0.0,
            steady: false,
        });
    }
    loop {
        let batch = Instant::now();
        let mut n = 0;
        while (n < 3 || elapsed(batch) < 40.0) && !(n > 0 && elapsed(start) >= budget_ms) {
            work().await?;
            n += 1;
        }
        runs += n;
        per_unit.push(elapsed(batch) / n as f64);
        let steady = per_unit.len() >= 3 && elapsed(start) >= 300.0 && {
            let last = &per_unit[per_unit.len() - 3..];
            let (lo, hi) = last.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &x| {
                (lo.min(x), hi.max(x))
            });
            hi <= lo * 1.05
        };
        if steady || elapsed(start) >= budget_ms {
            return Ok(WarmUp {
                runs,
                ms: elapsed(start),
                last_ms: per_unit.last().copied().unwrap_or(0.0),
                steady,
            });
        }
    }
}

/// Keeps a hardware GPU fully busy for `ms` with a chain of multiply-adds (the fleet's FMA
/// ceiling kernel), so that its clocks are up before light work is timed: a forward pass that
/// leaves the GPU idle between submissions can time steadily at low clocks (6.2 ms a MiniLM
/// forward on an H200 that later ran it in 1.8 ms). Nothing on a software adapter.
pub async fn warm_up_clocks(gpu: &Gpu, ms: f64) -> Result<()> {
    let ms = warm_up_budget_ms(gpu, ms);
    if ms <= 0.0 {
        return Ok(());
    }
    let n = 1 << 22;
    let x = crate::tensor::Tensor::full(gpu, &[n], 0.5, crate::dtype::DType::F32)?;
    let y = crate::tensor::Tensor::uninit(gpu, &[n], crate::dtype::DType::F32)?;
    let (fma, _) = crate::ops::fma_chain::launch(&x, &y, 256, 0.999, 0.001, None)?;
    let start = Instant::now();
    while start.elapsed().as_secs_f64() * 1e3 < ms {
        for _ in 0..8 {
            gpu.submit(&[&fma])?;
        }
        gpu.idle().await?;
    }
    gpu.mark_busy();
    Ok(())
}

/// Keeps the GPU busy with `dispatches` until its clocks are up (see [`warm_up`]; at most
/// `ms` of wall time), unmeasured. A fifth of the time goes to [`warm_up_clocks`] first: a unit of a few
/// microseconds leaves the GPU idle between its submissions, so it may not raise the clocks
/// itself, while its time per unit (the host's round trip) looks steady at any clock (decode
/// rows timed 3–4× slow on the H200 that way, kernels/perf/greedy-decode-on-gpu.md).
pub async fn warm_up_dispatches(gpu: &Gpu, dispatches: &[&Dispatch], ms: f64) -> Result<WarmUp> {
    let heating = ms / 5.0;
    warm_up_clocks(gpu, heating).await?;
    warm_up(
        async || {
            for _ in 0..4 {
                gpu.submit(dispatches)?;
            }
            gpu.idle().await
        },
        ms - heating,
    )
    .await
}

/// How long to warm a device up for before timing it: a hardware GPU needs a few hundred
/// milliseconds of work to raise its clocks; a software adapter has none to raise.
pub fn warm_up_budget_ms(gpu: &Gpu, hardware_ms: f64) -> f64 {
    if gpu.profile().is_software() {
        0.0
    } else {
        hardware_ms
    }
}
