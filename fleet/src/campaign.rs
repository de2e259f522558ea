//! The campaign: the device's ceilings, then every variant of every family (but
//! [`LEFT_OUT_FAMILIES`]; the tier's experimental designs only when asked) on the fixed cases —
//! each checked against the CPU reference before it is timed — within a time budget.

use kiln::cases::{self, Case, Scale};
use kiln::{Choice, Dispatch, Gpu, Tensor, bench};
use web_time::Instant;

use crate::error::{FleetError, Result};
use crate::report::{
    Ceilings, Outcome, Platform, Report, SCHEMA, Skipped, Timing, VERSION, VariantResult,
};

/// Families a campaign does not measure. The one-pass flash backward (`flash_bwd_fused`) stands
/// in for two other families together (`flash_bwd_dkdv` and `flash_bwd_dq`): picking the fastest
/// variant within it would put it in the tuned table even where the two passes are faster, so
/// its tuned entries come from `kiln bench attention --backward --variant`, which times both.
pub const LEFT_OUT_FAMILIES: &[&str] = &["flash_bwd_fused"];

/// The families whose cases cost the most to plan, run after all the others.
const ATTENTION_FAMILIES: &[&str] = &[
    "attention_delta",
    "flash_bwd_dkdv",
    "flash_bwd_dq",
    "flash_fwd",
];

/// How a campaign runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// Seconds after which the remaining variants are skipped (and listed as such), once every
    /// family has a result: however slow the machine, each family is run first.
    pub budget_s: f64,
    /// Only these families (all when empty).
    pub families: Vec<String>,
    pub warmup: usize,
    pub repeats: usize,
    /// Also the designs the device's tier keeps experimental (the contracts' experimental sets).
    pub experimental: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            budget_s: 300.0,
            families: Vec::new(),
            warmup: 2,
            repeats: 5,
            experimental: false,
        }
    }
}

/// Where the campaign is, for a progress bar.
#[derive(Clone, Debug)]
pub struct Progress {
    pub done: usize,
    pub total: usize,
    /// The step running now (`ceilings`, `matmul f32_wg16_r4_k16 on matmul 256x256x256 f32`).
    pub step: String,
}

/// Runs the campaign on `gpu`. `progress` hears of every step; `cancelled` is asked before
/// each variant (the page's cancel button), and a cancelled campaign still returns its report,
/// the rest listed as skipped.
pub async fn run(
    gpu: &Gpu,
    options: &Options,
    platform: Platform,
    progress: &mut dyn FnMut(&Progress),
    cancelled: &dyn Fn() -> bool,
) -> Result<Report> {
    let start = Instant::now();
    let mut p = Progress {
        done: 0,
        total: 1,
        step: "ceilings".into(),
    };
    progress(&p);
    let mut ceilings = ceilings(gpu).await?;

    let wanted = |family: &str| {
        !LEFT_OUT_FAMILIES.contains(&family)
            && (options.families.is_empty() || options.families.iter().any(|f| f == family))
    };
    let mut cases: Vec<Case> = cases::all(gpu, Scale::campaign(gpu), &wanted)?;
    // The attention families last: each of their cases compiles several flash kernels (a
    // backward plan builds all its passes), so a short budget reaches the others first.
    cases.sort_by_key(|c| ATTENTION_FAMILIES.contains(&c.family));
    if cases.is_empty() {
        return Err(FleetError::Usage(format!(
            "no case of the families {:?}",
            options.families
        )));
    }
    // Interleave the cases so that a short budget still reaches every family.
    let tier = gpu.profile().tier();
    let lists: Vec<Vec<String>> = cases
        .iter()
        .map(|c| {
            Ok(gpu
                .registry()
                .supported(c.family, gpu.profile())?
                .filter(|v| options.experimental || v.experimental_on(tier).is_none())
                .filter(|v| v.takes(&c.fixed))
                .map(|v| v.name.clone())
                .collect())
        })
        .collect::<kiln::Result<_>>()?;
    let longest = lists.iter().map(Vec::len).max().unwrap_or(0);
    p.total = lists.iter().map(Vec::len).sum::<usize>() + 1;
    p.done = 1;

    let mut results = Vec::new();
    let mut skipped = Vec::new();
    // The families that have run a variant: the budget stops a family only after that, so
    // coverage does not depend on the machine's speed (a busy 2-core machine reached the
    // attention families after a 15 s budget had run out).
    let mut reached = std::collections::BTreeSet::new();
    for round in 0..longest {
        for (case, list) in cases.iter().zip(&lists) {
            let Some(variant) = list.get(round) else {
                continue;
            };
            p.step = format!("{} {variant} on {}", case.family, case.name);
            progress(&p);
            p.done += 1;
            let why = if cancelled() {
                Some("the campaign was cancelled".to_string())
            } else if start.elapsed().as_secs_f64() > options.budget_s
                && reached.contains(case.family)
            {
                Some(format!(
                    "the time budget of {} s was used up",
                    options.budget_s
                ))
            } else {
                None
            };
            if let Some(why) = why {
                skipped.push(Skipped {
                    family: case.family.into(),
                    variant: variant.clone(),
                    case: case.name.clone(),
                    why,
                });
                continue;
            }
            if let Some(r) = run_one(gpu, case, variant, options, &ceilings).await? {
                reached.insert(case.family);
                results.push(r);
            }
        }
    }
    p.step = "done".into();
    progress(&p);

    let mut compiles: Vec<f64> = results.iter().filter_map(|r| r.compile_ms).collect();
    compiles.sort_by(f64::total_cmp);
    ceilings.compile_ms = compiles.get(compiles.len() / 2).copied().unwrap_or(0.0);
    let profile = gpu.profile().clone();
    Ok(Report {
        schema: SCHEMA.into(),
        version: VERSION,
        kiln_version: env!("CARGO_PKG_VERSION").into(),
        platform,
        device: profile,
        budget_s: options.budget_s,
        elapsed_s: start.elapsed().as_secs_f64(),
        ceilings,
        results,
        skipped,
    })
}

