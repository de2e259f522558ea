//! The race: a few matmul variants on one small case, the selector's pick among them, each
//! checked against the CPU reference and then timed a sample per step. `RaceSetup` is the race
//! chosen from the shapes alone (what a page without an adapter shows); `Race` runs it.

use kiln::bench::{self, Clock};
use kiln::contract::Param;
use kiln::cpu::{self, Array};
use kiln::{Choice, DType, Dispatch, Gpu, Reason, Tensor, ops};
use kiln_app::talk::Target;
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde::Serialize;

use super::sample::{SAMPLES, Sampler, clock_words};
use crate::error::Result;

/// How many variants race (the selector's pick among them).
const RACERS: usize = 6;

/// One variant in the race.
struct Racer {
    choice: Choice,
    /// Launches (its pipeline built) on its first step.
    dispatch: Option<Dispatch>,
    rel_l2: Option<f64>,
    error: Option<String>,
    timing: Sampler,
}

impl Racer {
    /// Launches and checked against the CPU reference (or failed): ready to be timed or out.
    fn checked(&self) -> bool {
        self.rel_l2.is_some() || self.error.is_some()
    }

    fn ok(&self) -> bool {
        self.rel_l2.is_some() && self.error.is_none()
    }
}

/// A few matmul variants on one small case: each is built and checked against the CPU
/// reference, then timed a sample per step in turn; the selector's pick is one of them.
pub struct Race {
    gpu: Gpu,
    /// `matmul 128x128x128 f32`.
    pub case: String,
    flops: f64,
    a: Tensor,
    b: Tensor,
    c: Tensor,
    a_cpu: Array,
    b_cpu: Array,
    want: Vec<f32>,
    /// What kiln's selector picks for this call on this device, and why.
    pub picked: Choice,
    racers: Vec<Racer>,
}

/// One racer as the visual shows it.
#[derive(Clone, Debug, Serialize)]
pub struct RacerView {
    pub variant: String,
    /// The selector's pick for this call.
    pub picked: bool,
    /// `waiting`, `wrong`, `failed`, `timing` or `done`.
    pub status: &'static str,
    pub rel_l2: Option<f64>,
    pub error: Option<String>,
    pub samples: usize,
    /// Runs per timed submission.
    pub runs: usize,
    pub median_ms: Option<f64>,
    pub gflop_per_s: Option<f64>,
}

/// What the race's and the tuned choice's visuals show.
#[derive(Clone, Debug, Serialize)]
pub struct RaceView {
    pub case: String,
    /// The call's shape bucket, as the tuned table names it.
    pub bucket: String,
    pub class: String,
    pub racers: Vec<RacerView>,
    pub of: usize,
    /// How the racers were timed.
    pub clock: String,
    pub picked: String,
    /// `tuned`, `rule` or `named`; and the selector's reason in words.
    pub picked_by: &'static str,
    pub reason: String,
    /// The fastest correct racer once every racer is timed.
    pub fastest: Option<String>,
    /// Whether the selector's pick is the fastest here (once the race is done).
    pub agree: Option<bool>,
    /// The pick's median over the fastest one's (1 when they agree).
    pub picked_over_fastest: Option<f64>,
    pub done: bool,
}

impl std::fmt::Debug for Race {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Race")
            .field("view", &self.view())
            .finish_non_exhaustive()
    }
}

/// The race before anything is built: its case, the selector's pick and the contenders, chosen
/// for a target from the shapes alone. `Race::new` races these; a page without a WebGPU adapter
/// shows them for a stored profile.
#[derive(Clone, Debug)]
pub struct RaceSetup {
    /// The matrices' side.
    pub n: usize,
    /// `matmul 128x128x128 f32`.
    pub case: String,
    /// What kiln's selector picks for this call on the target, and why.
    pub picked: Choice,
    /// The racers, the pick first.
    pub racers: Vec<Choice>,
}

