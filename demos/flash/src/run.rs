//! Setting up a training comparison (corpus, preset, start state) and running it natively:
//! `flash --bench` and `flash train`.

use kiln_app::kiln::{Gpu, bench};

use crate::backend::{CpuBackend, GpuBackend};
use crate::checkpoint::{self, Header};
use crate::data::Corpus;
use crate::error::{Error, Result};
use crate::model::State;
use crate::preset::{Config, Hyper, Preset};
use crate::train::{Comparison, Trainer};

/// Lines of the generated corpus: about 100k tokens.
pub const SYNTHETIC_LINES: usize = 4000;

/// What a run starts from.
#[derive(Debug)]
pub struct Setup {
    pub preset: Preset,
    pub config: Config,
    pub hyper: Hyper,
    pub corpus: Corpus,
    pub start: State<kiln_app::kiln::cpu::Array>,
}

impl Setup {
    /// The corpus (the file, else the generated one), the preset's shape for it, and the start
    /// state: fresh from the seed, or a checkpoint that must match both.
    pub fn new(preset: Preset, data: Option<&str>, resume: Option<&str>) -> Result<Setup> {
        let hyper = Hyper::default();
        let corpus = match data {
            Some(path) => Corpus::from_file(path)?,
            None => Corpus::synthetic(hyper.seed, SYNTHETIC_LINES),
        };
        let config = preset.config(corpus.vocab());
        config.check()?;
        corpus.check(config.seq)?;
        let start = match resume {
            None => State::new(&config, hyper.seed)?,
            Some(path) => {
                let (header, state) = checkpoint::load(path)?;
                let alphabet: String = corpus.alphabet.iter().collect();
                let mismatch = |what: String| Error::Checkpoint {
                    path: path.to_string(),
                    detail: what,
                };
                if header.config != config {
                    return Err(mismatch(format!(
                        "made for {:?}, this run is {} with {:?}",
                        header.config,
                        preset.name(),
                        config
                    )));
                }
                if header.alphabet != alphabet {
                    return Err(mismatch(
                        "its vocabulary differs from this run's data".into(),
                    ));
                }
                state
            }
        };
        Ok(Setup {
            preset,
            config,
            hyper,
            corpus,
            start,
        })
    }

    pub fn header(&self, step: u32) -> Header {
        Header {
            preset: self.preset.name().into(),
            config: self.config,
            hyper: self.hyper,
            step,
            alphabet: self.corpus.alphabet.iter().collect(),
            data: self.corpus.source.clone(),
            tensors: crate::model::layout(&self.config),
        }
    }
}

/// Trains `steps` steps on the GPU (the first captured, the rest replayed), then the same steps
/// on the CPU path from the same start, printing progress to stderr; saves the GPU's state to
/// `save` when given. With `each_call` the GPU also trains the same steps recording each as it
/// comes, for the comparison's `gpu_recorded_median_ms_per_step`.
pub async fn compare(
    gpu: &Gpu,
    setup: &Setup,
    steps: usize,
    cpu: CpuBackend,
    save: Option<&str>,
    each_call: bool,
) -> Result<Comparison> {
    // A throwaway trainer brings the GPU's clocks up and shows what a step asks of the device
    // (its buffers go back to the pool, where the real run finds them); the real run then
    // starts warm, from the same start as the CPU path.
    let (profile, host) = {
        let mut warm = Trainer::new(
            GpuBackend { gpu: gpu.clone() },
            setup.config,
            setup.hyper,
            &setup.start,
        )?;
        let corpus = &setup.corpus;
        bench::warm_up_clocks(gpu, 500.0).await?;
        let budget = bench::warm_up_budget_ms(gpu, 2000.0);
        bench::warm_up(async || warm.step(corpus).await.map(|_| ()), budget).await?;
        let runs = if gpu.profile().is_software() { 2 } else { 10 };
        let profile =
            bench::profile_unit(gpu, async || warm.step(corpus).await.map(|_| ()), runs).await?;
        (profile, host_cost(gpu, &mut warm, corpus, runs).await?)
    };
    let mut g = Trainer::new(
        GpuBackend { gpu: gpu.clone() },
        setup.config,
        setup.hyper,
        &setup.start,
    )?;
    bench::warm_up_clocks(gpu, 300.0).await?;
    train_steps(&mut g, &setup.corpus, steps).await?;
    if let Some(path) = save {
        let state = g.download().await?;
        checkpoint::save(path, &setup.header(state.step), &state)?;
        eprintln!("  saved {path} (step {})", state.step);
    }
    let recorded = if each_call {
        let b = GpuBackend { gpu: gpu.clone() };
        let mut r = Trainer::new(b, setup.config, setup.hyper, &setup.start)?.each_call();
        bench::warm_up_clocks(gpu, 300.0).await?;
        train_steps(&mut r, &setup.corpus, steps).await?;
        if r.run.losses != g.run.losses {
            return Err(crate::error::Error::Config(
                "the GPU's replayed and recorded steps gave different losses".into(),
            ));
        }
        Some(r.run.median_ms())
    } else {
        None
    };
    let mut c = Trainer::new(cpu, setup.config, setup.hyper, &setup.start)?;
    train_steps(&mut c, &setup.corpus, steps).await?;
    let mut comparison = Comparison::new(
        setup.preset.name(),
        setup.config,
        &setup.corpus.source,
        setup.start.step,
        g.run,
        c.run,
    );
    comparison.gpu_step = Some(profile);
    comparison.gpu_recorded_median_ms_per_step = recorded;
    comparison.gpu_host = host;
    Ok(comparison)
}

/// Where the host's time for a GPU step goes: recording it, then encoding and submitting it
/// (medians of `runs` steps of the throwaway trainer).
async fn host_cost(
    gpu: &Gpu,
    t: &mut Trainer<GpuBackend>,
    corpus: &Corpus,
    runs: usize,
) -> Result<Option<bench::HostCost>> {
    let backend = t.backend.clone();
    let runs = bench::host_runs(
        gpu,
        runs,
        || t.record(corpus),
        async |losses| {
            crate::backend::Backend::read(&backend, &losses).await?;
            Ok(())
        },
    )
    .await?;
    Ok(runs.cost())
}

/// `steps` steps on one path, a progress line on stderr every tenth of the run.
async fn train_steps<B: crate::backend::Backend>(
    t: &mut Trainer<B>,
    corpus: &Corpus,
    steps: usize,
) -> Result<()> {
    let every = (steps / 10).max(1);
    for s in 0..steps {
        let loss = t.step(corpus).await?;
        if (s + 1) % every == 0 || s + 1 == steps {
            eprintln!(
                "  {} step {}/{steps}: loss {loss:.4}, {:.1} ms",
                t.run.path,
                s + 1,
                t.run.step_ms.last().copied().unwrap_or(0.0)
            );
        }
    }
    Ok(())
}
