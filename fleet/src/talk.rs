//! The fleet's walkthrough for presenter mode: the stage list (device census → ceilings →
//! variants racing → the tuned choice) and the live measurements behind the stages' visuals, a
//! step at a time so that a window or a page can draw between steps. The native window
//! (`fleet talk`, `crate::presenter`) and the page (fleet-web's exports) share all of it.

use kiln::bench::{self, Clock, median};
use kiln::contract::Param;
use kiln::cpu::{self, Array};
use kiln::{Choice, DType, Dispatch, Gpu, Reason, Tensor, ops};
use kiln_app::talk::{Code, Stage, Target};
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde::Serialize;
use web_time::Instant;

use crate::campaign::CeilingKernels;
use crate::error::Result;

/// How many variants race (the selector's pick among them).
const RACERS: usize = 6;
/// Timed samples per racer and per ceiling: a few, the median shown.
const SAMPLES: usize = 8;
/// A sample's submission lasts at least this long (ms), so that submitting and waiting fade.
const SUBMISSION_MS: f64 = 5.0;
/// The most runs one sample submits.
const MOST_RUNS: usize = 512;

/// Whether the adapter is a CPU running the GPU's work (lavapipe, SwiftShader): sizes shrink.
fn software(gpu: &Gpu) -> bool {
    gpu.profile().is_software()
}

/// Timed samples of one piece of work on the wall clock: `runs` runs in one submission, waited
/// for, per run. The wall clock and not GPU timestamps: in a window on lavapipe the timestamps
/// bracket a pass before its work has run (a 128³ matmul "took" 0.05 ms where the wall clock
/// saw 2 ms), and a live comparison must not rest on that. `calibrate` picks `runs` so that a
/// submission lasts `SUBMISSION_MS`, which keeps the cost of submitting small on a fast GPU.
struct Sampler {
    runs: usize,
    samples_ms: Vec<f64>,
}

impl Sampler {
    fn new() -> Sampler {
        Sampler {
            runs: 1,
            samples_ms: Vec::new(),
        }
    }

    /// Milliseconds per run of `runs` runs of `work`, in one submission.
    async fn time(gpu: &Gpu, work: &Dispatch, runs: usize) -> Result<f64> {
        let list = vec![work; runs];
        let t0 = Instant::now();
        gpu.submit(&list)?;
        gpu.idle().await?;
        Ok(t0.elapsed().as_secs_f64() * 1e3 / runs as f64)
    }

    /// Doubles the runs per submission until one lasts `SUBMISSION_MS` (unmeasured).
    async fn calibrate(&mut self, gpu: &Gpu, work: &Dispatch) -> Result<()> {
        while self.runs < MOST_RUNS {
            let per_run = Self::time(gpu, work, self.runs).await?;
            if per_run * self.runs as f64 >= SUBMISSION_MS {
                break;
            }
            self.runs *= 2;
        }
        Ok(())
    }

    async fn sample(&mut self, gpu: &Gpu, work: &Dispatch) -> Result<()> {
        let ms = Self::time(gpu, work, self.runs).await?;
        self.samples_ms.push(ms);
        Ok(())
    }

    fn count(&self) -> usize {
        self.samples_ms.len()
    }

    fn median(&self) -> Option<f64> {
        median(&self.samples_ms)
    }
}

/// How the live figures were timed, in words.
fn clock_words(runs: usize) -> String {
    format!(
        "wall clock, {runs} run{} per submission",
        if runs == 1 { "" } else { "s" }
    )
}

// ---- ceilings ----

/// The campaign's ceiling kernels measured one sample per step: copy bandwidth, FMA rate and
/// dispatch latency in turn, so that their bars fill in as the samples arrive.
pub struct CeilingMeter {
    gpu: Gpu,
    kernels: CeilingKernels,
    warmed: bool,
    copy: Sampler,
    fma: Sampler,
    latency_us: Vec<f64>,
}

/// What the ceilings' visual shows.
#[derive(Clone, Debug, Serialize)]
pub struct CeilingsView {
    pub copy_gb_per_s: Option<f64>,
    pub fma_gflop_per_s: Option<f64>,
    pub dispatch_latency_us: Option<f64>,
    /// Samples taken of each (copy, FMA, latency), and of how many.
    pub samples: [usize; 3],
    pub of: usize,
    /// How the two rates were timed.
    pub clock: String,
    pub done: bool,
}

impl std::fmt::Debug for CeilingMeter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CeilingMeter")
            .field("view", &self.view())
            .finish_non_exhaustive()
    }
}

