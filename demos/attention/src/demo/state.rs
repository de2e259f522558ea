//! What the demo holds: the model, the text and its tokens, the head and layer in view, the
//! results of the latest forward pass and the frames they are drawn into.

use std::cell::RefCell;
use std::rc::Rc;

use kiln_app::kiln::{Gpu, Tensor};
use web_time::Instant;

use crate::load::Loaded;
use crate::tokenizer::Tokens;
use crate::walkthrough::Trace;

/// The attention weights of one text, from one path.
#[derive(Clone, Debug)]
pub(super) struct Computed {
    pub(super) tokens: Vec<String>,
    /// Per layer, [heads, N, N].
    pub(super) probs: Vec<Vec<f32>>,
    pub(super) path: &'static str,
    /// The walkthrough's tensors for the current layer (read only in presenter mode).
    pub(super) trace: Option<Trace>,
}

/// The forward pass's result, tagged with the pass it belongs to (`Attention::pass`): a pass
/// that was stopped or overtaken (the text or the path changed while a slow GPU worked) lands
/// here too, and is dropped.
pub(super) type Slot = Rc<RefCell<Option<(u64, Result<Computed, String>)>>>;

/// A forward pass under way (on the GPU its results arrive later): when it started, for how
/// many tokens, on which path.
#[derive(Clone, Copy, Debug)]
pub(super) struct Pending {
    pub(super) since: Instant,
    pub(super) tokens: usize,
    pub(super) path: &'static str,
}

/// A finished pass: how long it took (ms, wall clock), for how many tokens, on which path.
#[derive(Clone, Copy, Debug)]
pub(super) struct Pass {
    pub(super) ms: f64,
    pub(super) tokens: usize,
    pub(super) path: &'static str,
}

/// Texts at least this many tokens long run on the path measured faster, unless the visitor
/// chose the GPU path (Tab): a long text's forward on a software adapter takes minutes.
pub(super) const LONG_TEXT: usize = 64;

#[derive(Debug)]
pub struct Attention {
    pub(super) gpu: Gpu,
    pub(super) loaded: Rc<Loaded>,
    /// The page asked for f16 and the browser's adapter has no shader-f16: f32 instead.
    pub(super) f16_refused: bool,
    pub(super) text: String,
    pub(super) tokens: Tokens,
    pub(super) on_gpu: bool,
    pub(super) layer: usize,
    pub(super) head: usize,
    pub(super) selected: Option<(usize, usize)>,
    /// Filled when the path's results are on the CPU (the GPU readback is asynchronous in the
    /// browser); `shown` is what the heatmap draws.
    pub(super) slot: Slot,
    pub(super) shown: Option<Computed>,
    pub(super) error: Option<String>,
    pub(super) pixels: Tensor,
    pub(super) dirty: bool,
    /// Presenter mode: the walkthrough stage shown (0-based), its frame, the clock its
    /// highlights move with, and the highlight step last drawn.
    pub(super) stage: Option<usize>,
    pub(super) talk_pixels: Tensor,
    pub(super) clock: f32,
    pub(super) drawn_step: Option<u64>,
    /// The forward pass last started (each start counts one): only its result is shown.
    pub(super) pass: u64,
    /// The pass under way, if any, and the last one finished (its time gives the estimate).
    pub(super) pending: Option<Pending>,
    pub(super) last_pass: Option<Pass>,
    /// The uncapped rates measured for the current settings, when the CPU path was faster:
    /// (GPU, CPU) frames per second.
    pub(super) cpu_faster: Option<(f64, f64)>,
    /// The visitor chose the GPU path with Tab: a long text stays on it.
    pub(super) chose_gpu: bool,
    /// The current pass runs on the CPU path because the text is long and the CPU path was
    /// measured faster (not because the visitor pressed Tab).
    pub(super) auto_cpu: bool,
}

impl Attention {
    pub(super) fn layers(&self) -> usize {
        self.loaded.model.config.num_hidden_layers
    }

    pub(super) fn heads(&self) -> usize {
        self.loaded.model.config.num_attention_heads
    }
}
