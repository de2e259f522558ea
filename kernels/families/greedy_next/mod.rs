//! Greedy decoding's hand-over on the GPU, one launch at the end of a one-token pass: the
//! likeliest id of the logits becomes the next pass's token, and the pass's position and its
//! key/value cache's length move on by one. A captured pass that ends with it feeds itself, so
//! that k tokens are k replays in one submission and one read-back of the log, not k round trips
//! through the host.

pub(crate) mod cases;
pub mod cpu;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::gpu::Dispatch;
use crate::select::Choice;
use crate::tensor::Tensor;

use crate::launch::{check_same_device, check_word, choose_elementwise, record};

const OP: &str = "greedy_next";

/// What the launcher reads of a variant: its dtype and threads per workgroup.
pub type Design = crate::launch::ElementDesign;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    vocab: u32,
    offset: u32,
    cap: u32,
    _pad: u32,
}

/// The likeliest id of `logits`' last row ([`cpu::greedy_pick`]'s rule) into `token`;
/// `position` and `length` moved on by one; the row and the id logged at row `position % cap`
/// of `log` [cap, V + 1] (f32). `token`, `position` and `length` are u32 [1]. With the named
/// variant or the selector's choice.
pub fn greedy_next_into(
    logits: &Tensor,
    token: &Tensor,
    position: &Tensor,
    length: &Tensor,
    log: &Tensor,
    named: Option<&str>,
) -> Result<Choice> {
    record(
        logits.gpu(),
        launch(logits, token, position, length, log, named)?,
    )
}

/// Checks the call and prepares its launch.
pub fn launch(
    logits: &Tensor,
    token: &Tensor,
    position: &Tensor,
    length: &Tensor,
    log: &Tensor,
    named: Option<&str>,
) -> Result<(Dispatch, Choice)> {
    check_same_device(OP, &[logits, token, position, length, log])?;
    if !matches!(logits.dtype(), DType::F32 | DType::F16) || log.dtype() != DType::F32 {
        return Err(Error::shape(
            OP,
            format!(
                "logits must be f32 or f16 and the log f32, got {} and {}",
                logits.dtype().wgsl(),
                log.dtype().wgsl()
            ),
        ));
    }
    for (name, t) in [("token", token), ("position", position), ("length", length)] {
        check_word(OP, name, t)?;
    }
    let (vocab, cap) = cpu::log_dims(logits.shape(), log.shape())?;
    // The id is logged as an f32: exact below 2²⁴.
    if vocab > 1 << 24 {
        return Err(Error::shape(
            OP,
            format!("a vocabulary of {vocab} ids: at most 2²⁴ are logged exactly"),
        ));
    }
    let written = [token, position, length, log];
    for (i, a) in written.iter().enumerate() {
        let others = written[i + 1..].iter().chain([&logits]);
        if others.clone().any(|b| a.overlaps(b)) {
            return Err(Error::InvalidArgument {
                op: OP,
                detail: "the token, position, length and log must be separate buffers, apart from the logits".into(),
            });
        }
    }
    let choice = choose_elementwise(OP, logits, None, named)?;
    let params = Params {
        vocab: vocab as u32,
        offset: (logits.numel() - vocab) as u32,
        cap: cap as u32,
        _pad: 0,
    };
    let dispatch = Dispatch::new(
        logits.gpu(),
        &choice.variant,
        &[logits, token, position, length, log],
        &params,
        [1, 1, 1],
    )?;
    Ok((dispatch, choice))
}

/// What `kiln::ops` offers of this family (the build script re-exports it).
pub mod api {
    pub use super::greedy_next_into;
}
