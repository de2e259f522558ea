//! The selector's call for a product and its rule: what the shapes rule out, then the
//! preferences in order (routes, tiles, K slices), measured where the comments say.

use super::*;

/// A matmul call as the selector sees it.
#[derive(Clone, Copy, Debug)]
pub struct Call {
    pub dtype: DType,
    pub dims: MatmulDims,
    pub layout: Layout,
    pub epilogue: Epilogue,
}

impl Call {
    /// C = A · B of these sizes, no epilogue.
    pub fn new(dtype: DType, batch: usize, m: usize, n: usize, k: usize) -> Call {
        Call {
            dtype,
            dims: MatmulDims {
                batch,
                m,
                k,
                n,
                stride_a: m * k,
                stride_b: k * n,
                stride_c: m * n,
            },
            layout: Layout::default(),
            epilogue: Epilogue::None,
        }
    }
}

impl select::Call for Call {
    fn key(&self) -> Key {
        let d = &self.dims;
        let flags = u32::from(self.layout.a_trans)
            | u32::from(self.layout.b_trans) << 1
            | (self.epilogue as u32) << 2;
        Key::new(OP, self.dtype, &[d.batch, d.m, d.n, d.k], flags, bucket(d))
    }

    /// On a GPU the cooperative-matrix route that loads straight from the buffers when it
    /// takes the shape (f16, multiples of 16), else the vec4 route unrolled, with wide reads
    /// where the sizes are multiples of 4; on a software adapter the plain tiled route
    /// (measured on the H200 and lavapipe, kernels/perf/vec4-and-coop-routes.md). Square tiles,
    /// except on a GPU 128 × 64 ones for a single f32 product of one to two rounds of 128 square
    /// 128 × 128 tiles whose K is not long (measured on the H100). Then the C tile nearest the
    /// largest that still gives enough workgroups to fill the device (128 on a GPU, 8 on a software
    /// adapter with a few cores), or the largest for an f32 product of at least 2¹⁹ outputs and
    /// K ≥ 1536 (its K cut instead) — for coop_global 2 × 2 fragments per subgroup (4 × 4 when B is
    /// transposed) — the K slice nearest 16, and 16 × 16 threads.
    fn request(&self, profile: &DeviceProfile) -> Request<'_> {
        let d = self.dims;
        let software = software(profile);
        let enough = if software { 8 } else { 128 };
        let groups = |t: usize| d.batch * d.m.div_ceil(t) * d.n.div_ceil(t);
        // An f32 product with a large C and a long K keeps the largest tile and has its K cut
        // to fill the device (`split_for`): at the Mega step's shapes, [2048, 512] by K 2048,
        // that took 0.158 ms to 0.136 (H200, kernels/perf/embedding-under-cuda-graph.md).
        let long = !software && long_k(self.dtype, &d);
        let target = [128, 64, 32, 16]
            .into_iter()
            .find(|&t| long || groups(t) >= enough)
            .unwrap_or(16) as i64;
        // Between one and two rounds of 128 square 128 × 128 tiles, an f32 product takes twice
        // as many 128 × 64 ones with K slices of 8: [2048, 512] by [512, 1536] (192 square
        // tiles) took 0.107 ms so and 0.138 square, where [2048, 512] by [512, 2048] (256)
        // stayed faster square (H100, kernels/perf/mega-products-tall-tiles.md).
        let tall_pays = !software
            && !long
            && self.dtype == DType::F32
            && d.batch == 1
            && (enough..2 * enough).contains(&groups(128));
        let coop_frags = if self.layout.b_trans { 4 } else { 2 };
        let route_rank = move |v: &Variant| -> Result<i64> {
            let design = Design::parse(v)?;
            Ok(match (software, design.route, design.unroll) {
                (true, Route::Tiled, _) => 0,
                (true, _, _) => 1,
                (false, Route::CoopGlobal, _) => 0,
                (false, Route::Vec4, true) if design.wide => 1,
                (false, Route::Vec4, true) => 2,
                (false, Route::Vec4, false) => 3,
                (false, Route::Tiled, _) => 4,
                (false, Route::Coop, _) => 5,
            })
        };
        Request {
            key: self.key(),
            fixed: vec![
                dtype_value(self.dtype),
                ("epilogue", Param::Str(self.epilogue.name().into())),
            ],
            filters: vec![filter(
                "coop_global needs M, N and K multiples of 16",
                move |v| fits(v, &d),
            )],
            order: vec![
                prefer(
                    "GPU: coop_global, vec4 unrolled (wide reads first), vec4, tiled; software adapter: tiled",
                    move |v| Ok(-route_rank(v)?),
                ),
                prefer(
                    "on a GPU, f32 of 128 to 255 square 128 × 128 tiles (a batch of one, K not long): 128 × 64 tiles with K slices of 8; square tiles otherwise",
                    move |v| {
                        let design = Design::parse(v)?;
                        Ok(if design.tile_n == design.tile {
                            0
                        } else if tall_pays && design.tk == 8 {
                            1
                        } else {
                            -1
                        })
                    },
                ),
                prefer(
                    "the C tile nearest the largest with ≥ 128 workgroups (8 on a software adapter), the largest for f32 with ≥ 2^19 outputs and K ≥ 1536 (K cut to fill the device); coop_global: 2 × 2 fragments a subgroup (4 × 4 with B transposed)",
                    move |v| {
                        let design = Design::parse(v)?;
                        let tile = i64::from(design.tile);
                        Ok(if design.route == Route::CoopGlobal {
                            -i64::from(design.reg != coop_frags)
                        } else {
                            -(tile.max(target) / tile.min(target).max(1))
                        })
                    },
                ),
                prefer("a K slice of 16", |v| {
                    Ok(-(i64::from(Design::parse(v)?.tk) - 16).abs())
                }),
                prefer("16 × 16 threads", |v| {
                    Ok(-(16 - i64::from(Design::parse(v)?.wg)).abs())
                }),
            ],
            left_open: &["epilogue"],
        }
    }
}

/// The variant the selector picks for a call. An epilogue rides on the tuned entries of the
/// plain product (they name plain variants).
pub fn choose(sel: &select::Selector<'_>, call: &Call, named: Option<&str>) -> Result<Choice> {
    sel.choose(call, named)
}

/// Whether `variant` takes a call of these dimensions: routes that load whole cooperative
/// fragments from the buffers need M, N and K to be multiples of 16.
pub fn fits(variant: &Variant, d: &MatmulDims) -> Result<bool> {
    crate::launch::sizes_fit(variant, &[d.m, d.n, d.k])
}

/// The tuned-table bucket of a call: each size rounded up to a power of two.
pub fn bucket(d: &MatmulDims) -> Bucket {
    Bucket::new(&[
        ('m', select::bucket(d.m)),
        ('n', select::bucket(d.n)),
        ('k', select::bucket(d.k)),
    ])
}