/// The platform strings of this process (natively; the page fills in the browser's).
pub fn native_platform(gpu: &Gpu) -> Platform {
    let p = gpu.profile();
    Platform {
        os: std::env::consts::OS.into(),
        arch: std::env::consts::ARCH.into(),
        browser: None,
        driver: format!("{} {}", p.driver, p.driver_info).trim().to_string(),
    }
}

/// The ceilings' kernels with the selector's variants, launches once: a copy (memory bandwidth),
/// an FMA chain (arithmetic rate) and a copy of four numbers (dispatch latency). Sized smaller on
/// a software adapter, where the GPU's work runs on the CPU. The presenter's walkthrough measures
/// the same dispatches (`crate::talk`).
pub(crate) struct CeilingKernels {
    pub copy: Dispatch,
    pub fma: Dispatch,
    pub tiny: Dispatch,
    pub choices: Vec<Choice>,
    /// Bytes the copy reads and writes, and FLOPs of the FMA chain.
    copy_bytes: f64,
    fma_flops: f64,
}

impl CeilingKernels {
    pub fn new(gpu: &Gpu) -> Result<CeilingKernels> {
        let software = gpu.profile().is_software();
        let (copy_n, fma_n, iters) = if software {
            (1 << 20, 1 << 16, 256)
        } else {
            (1 << 26, 1 << 22, 1024)
        };
        let x = Tensor::full(gpu, &[copy_n], 1.0, kiln::DType::F32)?;
        let y = Tensor::uninit(gpu, &[copy_n], kiln::DType::F32)?;
        let (copy, copy_choice) = kiln::ops::copy::launch(&x, &y, None)?;
        let fx = Tensor::full(gpu, &[fma_n], 0.5, kiln::DType::F32)?;
        let fy = Tensor::uninit(gpu, &[fma_n], kiln::DType::F32)?;
        let (fma, fma_choice) = kiln::ops::fma_chain::launch(&fx, &fy, iters, 0.999, 0.001, None)?;
        let tx = Tensor::full(gpu, &[4], 1.0, kiln::DType::F32)?;
        let ty = Tensor::uninit(gpu, &[4], kiln::DType::F32)?;
        let (tiny, _) = kiln::ops::copy::launch(&tx, &ty, None)?;
        Ok(CeilingKernels {
            copy,
            fma,
            tiny,
            choices: vec![copy_choice, fma_choice],
            copy_bytes: 2.0 * copy_n as f64 * 4.0,
            fma_flops: 2.0 * fma_n as f64 * f64::from(iters),
        })
    }

    pub fn copy_gb_per_s(&self, ms: f64) -> f64 {
        self.copy_bytes / ms / 1e6
    }

    pub fn fma_gflop_per_s(&self, ms: f64) -> f64 {
        self.fma_flops / ms / 1e6
    }

