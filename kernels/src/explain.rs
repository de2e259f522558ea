//! The selector's picks for sample calls — what `kiln kernels --explain` prints, for the device
//! in hand or any stored profile, and what the picks snapshot test pins for every stored profile
//! (so the rules' GPU branches run in CI without the GPU).

use serde::Serialize;

use crate::dtype::DType;
use crate::elementwise::ElementOp;
use crate::error::Result;
use crate::families::matmul::{self, Epilogue};
use crate::ops::attention::FlashCall;
use crate::ops::{self, Elementwise};
use crate::select::{Call, Reason, Selector};
use crate::shape::AttentionDims;

/// One sample call and what the selector made of it.
#[derive(Clone, Debug, Serialize)]
pub struct Pick {
    pub family: String,
    /// The call in words (`f32 7x130 · 130x33`).
    pub call: String,
    /// The variant, or why none takes the call.
    pub outcome: std::result::Result<String, String>,
    /// `tuned`, `rule` or `named`; empty without a variant.
    pub by: &'static str,
    /// The reason in full.
    pub reason: String,
}

impl Pick {
    /// One line: `family call → variant (by)`.
    pub fn line(&self) -> String {
        match &self.outcome {
            Ok(v) => format!("{:<18} {:<34} → {v} ({})", self.family, self.call, self.by),
            Err(e) => format!("{:<18} {:<34} → none: {e}", self.family, self.call),
        }
    }
}

fn pick(sel: &Selector<'_>, family: &str, call: String, c: &dyn Call) -> Pick {
    finish(family, call, sel.choose(c, None))
}

fn finish(family: &str, call: String, choice: Result<crate::select::Choice>) -> Pick {
    match choice {
        Ok(c) => Pick {
            family: family.into(),
            call,
            outcome: Ok(c.variant.name.clone()),
            by: match c.reason {
                Reason::Tuned { .. } => "tuned",
                Reason::Rule(_) => "rule",
                Reason::Forced => "named",
            },
            reason: c.reason.to_string(),
        },
        Err(e) => Pick {
            family: family.into(),
            call,
            outcome: Err(e.to_string()),
            by: "",
            reason: String::new(),
        },
    }
}

