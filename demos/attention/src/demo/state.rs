//! What the demo holds: the model, the text and its tokens, the head and layer in view, the
//! results of the latest forward pass and the frames they are drawn into.

use std::cell::RefCell;
use std::rc::Rc;

use kiln_app::kiln::{Gpu, Tensor};

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

pub(super) type Slot = Rc<RefCell<Option<Result<Computed, String>>>>;

#[derive(Debug)]
pub struct Attention {
    pub(super) gpu: Gpu,
    pub(super) loaded: Rc<Loaded>,
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
}

impl Attention {
    pub(super) fn layers(&self) -> usize {
        self.loaded.model.config.num_hidden_layers
    }

    pub(super) fn heads(&self) -> usize {
        self.loaded.model.config.num_attention_heads
    }
}