impl RaceSetup {
    /// The case: 128³ on a software adapter, 256³ on a GPU — sizes the campaign measures, so
    /// the tuned table's entries for them apply, and small enough for the CPU reference.
    pub fn new(target: Target<'_>) -> Result<RaceSetup> {
        let n = if target.profile().is_software() {
            128
        } else {
            256
        };
        let call = ops::matmul::Call::new(DType::F32, 1, n, n, n);
        let picked = ops::matmul::choose(&target.selector(), &call, None)?;
        let racers = contenders(target, &call, &picked)?;
        Ok(RaceSetup {
            n,
            case: format!("matmul {n}x{n}x{n} f32"),
            picked,
            racers,
        })
    }

    /// The race as its visual shows it before it starts: every racer waiting.
    pub fn view(&self, target: Target<'_>) -> RaceView {
        RaceView {
            case: self.case.clone(),
            bucket: self.picked.bucket.to_string(),
            class: target.profile().class(),
            racers: self
                .racers
                .iter()
                .map(|c| RacerView {
                    variant: c.variant.name.clone(),
                    picked: c.variant.name == self.picked.variant.name,
                    status: "waiting",
                    rel_l2: None,
                    error: None,
                    samples: 0,
                    runs: 1,
                    median_ms: None,
                    gflop_per_s: None,
                })
                .collect(),
            of: SAMPLES,
            clock: clock_words(1),
            picked: self.picked.variant.name.clone(),
            picked_by: picked_by(&self.picked.reason),
            reason: self.picked.reason.to_string(),
            fastest: None,
            agree: None,
            picked_over_fastest: None,
            done: false,
        }
    }
}

/// `tuned`, `rule` or `named`: where the selector's pick came from.
fn picked_by(reason: &Reason) -> &'static str {
    match reason {
        Reason::Tuned { .. } => "tuned",
        Reason::Rule(_) => "rule",
        Reason::Forced => "named",
    }
}

impl Race {
    /// The race of [`RaceSetup::new`] on `gpu`: its matrices, the CPU reference's product, the
    /// racers waiting.
    pub fn new(gpu: &Gpu) -> Result<Race> {
        let setup = RaceSetup::new(Target::Device(gpu))?;
        let n = setup.n;
        let mut rng = StdRng::seed_from_u64(0x6b69_6c6e);
        let mut data = || -> Vec<f32> { (0..n * n).map(|_| rng.random_range(-1.0..1.0)).collect() };
        let (ad, bd) = (data(), data());
        let a = Tensor::from_slice(gpu, &[n, n], &ad, DType::F32)?;
        let b = Tensor::from_slice(gpu, &[n, n], &bd, DType::F32)?;
        let c = Tensor::uninit(gpu, &[n, n], DType::F32)?;
        let a_cpu = Array::new(&[n, n], ad)?;
        let b_cpu = Array::new(&[n, n], bd)?;
        let want = cpu::matmul(&a_cpu, &b_cpu)?.data;
        let racers = setup
            .racers
            .into_iter()
            .map(|choice| Racer {
                choice,
                dispatch: None,
                rel_l2: None,
                error: None,
                timing: Sampler::new(),
            })
            .collect();
        Ok(Race {
            gpu: gpu.clone(),
            case: setup.case,
            flops: 2.0 * (n * n * n) as f64,
            a,
            b,
            c,
            a_cpu,
            b_cpu,
            want,
            picked: setup.picked,
            racers,
        })
    }

    /// What is raced: the case, the pick and the racers.
    pub fn setup(&self) -> RaceSetup {
        RaceSetup {
            n: self.a.shape().first().copied().unwrap_or(0),
            case: self.case.clone(),
            picked: self.picked.clone(),
            racers: self.choices(),
        }
    }

    /// The racers' choices, the selector's pick first.
    pub fn choices(&self) -> Vec<Choice> {
        self.racers.iter().map(|r| r.choice.clone()).collect()
    }

