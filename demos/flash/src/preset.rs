//! The model shapes the demo trains: five presets with fixed sizes, so that every run of one
//! preset is the same work on every device.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// A decoder-only transformer's shape and its batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    /// Tokens in the vocabulary (set by the corpus).
    pub vocab: usize,
    pub d_model: usize,
    /// Query heads.
    pub heads: usize,
    /// Key/value heads, dividing `heads`: each serves `heads / kv_heads` query heads
    /// (grouped-query attention; equal to `heads` for plain multi-head). Checkpoints written
    /// before grouped heads lack it and read as 0, which the checkpoint reader makes `heads`.
    #[serde(default)]
    pub kv_heads: usize,
    pub layers: usize,
    /// Sequence length T (also the number of learned positions).
    pub seq: usize,
    /// Sequences per step B.
    pub batch: usize,
}

impl Config {
    pub fn head_dim(&self) -> usize {
        self.d_model / self.heads
    }

    /// Width of the fused query/key/value projection: (H + 2·Hkv)·d.
    pub fn qkv_width(&self) -> usize {
        (self.heads + 2 * self.kv_heads) * self.head_dim()
    }

    /// Hidden width of the MLP.
    pub fn mlp(&self) -> usize {
        4 * self.d_model
    }

    /// Rows of every activation matrix: B·T tokens.
    pub fn rows(&self) -> usize {
        self.batch * self.seq
    }

    /// Trainable parameters.
    pub fn parameters(&self) -> usize {
        let (c, v) = (self.d_model, self.vocab);
        let layer = c * self.qkv_width() + c * c + 2 * c * self.mlp() + 4 * c;
        v * c + self.seq * c + self.layers * layer + 2 * c + c * v
    }

    /// Bytes of the attention score matrix one layer would write and read again per step if it
    /// were materialised (f32): 2 · 4 · B·H·T².
    pub fn score_traffic_bytes(&self) -> u64 {
        2 * 4 * (self.batch * self.heads * self.seq * self.seq) as u64
    }

    /// Checks the shape before anything is allocated.
    pub fn check(&self) -> Result<()> {
        let positive = [
            self.vocab,
            self.d_model,
            self.heads,
            self.kv_heads,
            self.layers,
            self.seq,
            self.batch,
        ];
        if positive.contains(&0) {
            return Err(Error::Config(format!(
                "every size must be positive: {self:?}"
            )));
        }
        if !self.d_model.is_multiple_of(self.heads) {
            return Err(Error::Config(format!(
                "d_model {} does not split into {} heads",
                self.d_model, self.heads
            )));
        }
        if !self.heads.is_multiple_of(self.kv_heads) {
            return Err(Error::Config(format!(
                "{} key/value heads do not divide {} query heads",
                self.kv_heads, self.heads
            )));
        }
        Ok(())
    }
}

/// The named presets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    Small,
    Medium,
    Large,
    Mega,
    /// Grouped-query attention: 8 query heads over 2 key/value heads, 512 positions (the
    /// generation preset).
    Gqa,
}

impl Preset {
    pub const ALL: [Preset; 5] = [
        Preset::Small,
        Preset::Medium,
        Preset::Large,
        Preset::Mega,
        Preset::Gqa,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Preset::Small => "small",
            Preset::Medium => "medium",
            Preset::Large => "large",
            Preset::Mega => "mega",
            Preset::Gqa => "gqa",
        }
    }

    pub fn parse(s: &str) -> Result<Preset> {
        Preset::ALL
            .into_iter()
            .find(|p| p.name() == s.to_ascii_lowercase())
            .ok_or_else(|| {
                Error::Config(format!(
                    "unknown preset `{s}`: choose small, medium, large, mega or gqa"
                ))
            })
    }

    /// The preset's shape for a corpus of `vocab` tokens. Head dimensions are ones the flash
    /// kernels are rendered for (32 or 64; 64 where the model generates with flash-decoding).
    pub fn config(self, vocab: usize) -> Config {
        let (d_model, heads, kv_heads, layers, seq, batch) = match self {
            Preset::Small => (64, 2, 2, 2, 64, 4),
            Preset::Medium => (128, 4, 4, 4, 128, 8),
            Preset::Large => (256, 4, 4, 4, 256, 8),
            Preset::Mega => (512, 8, 8, 4, 512, 4),
            Preset::Gqa => (512, 8, 2, 4, 512, 4),
        };
        Config {
            vocab,
            d_model,
            heads,
            kv_heads,
            layers,
            seq,
            batch,
        }
    }
}

/// Training hyper-parameters.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hyper {
    pub lr: f32,
    pub beta1: f32,
    pub beta2: f32,
    pub eps: f32,
    pub weight_decay: f32,
    pub seed: u64,
}

impl Default for Hyper {
    fn default() -> Self {
        Hyper {
            lr: 3e-3,
            beta1: 0.9,
            beta2: 0.99,
            eps: 1e-8,
            weight_decay: 0.01,
            seed: 7,
        }
    }
}
