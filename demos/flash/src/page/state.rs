//! What the page holds: the sweep's points, the training phase, the background job's slot,
//! presenter mode's scene and generation; and the fixed settings it runs with.

use std::cell::RefCell;
use std::rc::Rc;

use kiln_app::kiln::{DType, Gpu, Tensor};

use crate::backend::{CpuBackend, GpuBackend};
use crate::error::Result;
use crate::preset::Preset;
use crate::run::Setup;
use crate::sweep::{self, FlashChoices, Point, Shape};
use crate::train::{Comparison, Trainer};
use crate::visual::Scene;
use crate::writing::{Run, Trained, Writing};

pub(super) const WIDTH: usize = 1600;
pub(super) const HEIGHT: usize = 900;
/// Training steps per path on the page.
pub(super) const PAGE_STEPS: usize = 30;
/// The shape the page and `flash --bench` sweep (in f32; the browser's page in f16 where its
/// adapter has shader-f16, [`page_shape`]).
pub const SHAPE: Shape = Shape {
    batch: 1,
    heads: 8,
    head_dim: 64,
    dtype: DType::F32,
};

/// The shape the browser's page sweeps: [`SHAPE`] in f16 where the adapter has shader-f16 (most
/// laptops' browsers), else in f32.
pub fn page_shape(gpu: &Gpu) -> Shape {
    let f16 = gpu.profile().features.shader_f16;
    SHAPE.in_dtype(if f16 { DType::F16 } else { DType::F32 })
}

/// The sequence lengths swept: shorter on a software adapter.
pub fn sweep_lengths(gpu: &Gpu) -> Vec<usize> {
    if gpu.profile().is_software() {
        vec![64, 128, 256]
    } else {
        vec![128, 256, 512, 1024, 2048]
    }
}

/// The lengths presenter mode sweeps: on a software adapter only the two shortest, as every
/// point holds the window's frames while it runs.
pub(super) fn talk_lengths(gpu: &Gpu) -> Vec<usize> {
    let mut lengths = sweep_lengths(gpu);
    if gpu.profile().is_software() {
        lengths.truncate(2);
    }
    lengths
}

pub(super) enum Phase {
    Idle,
    Gpu(Trainer<GpuBackend>),
    /// The CPU path training, the GPU path's trainer kept for generation.
    Cpu(Trainer<CpuBackend>, Trainer<GpuBackend>),
    Done(Comparison),
}

/// What a finished background job hands back.
pub(super) enum Returned {
    Point(Result<sweep::Sweep>),
    /// A GPU step read a step late: the loss that came back, if one did.
    Gpu(Trainer<GpuBackend>, Result<Option<f64>>),
    Cpu(Trainer<CpuBackend>, Trainer<GpuBackend>, Result<f64>),
    Wrote(Box<Trained>, Result<Run>),
}

pub struct FlashPage {
    pub(super) gpu: Gpu,
    pub(super) preset: Preset,
    pub(super) setup: Rc<Setup>,
    pub(super) lengths: Vec<usize>,
    pub(super) points: Vec<Point>,
    pub(super) variants: Vec<String>,
    pub(super) phase: Phase,
    pub(super) slot: Rc<RefCell<Option<Returned>>>,
    pub(super) busy: bool,
    pub(super) error: Option<String>,
    pub(super) pixels: Tensor,
    /// Presenter mode: the walkthrough's visuals instead of the page, and no training.
    pub(super) talk: Option<Talk>,
    /// The flash path's variants at the sweep's longest length (the kernel-source view).
    pub(super) choices: Option<FlashChoices>,
    /// The last training run's model (out while a piece of generation runs), and generation.
    pub(super) trained: Option<Box<Trained>>,
    pub(super) writing: Writing,
}

/// Presenter mode's state.
pub(super) struct Talk {
    pub(super) scene: Scene,
    /// The stage shown (0-based) and the seconds since it was.
    pub(super) stage: usize,
    pub(super) clock: f64,
    pub(super) pixels: Tensor,
}

impl std::fmt::Debug for FlashPage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlashPage")
            .field("preset", &self.preset)
            .finish()
    }
}
