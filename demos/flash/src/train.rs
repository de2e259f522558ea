//! Training on one path, a step at a time (so the page can draw progress between steps), and
//! the comparison of the two paths: ms per step, wall time, the loss curves and their drift.

use std::time::Duration;

use kiln_app::kiln::cpu::Array;
use serde::Serialize;
use web_time::Instant;

use crate::backend::Backend;
use crate::data::Corpus;
use crate::error::{Error, Result};
use crate::model::{self, Inputs, State};
use crate::preset::{Config, Hyper};

/// Training on one path. Where the path can capture (the GPU) the first step is captured and
/// every later one replays it, with only the batch's tokens and targets and the step's AdamW
/// bias corrections rewritten: the host issues one list instead of choosing, allocating and
/// binding each launch of the step again.
#[derive(Debug)]
pub struct Trainer<B: Backend> {
    pub backend: B,
    pub config: Config,
    pub hyper: Hyper,
    pub state: State<B::T>,
    pub run: PathRun,
    /// The bias corrections AdamW reads, rewritten before each step.
    corrections: B::T,
    steps: Steps<B>,
    /// The last step's losses on their way back ([`step_ahead`](Self::step_ahead)).
    pending: Option<Pending>,
    /// Time spent in calls that landed no loss (the first `step_ahead`: the capture and every
    /// pipeline build), counted in the next step kept, as `step` counts it in the first.
    unlanded: Duration,
}

/// A recorded step whose losses are on their way back.
struct Pending {
    losses: std::pin::Pin<Box<dyn Future<Output = kiln_app::kiln::Result<Vec<f32>>>>>,
    /// The step's number, for the error that names a loss that is not finite.
    step: u32,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pending(step {})", self.step)
    }
}

/// How the steps run.
enum Steps<B: Backend> {
    /// Captured at the next step, where the path can.
    Capture,
    /// (Boxed: a trainer moves between the page's phases.)
    Replayed(Box<CapturedStep<B>>),
    /// Each recorded as it comes (a path that cannot capture, or asked not to).
    EachCall,
}

/// The captured step, and the inputs and losses its replays rewrite.
struct CapturedStep<B: Backend> {
    pass: B::Replay,
    inputs: Inputs<B::Ids>,
    losses: B::T,
}

impl<B: Backend> std::fmt::Debug for Steps<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Steps::Capture => "Capture",
            Steps::Replayed(_) => "Replayed",
            Steps::EachCall => "EachCall",
        })
    }
}

/// What one path did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PathRun {
    pub path: String,
    /// Mean loss of each step's batch (before the step's update).
    pub losses: Vec<f64>,
    /// Wall-clock time of each step: inputs uploaded, forward, backward, AdamW on every
    /// parameter, and the loss read back.
    pub step_ms: Vec<f64>,
}

impl PathRun {
    /// Median ms per step, leaving out the first step (pipeline builds, first allocations)
    /// when there are others.
    pub fn median_ms(&self) -> f64 {
        let mut t: Vec<f64> = if self.step_ms.len() > 1 {
            self.step_ms[1..].to_vec()
        } else {
            self.step_ms.clone()
        };
        t.sort_by(f64::total_cmp);
        match t.len() {
            0 => f64::NAN,
            n if n % 2 == 1 => t[n / 2],
            n => 0.5 * (t[n / 2 - 1] + t[n / 2]),
        }
    }

    pub fn total_s(&self) -> f64 {
        self.step_ms.iter().sum::<f64>() / 1e3
    }
}

impl<B: Backend> Trainer<B> {
    /// Puts `start` (fresh or from a checkpoint) on the path.
    pub fn new(backend: B, config: Config, hyper: Hyper, start: &State<Array>) -> Result<Self> {
        let state = model::upload(&backend, start)?;
        let path = backend.name();
        let corrections = backend.bias_corrections(&model::adamw(&hyper, state.step + 1))?;
        Ok(Trainer {
            backend,
            config,
            hyper,
            state,
            run: PathRun {
                path,
                ..Default::default()
            },
            corrections,
            steps: Steps::Capture,
            pending: None,
            unlanded: Duration::ZERO,
        })
    }

    /// Records every step as it comes rather than replaying a captured one (to measure what the
    /// capture saves; the two give the same numbers).
    pub fn each_call(mut self) -> Self {
        self.steps = Steps::EachCall;
        self
    }

