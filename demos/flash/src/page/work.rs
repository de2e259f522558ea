//! The page's background work, a piece per frame so the progress shows: the sweep's next
//! length, the next training step on the GPU path then the CPU path, then generation.

use std::rc::Rc;

use super::state::{FlashPage, PAGE_STEPS, Phase, Returned, SHAPE};
use crate::backend::{CpuBackend, GpuBackend};
use crate::error::Result;
use crate::preset::Preset;
use crate::run::Setup;
use crate::sweep;
use crate::train::{Comparison, Trainer};
use crate::writing::{self, Trained, Writing};

impl FlashPage {
    pub(super) fn start_training(&mut self) -> Result<()> {
        let s = &self.setup;
        let t = Trainer::new(
            GpuBackend {
                gpu: self.gpu.clone(),
            },
            s.config,
            s.hyper,
            &s.start,
        )?;
        self.phase = Phase::Gpu(t);
        // A new run: the last one's model and its generation go.
        self.trained = None;
        self.writing = Writing::default();
        Ok(())
    }

    pub(super) fn set_preset(&mut self, preset: Preset) -> Result<()> {
        self.preset = preset;
        self.setup = Rc::new(Setup::new(preset, None, None)?);
        self.start_training()
    }

    /// Starts the next piece of work in the background (at once natively).
    pub(super) fn advance(&mut self) {
        if self.busy {
            return;
        }
        let sweeping = self.points.len() < self.lengths.len();
        if self.talk.is_some() && !sweeping {
            return; // the walkthrough shows the sweep, not the training
        }
        let slot = self.slot.clone();
        let setup = self.setup.clone();
        if sweeping {
            let (gpu, n) = (self.gpu.clone(), self.lengths[self.points.len()]);
            self.busy = true;
            kiln_app::spawn(async move {
                let r = sweep::run(&gpu, SHAPE, &[n], 3, 20_000.0).await;
                *slot.borrow_mut() = Some(Returned::Point(r));
            });
            return;
        }
        match std::mem::replace(&mut self.phase, Phase::Idle) {
            // The GPU's steps read their losses a step late (`Trainer::step_ahead`): the next
            // step runs while the last one's loss comes back and the page draws.
            Phase::Gpu(mut t) if t.run.losses.len() + usize::from(t.in_flight()) < PAGE_STEPS => {
                self.busy = true;
                kiln_app::spawn(async move {
                    let r = t.step_ahead(&setup.corpus).await;
                    *slot.borrow_mut() = Some(Returned::Gpu(t, r));
                });
            }
            Phase::Gpu(mut t) if t.in_flight() => {
                self.busy = true;
                kiln_app::spawn(async move {
                    let r = t.finish().await;
                    *slot.borrow_mut() = Some(Returned::Gpu(t, r));
                });
            }
            Phase::Gpu(t) => {
                let cpu = CpuBackend::all_cores();
                match Trainer::new(cpu, setup.config, setup.hyper, &setup.start) {
                    Ok(c) => self.phase = Phase::Cpu(c, t),
                    Err(e) => self.error = Some(e.to_string()),
                }
            }
            Phase::Cpu(mut t, gpu) if t.run.losses.len() < PAGE_STEPS => {
                self.busy = true;
                kiln_app::spawn(async move {
                    let r = t.step(&setup.corpus).await;
                    *slot.borrow_mut() = Some(Returned::Cpu(t, gpu, r));
                });
            }
            Phase::Cpu(t, gpu) => {
                self.phase = Phase::Done(Comparison::new(
                    self.preset.name(),
                    setup.config,
                    &setup.corpus.source,
                    0,
                    gpu.run.clone(),
                    t.run.clone(),
                ));
                self.trained = Some(Box::new(Trained { gpu, cpu: t }));
                self.writing = Writing::default();
            }
            other => self.phase = other,
        }
        if self.busy {
            return;
        }
        // Generation: a piece of work per frame, the model handed to it and back.
        if let Some(trained) = self.trained.take() {
            match self.writing.job() {
                Some((run, ids)) => {
                    self.busy = true;
                    let slot = self.slot.clone();
                    kiln_app::spawn(async move {
                        let r = writing::step(&trained, run, &ids).await;
                        *slot.borrow_mut() = Some(Returned::Wrote(trained, r));
                    });
                }
                None => self.trained = Some(trained),
            }
        }
    }

    pub(super) fn collect(&mut self) -> bool {
        let Some(r) = self.slot.borrow_mut().take() else {
            return false;
        };
        self.busy = false;
        let fail = |e: crate::Error, error: &mut Option<String>| *error = Some(e.to_string());
        match r {
            Returned::Point(Ok(s)) => {
                self.points.extend(s.points);
                self.variants = s.flash_variants;
            }
            Returned::Point(Err(e)) => {
                fail(e, &mut self.error);
                // Stop sweeping; the training still runs.
                self.lengths.truncate(self.points.len());
            }
            Returned::Gpu(t, r) => match r {
                Ok(_) => self.phase = Phase::Gpu(t),
                Err(e) => fail(e, &mut self.error),
            },
            Returned::Cpu(t, g, r) => match r {
                Ok(_) => self.phase = Phase::Cpu(t, g),
                Err(e) => fail(e, &mut self.error),
            },
            Returned::Wrote(t, r) => {
                self.trained = Some(t);
                self.writing.finish(r);
            }
        }
        true
    }
}
