//! The attention demo: a BERT-family encoder written once against `kiln::Backend` (about 20
//! lines, `encoder::encoder_layer`), run on the GPU through kiln's kernels and on the CPU path,
//! with each layer's attention weights drawn as heatmaps over the tokens of the user's text.

pub mod captions;
pub mod demo;
pub mod encoder;
pub mod heatmap;
pub mod load;
mod measure;
pub mod model;
pub mod stages;
pub mod tokenizer;
pub mod walkthrough;

pub use demo::Attention;
