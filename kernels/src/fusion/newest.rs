//! Folds: an op call that takes the newest launch recorded into its own. [`fold`] decides from
//! what that launch is ([`Newest`]) and what the call is ([`Next`]); the path puts the launch
//! it names in place, or records the call's own where it names none.

use super::Value;
use crate::dtype::DType;
use crate::elementwise::ElementOp;
use crate::families::matmul::{self, Epilogue};
use crate::families::{reduce_layernorm, reduce_layernorm_backward};
use crate::registry::{Registry, Variant};

/// The newest launch recorded, as a fold reads it.
#[derive(Debug)]
pub(crate) enum Newest<'a, V: Value> {
    /// A product written whole (K not cut): its variant, its batch and [M, N], and C.
    Product {
        variant: &'a Variant,
        batch: usize,
        m: usize,
        n: usize,
        c: V::Key,
    },
    /// The sum of a product cut along K (`matmul_reduce`) writing C, with a bias of this many
    /// elements or none (a sum that also applies gelu is never taken: its C is not the
    /// product's).
    Sum { c: V::Key, bias: Option<usize> },
    /// Anything else, nothing, or a launch a capture's rewrite may take with others (a link
    /// of a chain, `Trace::newest_ends_a_chain`).
    Other,
}

/// An op call that may take the newest launch into its own.
#[derive(Debug)]
pub(crate) enum Next<'a, V> {
    /// An elementwise op over its operands.
    Elementwise {
        op: ElementOp,
        operands: &'a [&'a V],
    },
    /// X permuted, or two of its axes swapped; `heads`: where the move puts X [B, T, P, H, d]
    /// into heads [P, B, H, T, d], those extents.
    Moved { x: &'a V, heads: Option<[usize; 5]> },
    /// (X + R, layernorm(X + R)) in the design of the plain norm's variant `norm`.
    AddLayerNorm {
        x: &'a V,
        r: &'a V,
        norm: &'a Variant,
    },
    /// The layer norm's backward with gradient dY, in the design of `norm`.
    LayerNormBackward { dy: &'a V, norm: &'a Variant },
}

/// What the call runs instead of the newest launch and its own.
#[derive(Debug, PartialEq)]
pub(crate) enum Fold {
    /// The product's launch again, in this variant: its design with a two-output epilogue that
    /// writes the call's result beside the product. The call records nothing.
    Product(Variant),
    /// The sum's launch replaced by the call's own, of `family` in the design `named` (the
    /// selector's where `None`), which adds the product's slices (with the sum's bias) as it
    /// reads them; `product`: which of the call's tensors the product is (for `AddLayerNorm`,
    /// 0 for X and 1 for R: the other is the residual).
    Sum {
        family: &'static str,
        named: Option<String>,
        bias: Option<usize>,
        product: usize,
    },
}

/// The two-output epilogue that writes `op`'s result beside a product, and which of `op`'s
/// operands that product is; `None` for an op no epilogue writes.
pub(crate) fn epilogue_for(op: ElementOp) -> Option<(Epilogue, usize)> {
    match op {
        ElementOp::Gelu => Some((Epilogue::BiasAndGelu, 0)),
        ElementOp::GeluBackward => Some((Epilogue::BiasAndGeluGrad, 1)),
        _ => None,
    }
}

/// What `next` runs in place of `newest` and its own launch, or `None` to record it as it is.
pub(crate) fn fold<V: Value>(
    registry: &Registry,
    newest: &Newest<'_, V>,
    next: &Next<'_, V>,
) -> Option<Fold> {
    match (newest, next) {
        (Newest::Product { .. }, Next::Elementwise { op, operands }) => {
            let (epilogue, at) = epilogue_for(*op)?;
            let c = operands.get(at)?;
            // Every operand of C's dtype and shape; the others apart from C.
            let apart = operands
                .iter()
                .enumerate()
                .all(|(i, o)| i == at || !o.overlaps(c));
            let alike = operands
                .iter()
                .all(|o| o.dtype() == c.dtype() && o.shape() == c.shape());
            let fits = alike && apart;
            (fits && product_writes(newest, c, None)).then_some(())?;
            with_epilogue(registry, newest, epilogue)
        }
        (Newest::Product { .. }, Next::Moved { x, heads: Some(e) }) => {
            let [b, t, p, h, d] = *e;
            let mn = [b * t, p * h * d];
            let fits = product_writes(newest, x, Some(mn));
            fits.then_some(())?;
            with_epilogue(registry, newest, Epilogue::BiasAndHeads)
        }
        (Newest::Sum { c, bias }, Next::Moved { x, .. }) => {
            let fits = x.dtype() == DType::F32 && *c == x.key() && !x.shape().contains(&0);
            fits.then_some(Fold::Sum {
                family: "reduce_permute",
                named: None,
                bias: *bias,
                product: 0,
            })
        }
        (Newest::Sum { c, bias }, Next::AddLayerNorm { x, r, norm }) => {
            let cols = *x.shape().last()?;
            let f32s = x.dtype() == DType::F32 && r.shape() == x.shape();
            let product = [x.key(), r.key()].iter().position(|k| k == c)?;
            let bias_fits = bias.is_none_or(|n| n == cols);
            (f32s && bias_fits).then_some(())?;
            let set = [("bias", crate::contract::Param::Bool(bias.is_some()))];
            let named = registry.like(reduce_layernorm::OP, norm, &set).ok()?;
            Some(Fold::Sum {
                family: reduce_layernorm::OP,
                named: Some(named.name.clone()),
                bias: *bias,
                product,
            })
        }
        (Newest::Sum { c, bias: None }, Next::LayerNormBackward { dy, norm }) => {
            (dy.dtype() == DType::F32 && *c == dy.key()).then_some(())?;
            let named = registry
                .like(reduce_layernorm_backward::OP, norm, &[])
                .ok()?;
            Some(Fold::Sum {
                family: reduce_layernorm_backward::OP,
                named: Some(named.name.clone()),
                bias: None,
                product: 0,
            })
        }
        _ => None,
    }
}

/// Whether the newest launch is a product of `t`'s dtype with no epilogue or a bias, written
/// whole, that wrote `t`: with `mn`, a batch of one [M, N] of these extents; without, with `t`'s
/// rows the product's.
fn product_writes<V: Value>(newest: &Newest<'_, V>, t: &V, mn: Option<[usize; 2]>) -> bool {
    let Newest::Product {
        variant,
        batch,
        m,
        n,
        c,
    } = newest
    else {
        return false;
    };
    let Ok(design) = matmul::Design::parse(variant) else {
        return false;
    };
    if !matches!(design.epilogue, Epilogue::None | Epilogue::Bias) {
        return false;
    }
    let fits = match mn {
        // Heads split the one matrix of a batch of one, of the shape the move says.
        Some(mn) => *batch == 1 && mn == [*m, *n],
        // Elementwise, the bias (or the zeros of a product without one) is read by column.
        None => t.shape().last() == Some(n),
    };
    design.dtype == t.dtype() && *c == t.key() && *n > 0 && fits
}

/// The newest product's variant with `epilogue`, where the registry has that form.
fn with_epilogue<V: Value>(
    registry: &Registry,
    newest: &Newest<'_, V>,
    epilogue: Epilogue,
) -> Option<Fold> {
    let Newest::Product { variant, .. } = newest else {
        return None;
    };
    matmul::with_epilogue(registry, variant, epilogue)
        .ok()
        .map(Fold::Product)
}