impl CeilingMeter {
    pub fn new(gpu: &Gpu) -> Result<CeilingMeter> {
        Ok(CeilingMeter {
            gpu: gpu.clone(),
            kernels: CeilingKernels::new(gpu)?,
            warmed: false,
            copy: Sampler::new(),
            fma: Sampler::new(),
            latency_us: Vec::new(),
        })
    }

    /// The variants the ceilings run (copy, FMA chain), as the selector picked them.
    pub fn choices(&self) -> &[Choice] {
        &self.kernels.choices
    }

    pub fn done(&self) -> bool {
        [self.copy.count(), self.fma.count(), self.latency_us.len()]
            .iter()
            .all(|&n| n >= SAMPLES)
    }

    /// One step: the warm-up first (a GPU that sat idle starts at low clocks) with the runs per
    /// sample found, then one sample of whichever ceiling has the fewest. Returns whether there
    /// is more to do.
    pub async fn step(&mut self) -> Result<bool> {
        let gpu = &self.gpu;
        if !self.warmed {
            let ms = if software(gpu) { 50.0 } else { 200.0 };
            bench::spin_up(gpu, &[&self.kernels.copy], ms).await?;
            self.copy.calibrate(gpu, &self.kernels.copy).await?;
            self.fma.calibrate(gpu, &self.kernels.fma).await?;
            self.warmed = true;
            return Ok(true);
        }
        let counts = [self.copy.count(), self.fma.count(), self.latency_us.len()];
        let Some(which) = (0..3)
            .filter(|&i| counts[i] < SAMPLES)
            .min_by_key(|&i| counts[i])
        else {
            return Ok(false);
        };
        match which {
            0 => self.copy.sample(gpu, &self.kernels.copy).await?,
            1 => self.fma.sample(gpu, &self.kernels.fma).await?,
            _ => {
                let us = self.kernels.latency_us(gpu).await?;
                self.latency_us.push(us);
            }
        }
        Ok(!self.done())
    }

    pub fn view(&self) -> CeilingsView {
        CeilingsView {
            copy_gb_per_s: self.copy.median().map(|ms| self.kernels.copy_gb_per_s(ms)),
            fma_gflop_per_s: self.fma.median().map(|ms| self.kernels.fma_gflop_per_s(ms)),
            dispatch_latency_us: median(&self.latency_us),
            samples: [self.copy.count(), self.fma.count(), self.latency_us.len()],
            of: SAMPLES,
            clock: format!(
                "wall clock; copy {}, FMA {} run(s) per submission",
                self.copy.runs, self.fma.runs
            ),
            done: self.done(),
        }
    }
}

// ---- the race ----

/// One variant in the race.
struct Racer {
    choice: Choice,
    /// Planned (its pipeline built) on its first step.
    dispatch: Option<Dispatch>,
    rel_l2: Option<f64>,
    error: Option<String>,
    timing: Sampler,
}

