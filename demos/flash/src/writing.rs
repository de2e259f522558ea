//! Generation in the window: after training, `g` starts a prompt, typed keys extend it and
//! Enter runs it — the GPU path a token per frame (the prompt through flash attention, then
//! flash-decoding against its key/value cache), then the CPU path with its own cache — and the
//! texts and tokens per second are drawn under the training.

use crate::backend::{CpuBackend, GpuBackend};
use crate::chart::{self, Canvas};
use crate::data::Corpus;
use crate::error::Result;
use crate::generate::{self, Generation, Generator, Sampling};
use crate::train::Trainer;

/// Tokens each path writes.
pub const TOKENS: usize = 60;
/// The likeliest token each step, so that the two paths' texts can be compared.
const GREEDY: Sampling = Sampling {
    temperature: 0.0,
    seed: 1,
};

/// The model a training run left, on both paths.
#[derive(Debug)]
pub struct Trained {
    pub gpu: Trainer<GpuBackend>,
    pub cpu: Trainer<CpuBackend>,
}

/// A generation under way: the GPU path's, then the CPU path's after the GPU's result.
#[derive(Debug)]
pub enum Run {
    Gpu(Generator<GpuBackend>),
    Cpu(Generation, Generator<CpuBackend>),
    Done(Generation, Generation),
}

/// One piece of work: starts the next path's generator, or picks a token and feeds it.
pub async fn step(t: &Trained, run: Option<Run>, ids: &[u32]) -> Result<Run> {
    let (g, c) = (&t.gpu, &t.cpu);
    Ok(match run {
        None => {
            let run = Generator::start(&g.backend, &g.config, &g.state.params, ids, GREEDY).await?;
            Run::Gpu(run.advances(TOKENS - 1))
        }
        Some(Run::Gpu(mut run)) if run.generation().tokens.len() < TOKENS => {
            run.pick();
            if run.generation().tokens.len() < TOKENS {
                run.advance(&g.backend, &g.config, &g.state.params).await?;
            }
            Run::Gpu(run)
        }
        Some(Run::Gpu(run)) => {
            let cpu = Generator::start(&c.backend, &c.config, &c.state.params, ids, GREEDY).await?;
            Run::Cpu(run.into_generation(), cpu)
        }
        Some(Run::Cpu(done, mut run)) if run.generation().tokens.len() < TOKENS => {
            run.pick();
            if run.generation().tokens.len() < TOKENS {
                run.advance(&c.backend, &c.config, &c.state.params).await?;
            }
            Run::Cpu(done, run)
        }
        Some(Run::Cpu(done, run)) => Run::Done(done, run.into_generation()),
        Some(done @ Run::Done(..)) => done,
    })
}

/// The prompt, the run and what to draw of them.
#[derive(Debug, Default)]
pub struct Writing {
    prompt: String,
    typing: bool,
    ids: Vec<u32>,
    run: Option<Run>,
    /// A run is under way (its work is handed out a piece per frame).
    running: bool,
    error: Option<String>,
}

impl Writing {
    /// A key press; returns whether it was generation's. `g` starts a prompt once a model is
    /// trained (`trained`); while typing, characters, space and backspace edit it, Enter runs it
    /// (a character outside `corpus`'s vocabulary is refused, naming it) and Tab leaves it.
    pub fn key(&mut self, key: &str, trained: bool, corpus: &Corpus) -> bool {
        if !self.typing {
            if key == "g" && trained && !self.running {
                self.typing = true;
                self.error = None;
                return true;
            }
            return false;
        }
        match key {
            "enter" => match corpus.encode(&self.prompt) {
                Ok(ids) => {
                    self.ids = ids;
                    self.typing = false;
                    self.run = None;
                    self.running = true;
                    self.error = None;
                }
                Err(e) => self.error = Some(e.to_string()),
            },
            "backspace" => {
                self.prompt.pop();
            }
            "space" => self.prompt.push(' '),
            "tab" => self.typing = false,
            k if k.chars().count() == 1 => self.prompt.push_str(k),
            _ => {}
        }
        true
    }

    /// Whether a key belongs to the prompt (the page's own keys wait until Enter or Tab).
    pub fn typing(&self) -> bool {
        self.typing
    }

    /// The next piece of work, when a run is under way: the run so far and the prompt's ids.
    pub fn job(&mut self) -> Option<(Option<Run>, Vec<u32>)> {
        self.running.then(|| (self.run.take(), self.ids.clone()))
    }

    /// A piece of work came back.
    pub fn finish(&mut self, r: Result<Run>) {
        match r {
            Ok(run) => {
                self.running = !matches!(run, Run::Done(..));
                self.run = Some(run);
            }
            Err(e) => {
                self.running = false;
                self.error = Some(e.to_string());
            }
        }
    }

    /// The prompt line, each path's text and rate, in a column at (x, y) of width `w`.
    pub fn draw(&self, c: &mut Canvas, (x, y, w): (usize, usize, usize), corpus: &Corpus) {
        let prompt = if self.typing {
            format!(
                "prompt: {}_   (Enter: {TOKENS} tokens on each path, Tab: leave)",
                self.prompt
            )
        } else if self.prompt.is_empty() && self.run.is_none() {
            "g: type a prompt for the trained model".to_string()
        } else {
            format!("prompt: {}", self.prompt)
        };
        c.text(x, y, &prompt, chart::TEXT, 1);
        let (gpu, cpu) = match &self.run {
            None => (None, None),
            Some(Run::Gpu(g)) => (Some(g.generation()), None),
            Some(Run::Cpu(done, g)) => (Some(done), Some(g.generation())),
            Some(Run::Done(a, b)) => (Some(a), Some(b)),
        };
        // One line of text per path, cut to the column (about 6 px per character at size 1).
        let width = (w / 6).saturating_sub(20).max(10);
        for (i, (name, run, colour)) in [("GPU", gpu, chart::GPU), ("CPU", cpu, chart::CPU)]
            .into_iter()
            .enumerate()
        {
            let Some(run) = run else { continue };
            let text: String = format!("{}{}", self.prompt, corpus.decode(&run.tokens))
                .replace('\n', " / ")
                .chars()
                .take(width)
                .collect();
            let rate = if run.passes > 0 {
                format!("{:.0} tokens/s", run.tokens_per_s())
            } else {
                "prompt pass".to_string()
            };
            c.text(
                x,
                y + 18 + 16 * i,
                &format!("{name} ({rate}): {text}"),
                colour,
                1,
            );
        }
        let line = y + 54;
        if let Some(e) = &self.error {
            c.text(x, line, &format!("generation: {e}"), [250, 110, 110], 1);
        } else if let Some(Run::Done(a, b)) = &self.run {
            let verdict = match generate::first_divergence(a, b) {
                None => format!("the same {} tokens", a.tokens.len()),
                Some(d) => format!(
                    "they part at token {} ({})",
                    d.step + 1,
                    if d.explained() {
                        "a near-tie"
                    } else {
                        "more than rounding"
                    }
                ),
            };
            let (gpu, cpu) = (a.tokens_per_s(), b.tokens_per_s());
            let rates = if gpu >= cpu {
                format!(
                    "GPU {:.1}x the CPU path's tokens/s",
                    gpu / cpu.max(f64::MIN_POSITIVE)
                )
            } else {
                format!(
                    "the CPU path {:.1}x the GPU's tokens/s on this adapter",
                    cpu / gpu.max(f64::MIN_POSITIVE)
                )
            };
            c.text(x, line, &format!("{rates}; {verdict}"), chart::TEXT, 1);
        }
    }
}