    /// One step on the batch the corpus gives for this step number; returns its mean loss.
    pub async fn step(&mut self, corpus: &Corpus) -> Result<f64> {
        let start = Instant::now();
        if let Some(late) = self.pending.take() {
            self.land(late, start).await?;
        }
        let losses = self.record(corpus)?;
        let loss = model::mean(&self.backend.read(&losses).await?);
        self.backend.idle().await?;
        self.keep(loss, self.state.step, start)
    }

    /// One step whose loss is read a step late: the step is recorded and submitted with the
    /// read of its losses, then the loss of the step before it is awaited while this one runs.
    /// Returns that earlier loss (`None` at the first); [`finish`](Self::finish) gives the
    /// last. A loop of these keeps the GPU busy while each read comes back and the page draws,
    /// where [`step`](Self::step) leaves it idle for both. Each step's time is what its call
    /// took (recording, submitting, the wait), the page's own time between calls left out.
    pub async fn step_ahead(&mut self, corpus: &Corpus) -> Result<Option<f64>> {
        let start = Instant::now();
        let losses = self.record(corpus)?;
        let next = Pending {
            losses: Box::pin(self.backend.read(&losses)),
            step: self.state.step,
        };
        match self.pending.replace(next) {
            Some(late) => self.land(late, start).await.map(Some),
            None => {
                self.unlanded += start.elapsed();
                Ok(None)
            }
        }
    }

    /// The loss of the step [`step_ahead`](Self::step_ahead) left on its way back, if any.
    pub async fn finish(&mut self) -> Result<Option<f64>> {
        let start = Instant::now();
        match self.pending.take() {
            Some(late) => self.land(late, start).await.map(Some),
            None => Ok(None),
        }
    }

    /// Whether a step's loss is still on its way back.
    pub fn in_flight(&self) -> bool {
        self.pending.is_some()
    }

    async fn land(&mut self, late: Pending, start: Instant) -> Result<f64> {
        let loss = model::mean(&late.losses.await?);
        self.keep(loss, late.step, start)
    }

    /// Keeps a step's loss and time; a loss that is not finite ends the run.
    fn keep(&mut self, loss: f64, step: u32, start: Instant) -> Result<f64> {
        let spent = start.elapsed() + std::mem::take(&mut self.unlanded);
        self.run.step_ms.push(spent.as_secs_f64() * 1e3);
        if !loss.is_finite() {
            return Err(Error::Config(format!(
                "{}: the loss became {loss} at step {step}",
                self.run.path
            )));
        }
        self.run.losses.push(loss);
        Ok(loss)
    }

    /// Records one step on the batch the corpus gives for this step number (the inputs
    /// uploaded, forward, backward, AdamW on every parameter) and returns its per-row losses,
    /// still on the path: [`step`](Self::step) without the readback and the bookkeeping.
    pub fn record(&mut self, corpus: &Corpus) -> Result<B::T> {
        let (b, c) = (&self.backend, &self.config);
        let batch = corpus.batch(self.hyper.seed, u64::from(self.state.step), c.batch, c.seq);
        let h = model::adamw(&self.hyper, self.state.step + 1);
        b.set_bias_corrections(&mut self.corrections, &h)?;
        if let Steps::Replayed(r) = &self.steps {
            let CapturedStep {
                pass,
                inputs,
                losses,
            } = r.as_ref();
            // The positions are the same every step.
            b.write_ids(&inputs.tokens, &batch.inputs)?;
            b.write_ids(&inputs.targets, &batch.targets)?;
            b.replay(pass)?;
            self.state.step += 1;
            return Ok(losses.clone());
        }
        let inputs = Inputs::new(b, c, &batch.inputs, &batch.targets)?;
        let (hyper, state, corrections) = (&self.hyper, &mut self.state, &self.corrections);
        if let Steps::EachCall = self.steps {
            return model::step(b, c, hyper, state, &inputs, corrections);
        }
        // The first step: captured (the model's errors ride through the capture as a value),
        // then run by its first replay.
        let captured = b.capture(|| Ok(model::step(b, c, hyper, state, &inputs, corrections)))?;
        match captured {
            Some((pass, losses)) => {
                let losses = losses?;
                b.replay(&pass)?;
                self.steps = Steps::Replayed(Box::new(CapturedStep {
                    pass,
                    inputs,
                    losses: losses.clone(),
                }));
                Ok(losses)
            }
            None => {
                self.steps = Steps::EachCall;
                model::step(
                    b,
                    c,
                    &self.hyper,
                    &mut self.state,
                    &inputs,
                    &self.corrections,
                )
            }
        }
    }

