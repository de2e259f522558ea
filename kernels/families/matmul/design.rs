//! What a matmul variant is, read into types: its route, its tile, its epilogue (and the
//! second output a two-output epilogue writes), the operands' layout.

use super::*;

/// How a variant computes its C tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// Scalar tiles through workgroup memory: every adapter.
    Tiled,
    /// vec4 reads from double-buffered tiles: GPUs.
    Vec4,
    /// Cooperative 16×16 fragments from workgroup tiles.
    Coop,
    /// Cooperative fragments loaded straight from the buffers (M, N, K multiples of 16).
    CoopGlobal,
}

/// What the launcher and the rule read of a variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Design {
    pub dtype: DType,
    pub route: Route,
    /// Threads per side of the workgroup (tiled and vec4 routes).
    pub wg: u32,
    /// Accumulators per side of a thread's block (coop routes: fragments per subgroup).
    pub reg: u32,
    /// Depth of the K slice staged per step.
    pub tk: u32,
    pub epilogue: Epilogue,
    pub unroll: bool,
    /// vec4 route: A and B read from the buffers as vec4s (M, N, K multiples of 4).
    pub wide: bool,
    /// Rows of the C tile a workgroup computes.
    pub tile: u32,
    /// Its columns: `tile`, or half of it in a tall tile.
    pub tile_n: u32,
}

impl Design {
    pub fn parse(v: &Variant) -> Result<Self> {
        Ok(Design {
            dtype: v.dtype()?,
            route: v.one_of(
                "route",
                &[
                    ("tiled", Route::Tiled),
                    ("vec4", Route::Vec4),
                    ("coop", Route::Coop),
                    ("coop_global", Route::CoopGlobal),
                ],
            )?,
            wg: v.count("wg")?,
            reg: v.count("reg")?,
            tk: v.count("tk")?,
            epilogue: Epilogue::parse(v)?,
            unroll: v.flag("unroll")?,
            wide: v.flag("wide")?,
            tile: v.count("tile")?,
            tile_n: v.count("tile_n")?,
        })
    }
}

/// What happens to C as it is stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Epilogue {
    #[default]
    None,
    /// C + bias[col].
    Bias,
    /// gelu(C + bias[col]), the exact (erf) gelu.
    BiasGelu,
    /// C + bias[col] stored as C, and its gelu into a second output y.
    BiasAndGelu,
    /// C + bias[col] stored as C, and C · gelu′(x) into a second output y (x of C's shape).
    BiasAndGeluGrad,
    /// C + bias[col] stored as C [B·T, P·H·d], and again into y [P, B, H, T, d].
    BiasAndHeads,
}

impl Epilogue {
    /// A variant's `epilogue` value.
    pub fn parse(v: &Variant) -> Result<Self> {
        v.one_of(
            "epilogue",
            &[
                ("none", Epilogue::None),
                ("bias", Epilogue::Bias),
                ("bias_gelu", Epilogue::BiasGelu),
                ("bias_and_gelu", Epilogue::BiasAndGelu),
                ("bias_and_gelu_grad", Epilogue::BiasAndGeluGrad),
                ("bias_and_heads", Epilogue::BiasAndHeads),
            ],
        )
    }

    /// The template's `epilogue` value.
    pub fn name(self) -> &'static str {
        match self {
            Epilogue::None => "none",
            Epilogue::Bias => "bias",
            Epilogue::BiasGelu => "bias_gelu",
            Epilogue::BiasAndGelu => "bias_and_gelu",
            Epilogue::BiasAndGeluGrad => "bias_and_gelu_grad",
            Epilogue::BiasAndHeads => "bias_and_heads",
        }
    }

    /// Whether it writes a second output (and so is never cut along K: the sum has no such
    /// form).
    pub fn two_outputs(self) -> bool {
        matches!(
            self,
            Epilogue::BiasAndGelu | Epilogue::BiasAndGeluGrad | Epilogue::BiasAndHeads
        )
    }
}

/// The second result of a two-output epilogue, of C's shape.
#[derive(Clone, Copy, Debug)]
pub enum SecondOutput<'a> {
    /// y = gelu(C + bias).
    Gelu { y: &'a Tensor },
    /// y = (C + bias) · gelu′(x).
    GeluGrad { x: &'a Tensor, y: &'a Tensor },
    /// C + bias [B·T, P·H·d] again as y [P, B, H, T, d] (`heads`: [T, H, d]); a batch of one.
    Heads { y: &'a Tensor, heads: [usize; 3] },
}

impl SecondOutput<'_> {
    pub fn epilogue(&self) -> Epilogue {
        match self {
            SecondOutput::Gelu { .. } => Epilogue::BiasAndGelu,
            SecondOutput::GeluGrad { .. } => Epilogue::BiasAndGeluGrad,
            SecondOutput::Heads { .. } => Epilogue::BiasAndHeads,
        }
    }

    /// The tensors the launch binds after the bias, in binding order (y, then x).
    pub(super) fn bound(&self) -> Vec<&Tensor> {
        match *self {
            SecondOutput::Gelu { y } | SecondOutput::Heads { y, .. } => vec![y],
            SecondOutput::GeluGrad { x, y } => vec![y, x],
        }
    }

    /// y's shape for a C of `c_shape`, or why there is none.
    pub(super) fn shape(&self, c_shape: &[usize]) -> std::result::Result<Vec<usize>, String> {
        let SecondOutput::Heads {
            heads: [t, h, d], ..
        } = *self
        else {
            return Ok(c_shape.to_vec());
        };
        match *c_shape {
            [m, n] if t > 0 && h * d > 0 && m.is_multiple_of(t) && n.is_multiple_of(h * d) => {
                Ok(vec![n / (h * d), m / t, h, t, d])
            }
            _ => Err(format!(
                "C {c_shape:?} does not split into rows of {t} and heads of {h} × {d}"
            )),
        }
    }
}

/// How A and B are stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Layout {
    /// A stored [.., K, M]: C = Aᵀ · B.
    pub a_trans: bool,
    /// B stored [.., N, K]: C = A · Bᵀ.
    pub b_trans: bool,
}

/// The variant with the same values and no epilogue.
pub(super) fn plain_of(registry: &crate::registry::Registry, v: &Variant) -> Result<Variant> {
    with_epilogue(registry, v, Epilogue::None)
}

/// The variant with the same values and `epilogue`.
pub(crate) fn with_epilogue(
    registry: &crate::registry::Registry,
    v: &Variant,
    epilogue: Epilogue,
) -> Result<Variant> {
    let set = [("epilogue", Param::Str(epilogue.name().into()))];
    registry.like(OP, v, &set).cloned()
}
