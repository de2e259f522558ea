//! Running the forward pass: the current text tokenised and run on the GPU path or the CPU
//! path, its attention weights (and, in presenter mode, the walkthrough's tensors) left in the
//! demo's slot; and the kernels that pass launches.

use kiln_app::kiln::{self, Choice};
use kiln_app::talk::Target;

use super::state::{Attention, Computed};
use crate::stages::kernel_choices;
use crate::walkthrough::Trace;

impl Attention {
    /// Tokenises the text and runs the forward pass on the current path.
    pub(super) fn recompute(&mut self) {
        self.tokens = match self.loaded.encode(&self.text) {
            Ok(t) => t,
            Err(e) => {
                self.error = Some(e.to_string());
                return;
            }
        };
        let slot = self.slot.clone();
        let tokens = self.tokens.tokens.clone();
        // Only presenter mode draws the intermediate tensors: read them back only there.
        let traced = self.stage.map(|_| self.layer);
        if self.on_gpu {
            match self.loaded.gpu_forward(&self.gpu, &self.tokens.ids) {
                Ok(f) => kiln_app::spawn(async move {
                    let r = async {
                        let mut probs = Vec::with_capacity(f.probs.len());
                        for p in &f.probs {
                            probs.push(p.read().await?);
                        }
                        let trace = match traced {
                            Some(layer) => Some(Trace::read(&f, layer).await?),
                            None => None,
                        };
                        Ok::<_, kiln::Error>(Computed {
                            tokens,
                            probs,
                            path: "GPU",
                            trace,
                        })
                    };
                    *slot.borrow_mut() = Some(r.await.map_err(|e| e.to_string()));
                }),
                Err(e) => *slot.borrow_mut() = Some(Err(e.to_string())),
            }
        } else {
            let r = self.loaded.cpu_forward(&self.tokens.ids).map(|f| Computed {
                tokens,
                trace: traced.and_then(|layer| Trace::from_cpu(&f, layer)),
                probs: f.probs.into_iter().map(|p| p.data).collect(),
                path: "CPU",
            });
            *slot.borrow_mut() = Some(r.map_err(|e| e.to_string()));
        }
    }

    /// The kernels one forward pass runs for the current text, on this device.
    pub(super) fn choices(&self) -> kiln::Result<Vec<(&'static str, Choice)>> {
        kernel_choices(
            Target::Device(&self.gpu),
            &self.loaded.model,
            self.tokens.ids.len(),
        )
    }
}
