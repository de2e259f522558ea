//! The tensors of one layer's forward pass that the walkthrough draws, kept on the CPU whichever
//! path computed them.

use kiln_app::kiln::cpu::Array;
use kiln_app::kiln::{self, Tensor};

use crate::encoder::{Acts, Forward};

/// The tensors of one forward pass the walkthrough draws, on the CPU, for one layer.
#[derive(Clone, Debug)]
pub struct Trace {
    /// The layer the activations are from (0-based).
    pub layer: usize,
    /// Word + position + type rows, [N, D].
    pub embedded: Array,
    /// Their layernorm, [N, D]: the first layer's input.
    pub embedded_ln: Array,
    /// The layer's input, [N, D].
    pub input: Array,
    pub acts: Acts<Array>,
}

impl Trace {
    /// The trace of `layer` from a CPU forward pass (`None` past the last layer).
    pub fn from_cpu(f: &Forward<Array>, layer: usize) -> Option<Trace> {
        Some(Trace {
            layer,
            embedded: f.embedded.clone(),
            embedded_ln: f.hidden.first()?.clone(),
            input: f.hidden.get(layer)?.clone(),
            acts: f.acts.get(layer)?.clone(),
        })
    }

    /// The trace of `layer` read back from a GPU forward pass.
    pub async fn read(f: &Forward<Tensor>, layer: usize) -> kiln::Result<Trace> {
        let missing = || kiln::Error::InvalidArgument {
            op: "walkthrough",
            detail: format!("layer {layer} is past the model's {} layers", f.acts.len()),
        };
        let s = f.acts.get(layer).ok_or_else(missing)?;
        Ok(Trace {
            layer,
            embedded: fetch(&f.embedded).await?,
            embedded_ln: fetch(f.hidden.first().ok_or_else(missing)?).await?,
            input: fetch(f.hidden.get(layer).ok_or_else(missing)?).await?,
            acts: Acts {
                q: fetch(&s.q).await?,
                k: fetch(&s.k).await?,
                v: fetch(&s.v).await?,
                scores: fetch(&s.scores).await?,
                probs: fetch(&s.probs).await?,
                mixed: fetch(&s.mixed).await?,
                attn: fetch(&s.attn).await?,
                sum: fetch(&s.sum).await?,
                normed: fetch(&s.normed).await?,
                out: fetch(&s.out).await?,
            },
        })
    }
}

async fn fetch(t: &Tensor) -> kiln::Result<Array> {
    Array::new(t.shape(), t.read().await?)
}