    pub fn done(&self) -> bool {
        self.racers
            .iter()
            .all(|r| r.checked() && (!r.ok() || r.timing.count() >= SAMPLES))
    }

    /// One step: build, check and calibrate the next unchecked racer, else one timed sample of
    /// the racer with the fewest. A racer that fails or is wrong is out of the race, not an
    /// error of the race. Returns whether there is more to do.
    pub async fn step(&mut self) -> Result<bool> {
        if let Some(i) = self.racers.iter().position(|r| !r.checked()) {
            self.check(i).await?;
            return Ok(true);
        }
        let gpu = &self.gpu;
        let Some(r) = self
            .racers
            .iter_mut()
            .filter(|r| r.ok() && r.timing.count() < SAMPLES)
            .min_by_key(|r| r.timing.count())
        else {
            return Ok(false);
        };
        if let Some(d) = &r.dispatch {
            r.timing.sample(gpu, d).await?;
        }
        Ok(!self.done())
    }

    /// Builds racer `i`, runs it once on poisoned output and compares with the CPU reference;
    /// a correct one then finds its runs per sample.
    async fn check(&mut self, i: usize) -> Result<()> {
        let name = self.racers[i].choice.variant.name.clone();
        let planned = ops::matmul::launch(&self.a, &self.b, &self.c, Some(&name));
        let r = &mut self.racers[i];
        let dispatch = match planned {
            Ok((d, _)) => d,
            Err(e) => {
                r.error = Some(e.to_string());
                return Ok(());
            }
        };
        self.c.write(&vec![f32::NAN; self.c.numel()])?;
        self.gpu.submit(&[&dispatch])?;
        if let Err(e) = self.gpu.check() {
            r.error = Some(e.to_string());
            return Ok(());
        }
        let err = cpu::rel_l2(&self.c.read().await?, &self.want);
        r.rel_l2 = Some(err);
        if err.is_nan() || err > 1e-4 {
            r.error = Some(format!(
                "relative L2 error {err:.2e} against the CPU reference"
            ));
            return Ok(());
        }
        r.timing.calibrate(&self.gpu, &dispatch).await?;
        r.dispatch = Some(dispatch);
        Ok(())
    }

    fn gflop(&self, ms: f64) -> f64 {
        self.flops / ms / 1e6
    }

    pub fn view(&self) -> RaceView {
        let racers: Vec<RacerView> = self
            .racers
            .iter()
            .map(|r| {
                let median_ms = r.timing.median();
                let status = match (&r.error, r.rel_l2) {
                    _ if !r.checked() => "waiting",
                    (Some(_), Some(_)) => "wrong",
                    (Some(_), None) => "failed",
                    _ if r.timing.count() >= SAMPLES => "done",
                    _ => "timing",
                };
                RacerView {
                    variant: r.choice.variant.name.clone(),
                    picked: r.choice.variant.name == self.picked.variant.name,
                    status,
                    rel_l2: r.rel_l2,
                    error: r.error.clone(),
                    samples: r.timing.count(),
                    runs: r.timing.runs(),
                    median_ms,
                    gflop_per_s: median_ms.map(|ms| self.gflop(ms)),
                }
            })
            .collect();
        let done = self.done();
        let fastest = racers.iter().filter(|r| r.status == "done").min_by(|x, y| {
            let t = |r: &RacerView| r.median_ms.unwrap_or(f64::MAX);
            t(x).total_cmp(&t(y))
        });
        let picked = racers.iter().find(|r| r.picked);
        let (fastest_name, agree, ratio) = match (done, fastest) {
            (true, Some(f)) => {
                let ratio = picked
                    .and_then(|p| Some(p.median_ms? / f.median_ms?))
                    .filter(|r| r.is_finite());
                (
                    Some(f.variant.clone()),
                    Some(f.variant == self.picked.variant.name),
                    ratio,
                )
            }
            _ => (None, None, None),
        };
        let runs: Vec<usize> = racers.iter().map(|r| r.runs).collect();
        let (lo, hi) = (
            runs.iter().copied().min().unwrap_or(1),
            runs.iter().copied().max().unwrap_or(1),
        );
        RaceView {
            case: self.case.clone(),
            bucket: self.picked.bucket.to_string(),
            class: self.gpu.profile().class(),
            of: SAMPLES,
            clock: if lo == hi {
                clock_words(lo)
            } else {
                format!("wall clock, {lo}-{hi} runs per submission")
            },
            picked: self.picked.variant.name.clone(),
            picked_by: picked_by(&self.picked.reason),
            reason: self.picked.reason.to_string(),
            racers,
            fastest: fastest_name,
            agree,
            picked_over_fastest: ratio,
            done,
        }
    }

