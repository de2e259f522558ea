//! The walkthrough's stages: the kernels one forward pass runs, chosen for a target as the ops
//! choose them, and the ten stages that show them.

use kiln_app::kiln::choices::CallLaunches;
use kiln_app::kiln::cpu::Array;
use kiln_app::kiln::{self, Backend, Choice, ChoiceBackend};
use kiln_app::talk::{Code, Stage, Target};

use crate::encoder;
use crate::model::{Model, Weights};
use crate::walkthrough::{self};

/// The walkthrough's roles, each the `nth` call of a backend op in one forward pass's first
/// layer (the embeddings before it): the role's kernel is that call's first launch, or, for a
/// call folded into the launch before it, that launch.
const ROLES: [(&str, &str, usize); 10] = [
    ("embeddings", "add", 0),
    ("layernorm", "add_layernorm", 0),
    ("projection", "linear", 0),
    ("split heads", "split_qkv", 0),
    ("scores", "matmul_bt", 0),
    ("softmax", "softmax", 0),
    ("values", "matmul", 0),
    ("residual", "add_layernorm", 1),
    ("expand", "linear_gelu", 0),
    ("project back", "linear", 2),
];

/// The calls one forward pass over `tokens` tokens makes through one layer of `model`, and the
/// kernels each launches: the model's own code (`encoder::forward`) run plan-only for `target`,
/// so the choices are the ops' own, from the shapes alone — for the device in hand, or for a
/// stored profile where the page has no WebGPU adapter.
pub fn forward_calls(
    target: Target<'_>,
    model: &Model,
    tokens: usize,
) -> kiln::Result<Vec<CallLaunches>> {
    let plan = ChoiceBackend::new(target.selector());
    let (n, d) = (tokens.max(1), model.config.hidden_size);
    let shaped =
        |shape: &[usize]| plan.upload(&Array::new(shape, vec![0.0; shape.iter().product()])?);
    let rows = [shaped(&[n, d])?, shaped(&[n, d])?, shaped(&[d])?];
    let w = &model.weights;
    let weights = Weights {
        emb_ln_g: plan.upload(&w.emb_ln_g)?,
        emb_ln_b: plan.upload(&w.emb_ln_b)?,
        layers: w
            .layers
            .iter()
            .take(1)
            .map(|l| l.try_map(|a| plan.upload(a)))
            .collect::<kiln::Result<_>>()?,
    };
    let c = &model.config;
    encoder::forward(
        &plan,
        &rows,
        &weights,
        c.num_attention_heads,
        c.layer_norm_eps,
    )?;
    Ok(plan.made())
}

/// The kernels of [`forward_calls`], each with its role in the layer.
pub fn kernel_choices(
    target: Target<'_>,
    model: &Model,
    tokens: usize,
) -> kiln::Result<Vec<(&'static str, Choice)>> {
    let calls = forward_calls(target, model, tokens)?;
    ROLES
        .iter()
        .map(|&(role, op, nth)| {
            let at = calls
                .iter()
                .enumerate()
                .filter(|(_, m)| m.op == op)
                .nth(nth)
                .map(|(i, _)| i);
            // A call with no launch of its own was taken into the launch before it (Q, K and V
            // split into heads by the product that makes them): that launch is its kernel.
            at.and_then(|i| match calls[i].launches.first() {
                Some(own) => Some(own),
                None => calls[..i].iter().rev().find_map(|m| m.launches.last()),
            })
            .map(|choice| (role, choice.clone()))
            .ok_or_else(|| kiln::Error::InvalidArgument {
                op: "walkthrough",
                detail: format!(
                    "a forward pass makes no call {nth} of {op} (the {role} stage's kernel)"
                ),
            })
        })
        .collect()
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::load::{DEFAULT_TEXT, cpu_forward, encode};
    use crate::tokenizer::Tokenizer;
    use crate::walkthrough::{Scene, Trace};
    use kiln_app::talk::{self, Stored};

    /// A page without a WebGPU adapter shows the whole walkthrough: every stage's words and
    /// code (the kernels rendered for a stored profile) and every stage's visual drawn from a
    /// CPU forward pass.
    #[test]
    fn the_walkthrough_needs_no_device() {
        let model = Model::synthetic().unwrap();
        let tokenizer = Tokenizer::new(&model.vocab).unwrap();
        let tokens = encode(&model, &tokenizer, DEFAULT_TEXT).unwrap();
        let stored = Stored::webgpu_defaults().unwrap();
        let target = Target::Stored(&stored);
        let kernels = kernel_choices(target, &model, tokens.ids.len()).unwrap();
        let list = stages(target, &kernels, model.synthetic);
        talk::check(&list).unwrap();
        assert_eq!(list.len(), walkthrough::TITLES.len());
        // Synthetic weights are named where the narration reads meaning into them.
        assert!(list[6].text.contains("synthetic"), "{}", list[6].text);
        let real = stages(target, &kernels, false);
        assert!(real.iter().all(|s| !s.text.contains("synthetic")));
        for s in &list {
            let code = s.code.as_ref().expect("every stage shows code");
            if code.language == "wgsl" {
                assert!(code.caption.contains("stored profile"), "{}", code.caption);
            }
        }
        let wgsl = list
            .iter()
            .filter(|s| s.code.as_ref().is_some_and(|c| c.language == "wgsl"))
            .count();
        assert_eq!(
            wgsl, 4,
            "layer norm, scores, softmax and the residual show kernels"
        );
        let f = cpu_forward(&model, &tokens.ids).unwrap();
        let trace = Trace::from_cpu(&f, 0).expect("layer 0 is traced");
        for stage in 0..list.len() {
            let scene = Scene {
                text: DEFAULT_TEXT,
                tokens: &tokens.tokens,
                ids: &tokens.ids,
                trace: Some(&trace),
                layers: model.config.num_hidden_layers,
                head: 0,
                vocab: model.config.vocab_size,
                hidden: model.config.hidden_size,
                path: "CPU",
                synthetic: model.synthetic,
                time: 1.0,
            };
            let img = walkthrough::draw(stage, &scene);
            let distinct: std::collections::HashSet<u32> = img.pixels.iter().copied().collect();
            assert!(
                distinct.len() > 8,
                "stage {}: a near-blank picture",
                stage + 1
            );
        }
    }

    /// Where the projection writes Q, K and V into heads itself (the browser's SwiftShader
    /// profile: the tiled route, which has the two-output forms), the split's stage shows the
    /// projection's launch, and every role still has a kernel.
    #[test]
    fn a_split_folded_into_the_projection_shows_the_projections_kernel() {
        let model = Model::synthetic().unwrap();
        let tokenizer = Tokenizer::new(&model.vocab).unwrap();
        let tokens = encode(&model, &tokenizer, DEFAULT_TEXT).unwrap();
        let stored = Stored::profile("chromium-swiftshader").unwrap();
        let kernels = kernel_choices(Target::Stored(&stored), &model, tokens.ids.len()).unwrap();
        let name = |role: &str| {
            let (_, c) = kernels.iter().find(|(r, _)| *r == role).unwrap();
            format!("{}/{}", c.variant.family, c.variant.name)
        };
        assert!(
            name("split heads").ends_with("_bias_and_heads"),
            "{kernels:?}"
        );
        assert_eq!(name("split heads"), name("projection"));
    }
}