    /// The state read back from the path.
    pub async fn download(&self) -> Result<State<Array>> {
        model::download(&self.backend, &self.config, &self.state).await
    }
}

/// The two paths side by side.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub preset: String,
    pub config: Config,
    pub parameters: usize,
    pub data: String,
    pub steps: usize,
    /// The step the runs started from (0, or a checkpoint's).
    pub start_step: u32,
    pub gpu: PathRun,
    pub cpu: PathRun,
    pub gpu_median_ms_per_step: f64,
    /// The GPU's median with every step recorded as it comes rather than replayed, when asked.
    pub gpu_recorded_median_ms_per_step: Option<f64>,
    pub cpu_median_ms_per_step: f64,
    pub gpu_total_s: f64,
    pub cpu_total_s: f64,
    /// CPU median ms per step over the GPU's.
    pub speedup: f64,
    /// |loss_gpu − loss_cpu| / loss_cpu at the last step.
    pub drift: f64,
    /// Global memory one layer's attention moves per step (forward + backward), by kiln's byte
    /// model: what the flash kernels move, what the naive path would.
    pub attention_traffic: Traffic,
    pub clock: &'static str,
    /// One GPU step as the device sees it (after warm-up): submissions, launches and objects
    /// created, GPU time from timestamps, and that time by kernel family.
    pub gpu_step: Option<kiln_app::kiln::bench::UnitProfile>,
    /// What the host spends issuing one GPU step (recording, then encoding and submitting).
    pub gpu_host: Option<kiln_app::kiln::bench::HostCost>,
}

/// Attention traffic of one layer per step, in MB.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Traffic {
    pub flash_mb: f64,
    pub naive_mb: f64,
    /// One B·H·T² matrix of f32 scores: the naive path writes and reads several.
    pub score_matrix_mb: f64,
}

impl Traffic {
    pub fn of(c: &Config) -> Traffic {
        use kiln_app::kiln::DType;
        use kiln_app::kiln::ops::attention::traffic;
        let q = [c.batch, c.heads, c.seq, c.head_dim()];
        let kv = [c.batch, c.kv_heads, c.seq, c.head_dim()];
        match kiln_app::kiln::shape::AttentionDims::grouped("traffic", &q, &kv, &kv) {
            Ok(d) => {
                let mb =
                    |p| traffic::total(&traffic::traffic(&d, DType::F32, p, true)) as f64 / 1e6;
                Traffic {
                    flash_mb: mb(traffic::Path::Flash),
                    naive_mb: mb(traffic::Path::Naive),
                    score_matrix_mb: traffic::score_matrix_bytes(&d, DType::F32) as f64 / 1e6,
                }
            }
            Err(_) => Traffic {
                flash_mb: f64::NAN,
                naive_mb: f64::NAN,
                score_matrix_mb: f64::NAN,
            },
        }
    }
}

impl Comparison {
    pub fn new(
        preset: &str,
        config: Config,
        data: &str,
        start_step: u32,
        gpu: PathRun,
        cpu: PathRun,
    ) -> Comparison {
        let drift = match (gpu.losses.last(), cpu.losses.last()) {
            (Some(g), Some(c)) => (g - c).abs() / c,
            _ => f64::NAN,
        };
        Comparison {
            preset: preset.to_string(),
            parameters: config.parameters(),
            config,
            data: data.to_string(),
            steps: gpu.losses.len().min(cpu.losses.len()),
            start_step,
            gpu_median_ms_per_step: gpu.median_ms(),
            gpu_recorded_median_ms_per_step: None,
            cpu_median_ms_per_step: cpu.median_ms(),
            gpu_total_s: gpu.total_s(),
            cpu_total_s: cpu.total_s(),
            speedup: cpu.median_ms() / gpu.median_ms(),
            drift,
            attention_traffic: Traffic::of(&config),
            gpu,
            cpu,
            clock: "wall clock per step (upload, forward, backward, AdamW, loss read back)",
            gpu_step: None,
            gpu_host: None,
        }
    }
}
