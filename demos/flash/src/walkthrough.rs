//! The flash demo's walkthrough for presenter mode: five stages, the same list natively
//! (`flash --talk`) and on the page (`flash.html?talk`). Each stage shows the code it is about:
//! the flash kernels rendered for this device where there is one, else the Rust lines the
//! visual runs.

use kiln_app::kiln::{Gpu, Piece};
use kiln_app::talk::{Code, Stage};

use crate::sweep::FlashChoices;

const SWEEP_RS: &str = include_str!("sweep.rs");
const ONLINE_RS: &str = include_str!("visual/online.rs");
const BACKWARD_RS: &str = include_str!("visual/backward.rs");
const DECODE_RS: &str = include_str!("visual/decode.rs");

/// The stages, in order: the naive score matrix, the tiles and the online softmax, the
/// backward recomputation, the speed and traffic charts, flash-decoding. `kernels`: the device and the flash
/// path's choices on it, for the kernels' WGSL; without them (no WebGPU) the stages show the
/// CPU arithmetic the visuals run instead.
pub fn stages(kernels: Option<(&Gpu, &FlashChoices)>) -> Vec<Stage> {
    let forward = kernels.and_then(|(gpu, c)| {
        Code::kernel(gpu, &c.forward)
            .inspect_err(|e| log::warn!("rendering flash_fwd for the walkthrough: {e}"))
            .ok()
    });
    let backward = kernels.and_then(|(gpu, c)| {
        backward_code(gpu, c)
            .inspect_err(|e| log::warn!("rendering the backward for the walkthrough: {e}"))
            .ok()
    });
    vec![
        Stage::new(
            "The naive way: an N×N matrix",
            "Attention compares every query with every key, so the scores S = Q·K^T form an N×N \
             matrix. The naive GPU path writes S to memory, turns it into probabilities P, \
             writes those too and reads both back: 4·B·H·N^2 bytes a pass, growing with the \
             square of the sequence. The flash path moves only Q, K, V and O.",
            Some(Code::rust_excerpt(
                "demos/flash/src/sweep.rs: the naive GPU path (matmul, softmax, matmul)",
                SWEEP_RS,
                "naive",
            )),
        ),
        Stage::new(
            "Tiles and the online softmax",
            "FlashAttention never writes S. A workgroup takes a tile of query rows and walks \
             the keys a block at a time, keeping for each row a running max m, a running sum l \
             and an output accumulator; when a block raises the max, l and the accumulator are \
             rescaled by exp(m_old - m_new), so the result is exact. The numbers on the left \
             are real, from the same arithmetic on the CPU.",
            Some(forward.unwrap_or_else(|| {
                Code::rust_excerpt(
                    "demos/flash/src/visual/online.rs: the online softmax (the flash_fwd \
                     kernel's arithmetic, on the CPU here: no WebGPU)",
                    ONLINE_RS,
                    "online-softmax",
                )
            })),
        ),
        Stage::new(
            "Backward: recompute, don't store",
            "The forward pass saved only O and one number per row, the log-sum-exp. The \
             backward pass recomputes each tile of P from Q, K and that LSE, then accumulates \
             dK and dV per key tile in one pass and dQ per query tile in another, so no two \
             workgroups write the same output. More arithmetic, far less memory traffic.",
            Some(backward.unwrap_or_else(|| {
                Code::rust_excerpt(
                    "demos/flash/src/visual/backward.rs: P recomputed, dK/dV then dQ (the \
                     backward kernels' arithmetic, on the CPU here: no WebGPU)",
                    BACKWARD_RS,
                    "recompute",
                )
            })),
        ),
        Stage::new(
            "Speed and memory traffic",
            "Measured here: causal attention forward + backward at batch 1, 8 heads, head \
             dimension 64, on the flash kernels, the naive GPU path and the CPU path. The \
             traffic chart is Kiln's byte model of the two GPU paths: the naive path's bytes \
             grow with N^2, the flash path's with N.",
            Some(Code::rust_excerpt(
                "demos/flash/src/sweep.rs: the byte model behind the traffic chart",
                SWEEP_RS,
                "traffic",
            )),
        ),
        Stage::new(
            "Generating: flash-decoding",
            "Generating text, each new token is one query row against every key cached so far. \
             One workgroup per row would leave the GPU idle, so the keys are cut into chunks \
             that workgroups take at once, each keeping its own max, sum and output; a second \
             pass rescales them to the common max and adds them up. The numbers on the left \
             are real, checked against standard attention.",
            Some(Code::rust_excerpt(
                "demos/flash/src/visual/decode.rs: the split and the combine (the flash_decode \
                 and flash_decode_combine kernels' arithmetic, on the CPU)",
                DECODE_RS,
                "decode",
            )),
        ),
    ]
}

/// The two backward kernels, dK/dV then dQ, one after the other.
fn backward_code(gpu: &Gpu, c: &FlashChoices) -> kiln_app::kiln::Result<Code> {
    let dkdv = Code::kernel(gpu, &c.dkdv)?;
    let dq = Code::kernel(gpu, &c.dq)?;
    let focus = dkdv.focus;
    let mut pieces = dkdv.pieces;
    pieces.push(Piece {
        text: format!("\n\n// ---- then {}:\n\n", dq.caption),
        marked: false,
    });
    pieces.extend(dq.pieces);
    Ok(Code {
        caption: format!(
            "{} {}, then {} {}, rendered for {}",
            c.dkdv.variant.family,
            c.dkdv.variant.name,
            c.dq.variant.family,
            c.dq.variant.name,
            gpu.profile().name
        ),
        language: "wgsl",
        pieces,
        focus,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn five_stages_with_code_from_the_markers() {
        let stages = stages(None);
        assert_eq!(stages.len(), crate::visual::STAGES);
        for s in &stages {
            assert!(!s.title.is_empty() && s.text.len() > 100, "{}", s.title);
            let code = s.code.as_ref().map(Code::text).unwrap_or_default();
            // An excerpt is the lines between its markers, never the whole file.
            assert!(
                !code.is_empty() && !code.contains("talk:begin") && code.lines().count() < 60,
                "{}: {code}",
                s.title
            );
        }
        assert!(
            stages[0]
                .code
                .as_ref()
                .unwrap()
                .text()
                .contains("launch_naive_forward")
        );
        assert!(stages[1].code.as_ref().unwrap().text().contains("alpha"));
        assert!(stages[2].code.as_ref().unwrap().text().contains("lse"));
        assert!(stages[3].code.as_ref().unwrap().text().contains("traffic"));
        assert!(
            stages[4]
                .code
                .as_ref()
                .unwrap()
                .text()
                .contains("fn combine")
        );
    }
}
