//! The ceilings: the campaign's ceiling kernels (copy bandwidth, FMA rate, dispatch latency)
//! measured live a sample per step, and the ceiling kernels' choices for a target without a
//! device.

use kiln::{Choice, DType, Gpu, bench, ops};
use kiln_app::talk::Target;
use serde::Serialize;

use super::sample::{SAMPLES, Sampler};
use crate::campaign::CeilingKernels;
use crate::error::Result;

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
            // A software adapter has no clocks to bring up: a short warm-up does.
            let ms = if gpu.profile().is_software() {
                50.0
            } else {
                200.0
            };
            bench::warm_up_dispatches(gpu, &[&self.kernels.copy], ms).await?;
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
            dispatch_latency_us: bench::median(&self.latency_us),
            samples: [self.copy.count(), self.fma.count(), self.latency_us.len()],
            of: SAMPLES,
            clock: format!(
                "wall clock; copy {}, FMA {} run(s) per submission",
                self.copy.runs(),
                self.fma.runs()
            ),
            done: self.done(),
        }
    }
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