    /// One dispatch with almost nothing to do, submitted and waited for: microseconds.
    pub async fn latency_us(&self, gpu: &Gpu) -> Result<f64> {
        let t0 = Instant::now();
        gpu.submit(&[&self.tiny])?;
        gpu.idle().await?;
        Ok((t0.elapsed().as_secs_f64() * 1e6).max(f64::MIN_POSITIVE))
    }
}

/// Copy bandwidth, FMA rate and dispatch latency, with the selector's variants.
async fn ceilings(gpu: &Gpu) -> Result<Ceilings> {
    let k = CeilingKernels::new(gpu)?;
    bench::warm_up_dispatches(gpu, &[&k.copy], 200.0).await?;
    let t = bench::time_dispatches(gpu, &[&k.copy], 2, 10).await?;
    let copy_gb_per_s = k.copy_gb_per_s(t.median_ms);
    let clock = t.clock.as_str().to_string();
    let t = bench::time_dispatches(gpu, &[&k.fma], 2, 10).await?;
    let fma_gflop_per_s = k.fma_gflop_per_s(t.median_ms);
    let mut waits = Vec::new();
    for _ in 0..20 {
        waits.push(k.latency_us(gpu).await?);
    }
    waits.sort_by(f64::total_cmp);
    Ok(Ceilings {
        copy_gb_per_s,
        fma_gflop_per_s,
        dispatch_latency_us: waits[waits.len() / 2],
        compile_ms: 0.0,
        clock,
    })
}

/// One variant on one case: `None` when the variant does not take the case's call (another
/// dtype, head dim, …), else its result.
async fn run_one(
    gpu: &Gpu,
    case: &Case,
    variant: &str,
    options: &Options,
    ceilings: &Ceilings,
) -> Result<Option<VariantResult>> {
    let mut result = VariantResult {
        family: case.family.into(),
        variant: variant.into(),
        case: case.name.clone(),
        bucket: String::new(),
        outcome: Outcome::Failed,
        rel_l2: None,
        tolerance: case.tolerance,
        error: None,
        compile_ms: None,
        timing: None,
        gflop_per_s: None,
        gb_per_s: None,
        efficiency: None,
    };
    // A pipeline built before (for another case, or the ceilings) is not timed as a build.
    let built = gpu.has_pipeline(case.family, variant);
    let t0 = Instant::now();
    let launches = match case.launches(Some(variant)) {
        Ok(p) => p,
        Err(kiln::Error::Shape { .. }) => return Ok(None),
        Err(e) => {
            result.error = Some(e.to_string());
            return Ok(Some(result));
        }
    };
    result.compile_ms = (!built).then(|| t0.elapsed().as_secs_f64() * 1e3);
    result.bucket = launches.choice.bucket.to_string();

    // Poison, run everything once, and check each output against the CPU reference; the report
    // gives the output furthest past its bound (at campaign scale every output's is the case's).
    let scores = match case.check(gpu, &launches).await {
        Ok(scores) => scores,
        Err(e) => {
            result.error = Some(e.to_string());
            return Ok(Some(result));
        }
    };
    let Some(worst) = kiln::cases::Scored::worst(&scores) else {
        result.error = Some("the case checks no output".into());
        return Ok(Some(result));
    };
    result.rel_l2 = worst.err.is_finite().then_some(worst.err);
    result.tolerance = worst.tolerance;
    if !worst.ok() {
        result.outcome = Outcome::Wrong;
        result.error = Some(format!(
            "relative L2 error against the CPU reference over its bound: {}",
            worst.describe()
        ));
        return Ok(Some(result));
    }

    let timed: Vec<_> = launches.timed.iter().map(|&i| &launches.all[i]).collect();
    let t = bench::time_dispatches(gpu, &timed, options.warmup, options.repeats).await?;
    let gflop = case.flops / t.median_ms / 1e6;
    let gb = case.bytes / t.median_ms / 1e6;
    result.outcome = Outcome::Ok;
    result.gflop_per_s = (case.flops > 0.0).then_some(gflop);
    result.gb_per_s = Some(gb);
    result.efficiency = Some((gflop / ceilings.fma_gflop_per_s).max(gb / ceilings.copy_gb_per_s));
    result.timing = Some(Timing {
        clock: t.clock.as_str().into(),
        median_ms: t.median_ms,
        min_ms: t.min_ms,
        max_ms: t.max_ms,
        warmup: t.warmup as u32,
        repeats: t.samples_ms.len() as u32,
        quantum_ms: t.quantum_ms,
    });
    Ok(Some(result))
}