/// The picks for the sample calls: matmul (sizes that are and are not tile multiples, f32 and
/// f16, B transposed, epilogues), add, softmax, layernorm (plain and residual), the flash
/// families (f32 and f16, causal or not, short and long), and the simple families.
pub fn sample_picks(sel: &Selector<'_>) -> Vec<Pick> {
    let mut out = Vec::new();
    for dtype in [DType::F32, DType::F16] {
        let t = dtype.wgsl();
        for (batch, m, n, k) in [
            (1, 7, 33, 130),
            (1, 17, 1152, 384),
            (1, 212, 1536, 384),
            (1, 256, 256, 256),
            (1, 1024, 1024, 1024),
            (1, 4096, 4096, 4096),
            (1, 2048, 512, 2048),
            (4, 1024, 1024, 256),
            (12, 212, 212, 32),
        ] {
            let call = matmul::Call::new(dtype, batch, m, n, k);
            let text = format!("{t} {batch}x {m}x{k} · {k}x{n}");
            out.push(finish("matmul", text, matmul::choose(sel, &call, None)));
        }
        for (m, n, k, b_trans, epilogue) in [
            (4096, 4096, 4096, true, Epilogue::None),
            (1024, 384, 128, true, Epilogue::None),
            (212, 1536, 384, false, Epilogue::BiasGelu),
            (17, 384, 1536, false, Epilogue::Bias),
        ] {
            let mut call = matmul::Call::new(dtype, 1, m, n, k);
            call.layout.b_trans = b_trans;
            call.epilogue = epilogue;
            let text = format!(
                "{t} {m}x{k} · {}{}",
                if b_trans {
                    format!("({n}x{k})ᵀ")
                } else {
                    format!("{k}x{n}")
                },
                match epilogue {
                    Epilogue::None => "",
                    Epilogue::Bias => " + bias",
                    Epilogue::BiasGelu => " + bias, gelu",
                    Epilogue::BiasAndGelu => " + bias, and its gelu",
                    Epilogue::BiasAndGeluGrad => " + bias, and its gelu gradient",
                    Epilogue::BiasAndHeads => " + bias, and split into heads",
                }
            );
            out.push(finish("matmul", text, matmul::choose(sel, &call, None)));
        }
        for (a, b) in [
            (vec![64, 256], vec![256]),
            (vec![1024, 1024], vec![1024, 1024]),
            (vec![7, 33], vec![7, 33]),
        ] {
            let text = format!("{t} {a:?} + {b:?}");
            match ops::add::call(dtype, &a, &b) {
                Ok(c) => out.push(pick(sel, "add", text, &c)),
                Err(e) => out.push(finish("add", text, Err(e))),
            }
        }
        for cols in [33, 256, 1024] {
            for causal in [false, true] {
                let c = ops::softmax::call(dtype, cols, causal);
                let text = format!("{t} [.., {cols}]{}", if causal { " causal" } else { "" });
                out.push(pick(sel, "softmax", text, &c));
            }
            for residual in [false, true] {
                let c = ops::layernorm::call(dtype, cols, residual);
                let text = format!("{t} [.., {cols}]{}", if residual { " + r" } else { "" });
                out.push(pick(sel, "layernorm", text, &c));
            }
        }
        // The feed-forward block is f32 alone: MiniLM's at 17 and 212 tokens, and a small one.
        if dtype == DType::F32 {
            for (m, d, hidden) in [(17, 384, 1536), (212, 384, 1536), (37, 64, 300)] {
                let c = ops::mlp::Call {
                    m,
                    d,
                    n: d,
                    hidden,
                    slices: None,
                };
                let text = format!("{t} {m}x{d} -> {hidden} -> {d}");
                out.push(pick(sel, "mlp", text, &c));
            }
        }
        for family in ["flash_fwd", "flash_bwd_dq", "flash_bwd_dkdv"] {
            for (bh, n, d) in [
                (8, 17, 64),
                (32, 128, 32),
                (96, 1024, 64),
                (16, 4096, 64),
                (8, 4096, 128),
            ] {
                for causal in [false, true] {
                    let call = FlashCall {
                        family,
                        dtype,
                        dims: AttentionDims {
                            batch_heads: bh,
                            q_len: n,
                            kv_len: n,
                            head_dim: d,
                            group: 1,
                        },
                        causal,
                    };
                    let text = format!(
                        "{t} bh{bh} n{n} d{d}{}",
                        if causal { " causal" } else { "" }
                    );
                    out.push(pick(sel, family, text, &call));
                }
            }
        }
        for (b, hq, hkv, n, d) in [
            (1, 32, 8, 1024, 128),
            (1, 32, 8, 32768, 128),
            (1, 32, 8, 131072, 128),
            (8, 32, 8, 32768, 128),
            (1, 16, 16, 8192, 64),
        ] {
            let dims = ops::flash_decode::DecodeDims::new(
                &[b, hq, 1, d],
                &[b, hkv, n, d],
                &[b, hkv, n, d],
                n,
            );
            let text = format!("{t} B{b} Hq{hq}/{hkv} N{n} D{d}");
            match dims {
                Ok(dims) => {
                    let c = ops::flash_decode::DecodeCall { dtype, dims };
                    out.push(pick(sel, "flash_decode", text, &c));
                }
                Err(e) => out.push(finish("flash_decode", text, Err(e))),
            }
        }
        // Every elementwise op, and the other families whose call fixes only the dtype.
        let simple = [
            "swap_axes",
            "transpose",
            "attention_delta",
            "copy",
            "fma_chain",
        ];
        let families = ElementOp::ALL.iter().map(|op| op.family()).chain(simple);
        for family in families {
            let c = Elementwise {
                family,
                dtype,
                count: None,
            };
            out.push(pick(sel, family, t.into(), &c));
        }
    }
    out
}
