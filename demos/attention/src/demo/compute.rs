//! Running the forward pass: the current text tokenised and run on the GPU path or the CPU
//! path, its attention weights (and, in presenter mode, the walkthrough's tensors) left in the
//! demo's slot; and the kernels that pass launches.

use kiln_app::kiln::{self, Choice};
use kiln_app::talk::Target;

use web_time::Instant;

use super::state::{Attention, Computed, LONG_TEXT, Pass, Pending};
use crate::stages::kernel_choices;
use crate::walkthrough::Trace;

impl Attention {
    /// Tokenises the text and runs the forward pass on the current path (a long text on the
    /// path measured faster, unless the visitor chose the GPU path).
    pub(super) fn recompute(&mut self) {
        self.tokens = match self.loaded.encode(&self.text) {
            Ok(t) => t,
            Err(e) => {
                self.error = Some(e.to_string());
                return;
            }
        };
        // A long text on a device whose CPU path measured faster: the CPU path, saying why.
        if self.on_gpu
            && !self.chose_gpu
            && self.cpu_faster.is_some()
            && self.tokens.ids.len() >= LONG_TEXT
        {
            self.on_gpu = false;
            self.auto_cpu = true;
        }
        self.pass += 1;
        let (slot, pass) = (self.slot.clone(), self.pass);
        let tokens = self.tokens.tokens.clone();
        // Only presenter mode draws the intermediate tensors: read them back only there.
        let traced = self.stage.map(|_| self.layer);
        let path = if self.on_gpu { "GPU" } else { "CPU" };
        let since = Instant::now();
        self.pending = Some(Pending {
            since,
            tokens: tokens.len(),
            path,
        });
        self.publish_forward();
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
                    let r = r.await.map_err(|e| e.to_string());
                    *slot.borrow_mut() = Some((pass, r));
                }),
                Err(e) => *slot.borrow_mut() = Some((pass, Err(e.to_string()))),
            }
        } else {
            let r = self.loaded.cpu_forward(&self.tokens.ids).map(|f| Computed {
                tokens,
                trace: traced.and_then(|layer| Trace::from_cpu(&f, layer)),
                probs: f.probs.into_iter().map(|p| p.data).collect(),
                path: "CPU",
            });
            *slot.borrow_mut() = Some((pass, r.map_err(|e| e.to_string())));
        }
    }

    /// The pass's result has arrived (`ok`: computed): the pass is no longer pending, and its
    /// time is the estimate for the next.
    pub(super) fn finished(&mut self, ok: bool) {
        if let Some(p) = self.pending.take()
            && ok
        {
            self.last_pass = Some(Pass {
                ms: p.since.elapsed().as_secs_f64() * 1e3,
                tokens: p.tokens,
                path: p.path,
            });
        }
        self.publish_forward();
    }

    /// Tells the page whether a forward pass is under way (`kiln:forward`): its path, tokens,
    /// and the estimate, so that it can offer to stop a long one.
    pub(super) fn publish_forward(&self) {
        let json = match &self.pending {
            Some(p) => serde_json::json!({
                "running": true, "path": p.path, "tokens": p.tokens,
                "estimate_s": self.estimate_ms(p).map(|ms| ms / 1e3),
                "cpu_faster": self.cpu_faster.is_some(),
            }),
            None => serde_json::json!({"running": false}),
        };
        kiln_app::publish("forward", &json.to_string());
    }

    /// How long pass `p` takes in all, from the last finished pass on the same path, scaled by
    /// the token count (the products grow with it; attention's scores grow faster, so this is
    /// a low estimate for a much longer text).
    pub(super) fn estimate_ms(&self, p: &Pending) -> Option<f64> {
        let last = self
            .last_pass
            .filter(|l| l.path == p.path && l.tokens > 0)?;
        Some(last.ms * p.tokens as f64 / last.tokens as f64)
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