impl Racer {
    /// Planned and checked against the CPU reference (or failed): ready to be timed or out.
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
pub struct RacePlan {
    /// The matrices' side.
    pub n: usize,
    /// `matmul 128x128x128 f32`.
    pub case: String,
    /// What kiln's selector picks for this call on the target, and why.
    pub picked: Choice,
    /// The racers, the pick first.
    pub racers: Vec<Choice>,
}

impl RacePlan {
    /// The case: 128³ on a software adapter, 256³ on a GPU — sizes the campaign measures, so
    /// the tuned table's entries for them apply, and small enough for the CPU reference.
    pub fn new(target: Target<'_>) -> Result<RacePlan> {
        let n = if target.profile().is_software() {
            128
        } else {
            256
        };
        let call = ops::matmul::Call::new(DType::F32, 1, n, n, n);
        let picked = ops::matmul::choose(&target.selector(), &call, None)?;
        let racers = contenders(target, &call, &picked)?;
        Ok(RacePlan {
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
    /// The race of [`RacePlan::new`] on `gpu`: its matrices, the CPU reference's product, the
    /// racers waiting.
    pub fn new(gpu: &Gpu) -> Result<Race> {
        let plan = RacePlan::new(Target::Device(gpu))?;
        let n = plan.n;
        let mut rng = StdRng::seed_from_u64(0x6b69_6c6e);
        let mut data = || -> Vec<f32> { (0..n * n).map(|_| rng.random_range(-1.0..1.0)).collect() };
        let (ad, bd) = (data(), data());
        let a = Tensor::from_slice(gpu, &[n, n], &ad, DType::F32)?;
        let b = Tensor::from_slice(gpu, &[n, n], &bd, DType::F32)?;
        let c = Tensor::uninit(gpu, &[n, n], DType::F32)?;
        let a_cpu = Array::new(&[n, n], ad)?;
        let b_cpu = Array::new(&[n, n], bd)?;
        let want = cpu::matmul(&a_cpu, &b_cpu)?.data;
        let racers = plan
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
            case: plan.case,
            flops: 2.0 * (n * n * n) as f64,
            a,
            b,
            c,
            a_cpu,
            b_cpu,
            want,
            picked: plan.picked,
            racers,
        })
    }

    /// What is raced: the case, the pick and the racers.
    pub fn plan(&self) -> RacePlan {
        RacePlan {
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
        let planned = ops::matmul::plan(&self.a, &self.b, &self.c, Some(&name));
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
                    runs: r.timing.runs,
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
            let (dispatch, choice) = ops::matmul::plan(&a, &b, &c, None)?;
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
            let runs = sampler.runs;
            let gpu_t = bench::Timing::from_samples(Clock::WallClock, 1, sampler.samples_ms)?;
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

// ---- the stages ----

/// The `DeviceProfile` struct as `kernels/src/device.rs` declares it: what the census records.
fn profile_source() -> String {
    let source = include_str!("../../kernels/src/device.rs");
    let lines: Vec<&str> = source.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with("pub struct DeviceProfile"));
    // Its doc comment too: the lines above that start with `///` or `#[`.
    let start = start.map(|s| {
        let mut s = s;
        while s > 0 && (lines[s - 1].starts_with("///") || lines[s - 1].starts_with("#[")) {
            s -= 1;
        }
        s
    });
    match start {
        Some(s) => lines[s..]
            .iter()
            .position(|l| *l == "}")
            .map(|e| lines[s..=s + e].join("\n"))
            .unwrap_or_else(|| lines[s..].join("\n")),
        None => source.to_string(),
    }
}

/// How many of a family's variants the target offers, and of how many.
fn offered(target: Target<'_>, family: &str) -> Result<(usize, usize)> {
    let reg = target.registry();
    Ok((
        reg.supported(family, target.profile())?.count(),
        reg.variants(family)?.len(),
    ))
}

/// Per kernel family, the variants this adapter is offered (its features and limits allow)
/// and the family's total: the families with the most variants first.
#[derive(Clone, Debug, Serialize)]
pub struct Offered {
    pub family: String,
    pub here: usize,
    pub all: usize,
}

pub fn offered_all(gpu: &Gpu) -> Result<Vec<Offered>> {
    offered_for(Target::Device(gpu))
}

/// [`offered_all`] for a target: the device in hand or a stored profile.
pub fn offered_for(target: Target<'_>) -> Result<Vec<Offered>> {
    let mut list = target
        .registry()
        .contracts()
        .map(|c| {
            let (here, all) = offered(target, &c.family)?;
            Ok(Offered {
                family: c.family.clone(),
                here,
                all,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    list.sort_by(|a, b| b.all.cmp(&a.all).then(a.family.cmp(&b.family)));
    Ok(list)
}

/// The walkthrough for the adapter in hand, in order: device census, ceilings, variants racing,
/// the tuned choice. `ceilings` are the ceiling kernels' choices (copy, FMA chain).
pub fn stages(gpu: &Gpu, race: &Race, ceilings: &[Choice]) -> Result<Vec<Stage>> {
    stages_for(Target::Device(gpu), &race.plan(), ceilings)
}

/// The ceiling kernels' choices (copy, FMA chain) for a target, as `CeilingMeter::new` plans
/// them: what a page without a WebGPU adapter shows for a stored profile.
pub fn ceiling_choices(target: Target<'_>) -> Result<Vec<Choice>> {
    let sel = target.selector();
    ["copy", "fma_chain"]
        .into_iter()
        .map(|family| {
            let call = ops::Elementwise {
                family,
                dtype: DType::F32,
                count: None,
            };
            Ok(sel.choose(&call, None)?)
        })
        .collect()
}

/// The walkthrough for a target: the device in hand, or a stored profile where there is no
/// device (the words say so, and that nothing is measured here).
pub fn stages_for(target: Target<'_>, race: &RacePlan, ceilings: &[Choice]) -> Result<Vec<Stage>> {
    let p = target.profile();
    let stored = target.is_stored();
    let yes = |b: bool| if b { "yes" } else { "no" };
    let (mm_here, mm_all) = offered(target, "matmul")?;
    let features = format!(
        "f16 {}, subgroups {}, cooperative matrices {}",
        yes(p.features.shader_f16),
        yes(p.features.subgroup),
        yes(p.features.cooperative_matrix),
    );
    let census = Stage::new(
        "Device census",
        &if stored {
            format!(
                "First Kiln asks the device what it is. WebGPU cannot run on this page (the \
                 explanation above says why), so here is what WebGPU guarantees every device \
                 ({}): its features ({features}) \
                 and limits allow {mm_here} of the {mm_all} matrix-multiply variants. A real \
                 device's features and limits decide which variants may exist on it.",
                p.name
            )
        } else {
            format!(
                "First Kiln asks the device what it is: {}, through {}, a {} device. Its \
                 features ({features}) and limits decide which kernel variants may exist here: \
                 {mm_here} of the {mm_all} matrix-multiply variants.",
                p.name, p.backend, p.device_type,
            )
        },
        Some(Code::rust(
            "kernels/src/device.rs: the census every kernel is rendered for",
            &profile_source(),
        )),
    );

    let fma = ceilings
        .iter()
        .find(|c| c.variant.family == "fma_chain")
        .map(|c| Code::kernel_for(target, c))
        .transpose()?;
    let ceilings_stage = Stage::new(
        "Ceilings",
        &format!(
            "Two tiny kernels measure the best this device can do: a copy for memory bandwidth \
             and a long chain of multiply-adds for arithmetic. Every later result is read as a \
             share of these ceilings, so a phone and a data-centre GPU are judged by the same \
             yardstick.{}",
            if stored {
                " Without an adapter nothing is measured here: the bars are the devices of the \
                 fleet's checked-in reports."
            } else {
                ""
            }
        ),
        fma,
    );

    let rival = race
        .racers
        .iter()
        .find(|c| c.variant.name != race.picked.variant.name)
        .unwrap_or(&race.picked);
    let racing = Stage::new(
        "Variants racing",
        &format!(
            "Now {} variants of one matrix product ({}) race. Each is first checked against \
             the CPU reference, then timed; tile sizes, workgroup shape and vector width are \
             template values, so every contestant is the same source rendered differently.{}",
            race.racers.len(),
            race.case,
            if stored {
                " Without an adapter they cannot run here: these are the contenders a device \
                 with WebGPU's guaranteed limits would race."
            } else {
                ""
            }
        ),
        Some(Code::kernel_for(target, rival)?),
    );

    let why = match &race.picked.reason {
        Reason::Tuned { class, .. } => format!(
            "the tuned table has an entry for this class of device ({class}), measured by \
             an earlier campaign"
        ),
        Reason::Rule(_) => "no campaign has measured this class of device yet, so the \
                            selector's rule of thumb chose"
            .to_string(),
        Reason::Forced => "the caller named it".to_string(),
    };
    let tuned = Stage::new(
        "The tuned choice",
        &format!(
            "For this call Kiln's selector picks {}{}: {why}. {} reports from many devices are \
             merged into that table, so each class of device gets the variant measured fastest \
             on it.",
            race.picked.variant.name,
            if stored {
                " for a device with WebGPU's guaranteed limits"
            } else {
                ""
            },
            if stored {
                "A race on a real device shows whether it is the fastest there;"
            } else {
                "The race shows whether it is the fastest here;"
            }
        ),
        Some(Code::kernel_for(target, &race.picked)?),
    );
    Ok(vec![census, ceilings_stage, racing, tuned])
}

/// The variants kiln's selector picks on this device for a few common calls (the race's
/// matmul, a softmax, a layernorm, a broadcast add, the ceilings' copy and FMA chain), for
/// the page's kernel-source view.
pub fn selector_picks(gpu: &Gpu, race: &Race, ceilings: &[Choice]) -> Result<Vec<Choice>> {
    let rows = if software(gpu) { 256 } else { 1024 };
    let sel = gpu.selector();
    let f32 = DType::F32;
    let mut picks = vec![race.picked.clone()];
    picks.push(sel.choose(&ops::softmax::call(f32, rows, false), None)?);
    picks.push(sel.choose(&ops::layernorm::call(f32, rows, false), None)?);
    picks.push(sel.choose(&ops::add::call(f32, &[rows, rows], &[rows])?, None)?);
    picks.extend(ceilings.iter().cloned());
    Ok(picks)
}
