//! Drawing the demo's frame: the heatmap of the head and layer in view (with the weight under
//! the pointer), or in presenter mode the walkthrough stage's visual.

use kiln_app::kiln;

use super::state::Attention;
use crate::captions::view_notes;
use crate::heatmap;
use crate::tokenizer::Tokens;
use crate::walkthrough::{self, Scene};

impl Attention {
    /// Draws presenter mode's frame: the stage's visual at the current highlight step.
    pub(super) fn draw_stage(&mut self, stage: usize) -> kiln::Result<()> {
        let c = &self.loaded.model.config;
        // A result for an earlier text (a recompute is on its way) would put these labels on
        // another sentence's tensors: draw it only when it is for this text.
        let shown = self
            .shown
            .as_ref()
            .filter(|c| c.tokens == self.tokens.tokens);
        let scene = Scene {
            text: &self.text,
            tokens: &self.tokens.tokens,
            ids: &self.tokens.ids,
            trace: shown.and_then(|c| c.trace.as_ref()),
            layers: c.num_hidden_layers,
            head: self.head,
            vocab: c.vocab_size,
            hidden: c.hidden_size,
            path: shown.map_or(if self.on_gpu { "GPU" } else { "CPU" }, |c| c.path),
            synthetic: self.loaded.model.synthetic,
            time: self.clock,
        };
        let img = walkthrough::draw(stage, &scene);
        // The page's test reads every text's box and size on the stage.
        kiln_app::publish("texts", &img.texts_json(Some(stage)));
        self.talk_pixels.write_u32(&img.pixels)
    }

    /// The weight under the pointer, in words.
    pub(super) fn selected_weight(&self) -> Option<String> {
        let c = self.shown.as_ref()?;
        let (i, j) = self.selected?;
        let n = c.tokens.len();
        let w = c.probs.get(self.layer)?.get((self.head * n + i) * n + j)?;
        Some(format!(
            "weight '{}' -> '{}': {w:.4}",
            c.tokens[i], c.tokens[j]
        ))
    }

    /// Draws the heatmap of the head and layer in view, with its title and notes.
    pub(super) fn draw(&mut self) -> kiln::Result<()> {
        let model = &self.loaded.model;
        let empty = Vec::new();
        let (tokens, head, title, notes) = match &self.shown {
            Some(c) => {
                let n = c.tokens.len();
                let layer = c.probs.get(self.layer).map(Vec::as_slice).unwrap_or(&[]);
                let head = layer
                    .get(self.head * n * n..(self.head + 1) * n * n)
                    .unwrap_or(&[]);
                let title = format!(
                    "layer {} of {}, head {} of {}",
                    self.layer + 1,
                    self.layers(),
                    self.head + 1,
                    self.heads(),
                );
                // The cut is the current text's; the shown tokens may be an earlier text's.
                let current = c.tokens == self.tokens.tokens;
                let shown = Tokens {
                    tokens: c.tokens.clone(),
                    ids: Vec::new(),
                    full: if current { self.tokens.full } else { n },
                    counted_all: !current || self.tokens.counted_all,
                };
                (&c.tokens, head, title, view_notes(c.path, &shown, model))
            }
            None => (&empty, &[][..], "computing…".to_string(), Vec::new()),
        };
        let (img, labels) = heatmap::view(&heatmap::View {
            tokens,
            weights: head,
            title: &title,
            notes: &notes,
            selected: self.selected,
        });
        // The page's test reads how the labels were drawn (their size, which tokens, where).
        kiln_app::publish(
            "labels",
            &serde_json::to_string(&labels).unwrap_or_default(),
        );
        self.pixels.write_u32(&img.pixels)
    }
}
