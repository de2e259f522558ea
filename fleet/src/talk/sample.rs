//! The walkthrough's timing: a `Sampler` takes wall-clock samples of one piece of GPU work, its
//! runs per submission calibrated first; the ceilings and the race both time with it.

use kiln::bench::median;
use kiln::{Dispatch, Gpu};
use web_time::Instant;

use crate::error::Result;

/// Timed samples per racer and per ceiling: a few, the median shown.
pub(super) const SAMPLES: usize = 8;
/// A sample's submission lasts at least this long (ms), so that submitting and waiting fade.
const SUBMISSION_MS: f64 = 5.0;
/// The most runs one sample submits.
const MOST_RUNS: usize = 512;

/// Timed samples of one piece of work on the wall clock: `runs` runs in one submission, waited
/// for, per run. The wall clock and not GPU timestamps: in a window on lavapipe the timestamps
/// bracket a pass before its work has run (a 128³ matmul "took" 0.05 ms where the wall clock
/// saw 2 ms), and a live comparison must not rest on that. `calibrate` picks `runs` so that a
/// submission lasts `SUBMISSION_MS`, which keeps the cost of submitting small on a fast GPU.
pub(super) struct Sampler {
    runs: usize,
    samples_ms: Vec<f64>,
}

impl Sampler {
    pub(super) fn new() -> Sampler {
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
    pub(super) async fn calibrate(&mut self, gpu: &Gpu, work: &Dispatch) -> Result<()> {
        while self.runs < MOST_RUNS {
            let per_run = Self::time(gpu, work, self.runs).await?;
            if per_run * self.runs as f64 >= SUBMISSION_MS {
                break;
            }
            self.runs *= 2;
        }
        Ok(())
    }

    pub(super) async fn sample(&mut self, gpu: &Gpu, work: &Dispatch) -> Result<()> {
        let ms = Self::time(gpu, work, self.runs).await?;
        self.samples_ms.push(ms);
        Ok(())
    }

    pub(super) fn count(&self) -> usize {
        self.samples_ms.len()
    }

    pub(super) fn median(&self) -> Option<f64> {
        median(&self.samples_ms)
    }

    /// Runs per timed submission, as `calibrate` found them (1 before).
    pub(super) fn runs(&self) -> usize {
        self.runs
    }

    /// The samples taken (ms per run), for a `kiln::bench::Timing`.
    pub(super) fn into_samples_ms(self) -> Vec<f64> {
        self.samples_ms
    }
}

/// How the live figures were timed, in words.
pub(super) fn clock_words(runs: usize) -> String {
    format!(
        "wall clock, {runs} run{} per submission",
        if runs == 1 { "" } else { "s" }
    )
}
