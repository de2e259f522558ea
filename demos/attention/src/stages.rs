//! The walkthrough's stages: the kernels one forward pass runs, chosen for a target as the ops
//! choose them, and the ten stages that show them.

use kiln_app::kiln::ops::matmul::{self, Epilogue};
use kiln_app::kiln::{self, Choice, DType, ops};
use kiln_app::talk::{Code, Stage, Target};

use crate::model::Model;
use crate::walkthrough::{self};

/// The kernels one forward pass over `tokens` tokens runs, each with its role in the layer,
/// chosen for `target` exactly as the ops choose them (from the shapes alone): for the device in
/// hand, or for a stored profile where the page has no WebGPU adapter.
pub fn kernel_choices(
    target: Target<'_>,
    model: &Model,
    tokens: usize,
) -> kiln::Result<Vec<(&'static str, Choice)>> {
    let c = &model.config;
    let (n, d, heads, inner) = (
        tokens.max(1),
        c.hidden_size,
        c.num_attention_heads,
        c.intermediate_size,
    );
    let hd = d / heads.max(1);
    let sel = target.selector();
    let f32 = DType::F32;
    let product = |batch, m, n, k, b_trans, epilogue| {
        let mut call = matmul::Call::new(f32, batch, m, n, k);
        call.layout.b_trans = b_trans;
        call.epilogue = epilogue;
        matmul::choose(&sel, &call, None)
    };
    let swap = ops::Elementwise {
        family: "swap_axes",
        dtype: f32,
        count: None,
    };
    Ok(vec![
        (
            "embeddings",
            sel.choose(&ops::add::call(f32, &[n, d], &[n, d])?, None)?,
        ),
        (
            "layernorm",
            sel.choose(&ops::layernorm::call(f32, d, false), None)?,
        ),
        (
            "projection",
            product(1, n, 3 * d, d, false, Epilogue::Bias)?,
        ),
        ("split heads", sel.choose(&swap, None)?),
        ("scores", product(heads, n, n, hd, true, Epilogue::None)?),
        (
            "softmax",
            sel.choose(&ops::softmax::call(f32, n, false), None)?,
        ),
        ("values", product(heads, n, hd, n, false, Epilogue::None)?),
        (
            "residual",
            sel.choose(&ops::layernorm::call(f32, d, true), None)?,
        ),
        (
            "expand",
            product(1, n, inner, d, false, Epilogue::BiasGelu)?,
        ),
        (
            "project back",
            product(1, n, d, inner, false, Epilogue::Bias)?,
        ),
    ])
}

/// The walkthrough's ten stages, their kernels (`kernels`, from [`kernel_choices`]) rendered
/// for `target`; `synthetic` when the weights are the built-in ones, which the narration then
/// names where it first uses the weights and where it reads what a token attends to.
pub fn stages(
    target: Target<'_>,
    kernels: &[(&'static str, Choice)],
    synthetic: bool,
) -> Vec<Stage> {
    let kernel = |role: &str| -> Option<Code> {
        let (_, choice) = kernels.iter().find(|(r, _)| *r == role)?;
        Code::kernel_for(target, choice)
            .map_err(|e| log::warn!("rendering the {role} kernel failed: {e}"))
            .ok()
    };
    let encoder_rs = include_str!("encoder.rs");
    let tokenizer_rs = include_str!("tokenizer.rs");
    let excerpt = |file: &str, source: &str, name: &str| {
        Some(Code::rust_excerpt(
            &format!("demos/attention/src/{file}"),
            source,
            name,
        ))
    };
    let texts: [(&str, Option<Code>); 10] = [
        (
            "A person types a sentence. The model never sees letters: the text is first \
                 cleaned up (lower case, spaces, accents) and cut into pieces its vocabulary \
                 knows. Left: the characters, and the bytes a computer actually holds.",
            excerpt("tokenizer.rs", tokenizer_rs, "normalise"),
        ),
        (
            "WordPiece splits the text into tokens: whole words when the vocabulary has \
                 them, pieces marked ## when it does not. [CLS] and [SEP] mark the start and \
                 the end. Each token becomes a number, its row in the vocabulary.",
            excerpt("tokenizer.rs", tokenizer_rs, "wordpiece"),
        ),
        (
            "Each token id picks one row of a learned table: a vector of numbers. Two more \
                 tables add where the token sits in the sentence and which segment it is in. \
                 One row per token: a matrix with a row for every token.",
            excerpt("encoder.rs", encoder_rs, "embeddings"),
        ),
        (
            "Layer norm rescales every row to mean 0 and spread 1, then applies learned \
                 weights. The bars on the right show each row's spread: after this step they \
                 are all equal. One GPU workgroup normalises one row.",
            kernel("layernorm"),
        ),
        (
            "One matrix product turns each token's vector into a query (what it looks \
                 for), a key (what it offers) and a value (what it passes on), the bias added \
                 as it is stored. The columns are split into heads: each head attends on its own.",
            excerpt("encoder.rs", encoder_rs, "qkv"),
        ),
        (
            "Every query meets every key: one matrix product per head gives a table of \
                 scores, one row per token, one column per token, scaled by one over the \
                 square root of the head size. High means relevant.",
            kernel("scores"),
        ),
        (
            "Softmax turns each row of scores into weights between 0 and 1 that sum to 1: \
                 how much each token listens to every other. These are the attention weights \
                 the demo draws as its heatmap.",
            kernel("softmax"),
        ),
        (
            "Each token's new vector is the weighted average of all value vectors, with \
                 its row of weights. The heads go side by side again and one more matrix \
                 mixes them.",
            excerpt("encoder.rs", encoder_rs, "values"),
        ),
        (
            "The attention's output is added to the layer's input: the residual \
                 connection. The layer only has to learn a change; the original signal passes \
                 straight through. One kernel adds and normalises each row.",
            kernel("residual"),
        ),
        (
            "The sum is normalised and goes on to the feed-forward block; then the next \
                 layer repeats it all. The same 20 lines ran on the GPU and on the CPU; on the \
                 GPU the whole pass is recorded and submitted once.",
            excerpt("encoder.rs", encoder_rs, "residual"),
        ),
    ];
    const SYNTHETIC: &str = " These weights are synthetic (random, built in: the model was \
        not fetched), so the patterns in the picture mean nothing; a trained model's would.";
    walkthrough::TITLES
        .iter()
        .zip(texts)
        .enumerate()
        .map(|(i, (title, (text, code)))| {
            // Stage 3 first uses the weights; stage 7 reads what a token attends to.
            if synthetic && (i == 2 || i == 6) {
                Stage::new(title, &format!("{text}{SYNTHETIC}"), code)
            } else {
                Stage::new(title, text, code)
            }
        })
        .collect()
}
