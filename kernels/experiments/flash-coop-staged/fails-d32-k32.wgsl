enable f16;
enable wgpu_cooperative_matrix;
// Kiln FlashAttention-2 forward, cooperative-matrix route, f16, head dim 32: 64 query rows
// per workgroup, keys walked 32 at a time.
//
// 4 subgroups of 32; subgroup s owns query rows 16s..16s+15 of the block, its Q fragments loaded
// once (through workgroup memory) and its output accumulated in 2 fragments. Each key block of K and V is read from the
// buffers once per workgroup (vec4s, into registers while the block before is multiplied) and
// stored into workgroup memory, where every subgroup loads its fragments: Kᵀ column-major from
// K's rows, V row-major. The scores go through workgroup memory to the invocations, which take
// the online softmax two per row (invocation i: row i / 2, half i % 2 of the keys) and store the
// probabilities as f16 for the P·V fragments.
//
// The rescale is lazy: a row keeps its running maximum until a block's maximum passes it by more
// than TAU (log2 units), so its probabilities stay ≤ 2^TAU; only then is the row's output scaled,
// and since accumulator fragments cannot be scaled per row, the output goes through workgroup
// memory for it — in a block where any row of the workgroup needs it, which after the first
// blocks is rare.
struct Params {
    // Batch × heads, query rows, key rows.
    bh: u32,
    nq: u32,
    nk: u32,
    // Nk − Nq: query i sees key j ≤ i + shift under the causal mask (bottom-right aligned).
    shift: i32,
    // The caller's scale, and the same times log2(e): exponentials are taken base 2.
    scale: f32,
    scale_log2: f32,
    // The bits of +∞, the LSE of a row that sees no key. WGSL has no infinity literal, and a
    // constant one could be folded away by the compiler; a value from the uniform cannot.
    inf_bits: u32,
    _pad: u32,
}


@group(0) @binding(0) var<storage, read> q: array<f16>;
@group(0) @binding(1) var<storage, read> k: array<f16>;
@group(0) @binding(2) var<storage, read> v: array<f16>;
@group(0) @binding(3) var<storage, read_write> o: array<f16>;
@group(0) @binding(4) var<storage, read_write> lse: array<f32>;
@group(0) @binding(5) var<uniform> p: Params;

const BQ: u32 = 64u;
const BK: u32 = 32u;
const D: u32 = 32u;
// vec4s per row of Q, K, V and O.
const DV: u32 = 8u;
// Pitch (vec4s) of the staged K and V rows: 16 bytes of padding spread a fragment's rows over
// the memory banks.
const KP: u32 = 10u;
// Pitches (vec4s) of each subgroup's rows of f32 scores and of f16 probabilities; K's and V's
// blocks are one array, V from V_AT.
const SP: u32 = 9u;
const PP: u32 = 10u;
// vec4s of K (and of V) per key block.
const KV_VECS: u32 = 256u;
const V_AT: u32 = 320u;
const TAU: f32 = 8.0;
// A finite "minus infinity": masked scores and the max of a row that has seen nothing yet.
const NEG: f32 = -3.0e38;

// The key block's K rows then its V rows; first the workgroup's 64 Q rows.
var<workgroup> kv_s: array<vec4<f16>, 640>;
var<workgroup> scratch: array<f32, 2304>;

// Vec4 i of scratch.
fn sc_get(i: u32) -> vec4<f32> {
    return vec4<f32>(scratch[4u * i], scratch[4u * i + 1u], scratch[4u * i + 2u], scratch[4u * i + 3u]);
}

fn sc_set(i: u32, x: vec4<f32>) {
    scratch[4u * i] = x.x;
    scratch[4u * i + 1u] = x.y;
    scratch[4u * i + 2u] = x.z;
    scratch[4u * i + 3u] = x.w;
}
var<workgroup> probs: array<f16, 2560>;
// Set by any invocation whose row needs the rescale in this block; read uniformly.
var<workgroup> rescale: u32;

fn visible(i: u32, j: u32) -> bool {
    return j < p.nk;
}