    /// The race's case on both paths for the window's rates and `--bench`: the selector's pick
    /// on the GPU (`repeats` samples, timed as the race times them) and kiln's plain CPU
    /// reference, and how far apart their results are.
    pub fn against_cpu(
        &self,
        repeats: usize,
    ) -> impl Future<Output = kiln::Result<Comparison>> + 'static {
        let (gpu, a, b, c) = (
            self.gpu.clone(),
            self.a.clone(),
            self.b.clone(),
            self.c.clone(),
        );
        let (a_cpu, b_cpu, want) = (self.a_cpu.clone(), self.b_cpu.clone(), self.want.clone());
        async move {
            let (dispatch, choice) = ops::matmul::launch(&a, &b, &c, None)?;
            let mut sampler = Sampler::new();
            sampler
                .calibrate(&gpu, &dispatch)
                .await
                .map_err(kiln::Error::from)?;
            for _ in 0..repeats.max(1) {
                sampler
                    .sample(&gpu, &dispatch)
                    .await
                    .map_err(kiln::Error::from)?;
            }
            let runs = sampler.runs();
            let gpu_t =
                bench::Timing::from_samples(Clock::WallClock, 1, sampler.into_samples_ms())?;
            let rel_l2 = cpu::rel_l2(&c.read().await?, &want);
            let cpu_t = bench::time_cpu(0, repeats.max(1), 5.0, || {
                let _ = cpu::matmul(&a_cpu, &b_cpu);
            })?;
            Ok(Comparison {
                variant: choice.variant.name.clone(),
                reason: choice.reason.to_string(),
                runs,
                gpu: gpu_t,
                cpu: cpu_t,
                rel_l2,
            })
        }
    }
}

/// The race's case timed on the GPU (the selector's pick) and on the CPU reference.
#[derive(Debug)]
pub struct Comparison {
    pub variant: String,
    pub reason: String,
    /// GPU runs per timed submission.
    pub runs: usize,
    pub gpu: bench::Timing,
    pub cpu: bench::Timing,
    pub rel_l2: f64,
}

/// The selector's pick and a spread of the other f32 variants that take the call: evenly spaced
/// through the registry's order, so that routes, tiles and staging depths all appear.
fn contenders(
    target: Target<'_>,
    call: &ops::matmul::Call,
    picked: &Choice,
) -> Result<Vec<Choice>> {
    let fixed = [("dtype", Param::Str("f32".into()))];
    let sel = target.selector();
    let others: Vec<Choice> = target
        .registry()
        .supported("matmul", target.profile())?
        .filter(|v| v.takes(&fixed) && v.name != picked.variant.name)
        .filter_map(|v| ops::matmul::choose(&sel, call, Some(&v.name)).ok())
        .collect();
    let wanted = (RACERS - 1).min(others.len());
    let mut out = vec![picked.clone()];
    for i in 0..wanted {
        // Centres of `wanted` equal slices of the list.
        let at = (2 * i + 1) * others.len() / (2 * wanted);
        out.push(others[at].clone());
    }
    Ok(out)
}