@compute @workgroup_size(128, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
    @builtin(subgroup_id) sg: u32,
    @builtin(subgroup_invocation_id) lane: u32,
) {
    let q0 = wid.x * BQ;
    let bh = wid.y;
    // A band past Nq (a multiple of 16) loads the last band again and stores nothing.
    let band = q0 + sg * 16u;
    let kv_base = bh * p.nk * DV;
    let qf_0 = coopLoadT<coop_mat16x16<f16, A>>(&q[(bh * p.nq + min(band, p.nq - 16u)) * D + 0u], D);
    var of_0 = coop_mat16x16<f32, C>();
    let qf_1 = coopLoadT<coop_mat16x16<f16, A>>(&q[(bh * p.nq + min(band, p.nq - 16u)) * D + 16u], D);
    var of_1 = coop_mat16x16<f32, C>();
    var o_0_0 = vec4<f32>();
    var o_0_1 = vec4<f32>();
    var o_1_0 = vec4<f32>();
    var o_1_1 = vec4<f32>();
    var rk_0: vec4<f16>;
    var rv_0: vec4<f16>;
    var rk_1: vec4<f16>;
    var rv_1: vec4<f16>;

    let r = lane / 2u;
    let half = lane % 2u;
    let row = band + r;
    // This subgroup's rows of scratch and probs, and this invocation's row in them.
    let s_sub = sg * 16u * SP;
    let p_sub = sg * 16u * PP;
    let s_row = s_sub + r * SP + half * 4u;
    let p_row = p_sub + r * PP + half * 4u;
    var m = NEG;
    var l = 0.0;
    if (li == 0u) {
        rescale = 0u;
    }

    let k_end = p.nk;

    workgroupBarrier();
    for (var k0 = 0u; k0 < k_end; k0 += BK) {
        let more = k0 + BK < k_end;
        if (more) {
        }
        // Scores of this band against the key block.
        {
            var s = coop_mat16x16<f32, C>();
            // Kᵀ (D × keys) is the staged K rows read column-major.
            s = coopMultiplyAdd(qf_0, coopLoad<coop_mat16x16<f16, B>>(&k[kv_base * 4u + min(k0 + 0u, p.nk - 16u) * D + 0u], D), s);
            // Kᵀ (D × keys) is the staged K rows read column-major.
            s = coopMultiplyAdd(qf_1, coopLoad<coop_mat16x16<f16, B>>(&k[kv_base * 4u + min(k0 + 0u, p.nk - 16u) * D + 16u], D), s);
            coopStoreT(s, &scratch[4u * (s_sub + 0u)], 4u * SP);
        }
        {
            var s = coop_mat16x16<f32, C>();
            // Kᵀ (D × keys) is the staged K rows read column-major.
            s = coopMultiplyAdd(qf_0, coopLoad<coop_mat16x16<f16, B>>(&k[kv_base * 4u + min(k0 + 16u, p.nk - 16u) * D + 0u], D), s);
            // Kᵀ (D × keys) is the staged K rows read column-major.
            s = coopMultiplyAdd(qf_1, coopLoad<coop_mat16x16<f16, B>>(&k[kv_base * 4u + min(k0 + 16u, p.nk - 16u) * D + 16u], D), s);
            coopStoreT(s, &scratch[4u * (s_sub + 4u)], 4u * SP);
        }
        workgroupBarrier();

        // Online softmax: this invocation's half of its row's scores.
        let key0 = k0 + half * 16u;
        var mb = NEG;
        let sv_0 = sc_get(s_row + 0u) * p.scale_log2;
        let ok_0 = visible(row, key0 + 0u);
        let s_0 = select(NEG, sv_0[0], ok_0);
        mb = max(mb, s_0);
        let ok_1 = visible(row, key0 + 1u);
        let s_1 = select(NEG, sv_0[1], ok_1);
        mb = max(mb, s_1);
        let ok_2 = visible(row, key0 + 2u);
        let s_2 = select(NEG, sv_0[2], ok_2);
        mb = max(mb, s_2);
        let ok_3 = visible(row, key0 + 3u);
        let s_3 = select(NEG, sv_0[3], ok_3);
        mb = max(mb, s_3);
        let sv_1 = sc_get(s_row + 1u) * p.scale_log2;
        let ok_4 = visible(row, key0 + 4u);
        let s_4 = select(NEG, sv_1[0], ok_4);
        mb = max(mb, s_4);
        let ok_5 = visible(row, key0 + 5u);
        let s_5 = select(NEG, sv_1[1], ok_5);
        mb = max(mb, s_5);
        let ok_6 = visible(row, key0 + 6u);
        let s_6 = select(NEG, sv_1[2], ok_6);
        mb = max(mb, s_6);
        let ok_7 = visible(row, key0 + 7u);
        let s_7 = select(NEG, sv_1[3], ok_7);
        mb = max(mb, s_7);
        let sv_2 = sc_get(s_row + 2u) * p.scale_log2;
        let ok_8 = visible(row, key0 + 8u);
        let s_8 = select(NEG, sv_2[0], ok_8);
        mb = max(mb, s_8);
        let ok_9 = visible(row, key0 + 9u);
        let s_9 = select(NEG, sv_2[1], ok_9);
        mb = max(mb, s_9);
        let ok_10 = visible(row, key0 + 10u);
        let s_10 = select(NEG, sv_2[2], ok_10);
        mb = max(mb, s_10);
        let ok_11 = visible(row, key0 + 11u);
        let s_11 = select(NEG, sv_2[3], ok_11);
        mb = max(mb, s_11);
        let sv_3 = sc_get(s_row + 3u) * p.scale_log2;
        let ok_12 = visible(row, key0 + 12u);
        let s_12 = select(NEG, sv_3[0], ok_12);
        mb = max(mb, s_12);
        let ok_13 = visible(row, key0 + 13u);
        let s_13 = select(NEG, sv_3[1], ok_13);
        mb = max(mb, s_13);
        let ok_14 = visible(row, key0 + 14u);
        let s_14 = select(NEG, sv_3[2], ok_14);
        mb = max(mb, s_14);
        let ok_15 = visible(row, key0 + 15u);
        let s_15 = select(NEG, sv_3[3], ok_15);
        mb = max(mb, s_15);
        mb = max(mb, subgroupShuffleXor(mb, 1u));
        // The row's first visible block takes its maximum (the output is still zero); after
        // that the maximum moves only when the block's passes it by more than TAU.
        let m_new = max(m, mb);
        let alpha = exp2(m - m_new);
        m = m_new;
        var part = 0.0;
        {
            let p0 = select(0.0, exp2(s_0 - m), ok_0);
            let p1 = select(0.0, exp2(s_1 - m), ok_1);
            let p2 = select(0.0, exp2(s_2 - m), ok_2);
            let p3 = select(0.0, exp2(s_3 - m), ok_3);
            part += (p0 + p1) + (p2 + p3);
            probs[4u * (p_row + 0u)] = f16(p0);
            probs[4u * (p_row + 0u) + 1u] = f16(p1);
            probs[4u * (p_row + 0u) + 2u] = f16(p2);
            probs[4u * (p_row + 0u) + 3u] = f16(p3);
        }
        {
            let p0 = select(0.0, exp2(s_4 - m), ok_4);
            let p1 = select(0.0, exp2(s_5 - m), ok_5);
            let p2 = select(0.0, exp2(s_6 - m), ok_6);
            let p3 = select(0.0, exp2(s_7 - m), ok_7);
            part += (p0 + p1) + (p2 + p3);
            probs[4u * (p_row + 1u)] = f16(p0);
            probs[4u * (p_row + 1u) + 1u] = f16(p1);
            probs[4u * (p_row + 1u) + 2u] = f16(p2);
            probs[4u * (p_row + 1u) + 3u] = f16(p3);
        }
        {
            let p0 = select(0.0, exp2(s_8 - m), ok_8);
            let p1 = select(0.0, exp2(s_9 - m), ok_9);
            let p2 = select(0.0, exp2(s_10 - m), ok_10);
            let p3 = select(0.0, exp2(s_11 - m), ok_11);
            part += (p0 + p1) + (p2 + p3);
            probs[4u * (p_row + 2u)] = f16(p0);
            probs[4u * (p_row + 2u) + 1u] = f16(p1);
            probs[4u * (p_row + 2u) + 2u] = f16(p2);
            probs[4u * (p_row + 2u) + 3u] = f16(p3);
        }
        {
            let p0 = select(0.0, exp2(s_12 - m), ok_12);
            let p1 = select(0.0, exp2(s_13 - m), ok_13);
            let p2 = select(0.0, exp2(s_14 - m), ok_14);
            let p3 = select(0.0, exp2(s_15 - m), ok_15);
            part += (p0 + p1) + (p2 + p3);
            probs[4u * (p_row + 3u)] = f16(p0);
            probs[4u * (p_row + 3u) + 1u] = f16(p1);
            probs[4u * (p_row + 3u) + 2u] = f16(p2);
            probs[4u * (p_row + 3u) + 3u] = f16(p3);
        }
        // Each invocation keeps its half of the row sum; the halves are added at the end.
        l = l * alpha + part;
        o_0_0 *= alpha;
        o_0_1 *= alpha;
        o_1_0 *= alpha;
        o_1_1 *= alpha;
        workgroupBarrier();
        let pf_0 = coopLoadT<coop_mat16x16<f16, A>>(&probs[4u * (p_sub + 0u)], 4u * PP);        let pf_1 = coopLoadT<coop_mat16x16<f16, A>>(&probs[4u * (p_sub + 4u)], 4u * PP);        {
            var pv = coop_mat16x16<f32, C>();
            pv = coopMultiplyAdd(pf_0, coopLoadT<coop_mat16x16<f16, B>>(&v[kv_base * 4u + min(k0 + 0u, p.nk - 16u) * D + 0u], D), pv);
            pv = coopMultiplyAdd(pf_1, coopLoadT<coop_mat16x16<f16, B>>(&v[kv_base * 4u + min(k0 + 16u, p.nk - 16u) * D + 0u], D), pv);
            coopStoreT(pv, &scratch[4u * (s_sub + 0u)], 4u * SP);
        }
        {
            var pv = coop_mat16x16<f32, C>();
            pv = coopMultiplyAdd(pf_0, coopLoadT<coop_mat16x16<f16, B>>(&v[kv_base * 4u + min(k0 + 0u, p.nk - 16u) * D + 16u], D), pv);
            pv = coopMultiplyAdd(pf_1, coopLoadT<coop_mat16x16<f16, B>>(&v[kv_base * 4u + min(k0 + 16u, p.nk - 16u) * D + 16u], D), pv);
            coopStoreT(pv, &scratch[4u * (s_sub + 4u)], 4u * SP);
        }
        workgroupBarrier();
        o_0_0 += sc_get(s_sub + r * SP + 0u + half);
        o_0_1 += sc_get(s_sub + r * SP + 2u + half);
        o_1_0 += sc_get(s_sub + r * SP + 4u + half);
        o_1_1 += sc_get(s_sub + r * SP + 6u + half);
        workgroupBarrier();
        // Every subgroup is done with this block's K, V, scores and probabilities.
        workgroupBarrier();
        if (more) {
        }
        workgroupBarrier();
    }

    l += subgroupShuffleXor(l, 1u);
    let inv = select(0.0, 1.0 / l, l > 0.0);
    if (row < p.nq) {
        o[((bh * p.nq + row) * DV + 0u + half) * 4u + 0u] = f16(o_0_0[0] * inv);
        o[((bh * p.nq + row) * DV + 0u + half) * 4u + 1u] = f16(o_0_0[1] * inv);
        o[((bh * p.nq + row) * DV + 0u + half) * 4u + 2u] = f16(o_0_0[2] * inv);
        o[((bh * p.nq + row) * DV + 0u + half) * 4u + 3u] = f16(o_0_0[3] * inv);
        o[((bh * p.nq + row) * DV + 2u + half) * 4u + 0u] = f16(o_0_1[0] * inv);
        o[((bh * p.nq + row) * DV + 2u + half) * 4u + 1u] = f16(o_0_1[1] * inv);
        o[((bh * p.nq + row) * DV + 2u + half) * 4u + 2u] = f16(o_0_1[2] * inv);
        o[((bh * p.nq + row) * DV + 2u + half) * 4u + 3u] = f16(o_0_1[3] * inv);
        o[((bh * p.nq + row) * DV + 4u + half) * 4u + 0u] = f16(o_1_0[0] * inv);
        o[((bh * p.nq + row) * DV + 4u + half) * 4u + 1u] = f16(o_1_0[1] * inv);
        o[((bh * p.nq + row) * DV + 4u + half) * 4u + 2u] = f16(o_1_0[2] * inv);
        o[((bh * p.nq + row) * DV + 4u + half) * 4u + 3u] = f16(o_1_0[3] * inv);
        o[((bh * p.nq + row) * DV + 6u + half) * 4u + 0u] = f16(o_1_1[0] * inv);
        o[((bh * p.nq + row) * DV + 6u + half) * 4u + 1u] = f16(o_1_1[1] * inv);
        o[((bh * p.nq + row) * DV + 6u + half) * 4u + 2u] = f16(o_1_1[2] * inv);
        o[((bh * p.nq + row) * DV + 6u + half) * 4u + 3u] = f16(o_1_1[3] * inv);
    }
    if (row < p.nq && half == 0u) {
        lse[bh * p.nq + row] = select(bitcast<f32>(p.inf_bits), (m + log2(l)) * 0.6931471805599453, l > 0.0);
    }
}
