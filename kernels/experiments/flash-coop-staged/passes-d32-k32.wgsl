enable f16;
enable wgpu_cooperative_matrix;
// Kiln FlashAttention-2 forward, cooperative-matrix route, f16, head dim 32: 64 query rows
// per workgroup, keys walked 32 at a time.
//
// 4 subgroups of 32; subgroup s owns query rows 16s..16s+15 of the block. Per key block it
// multiplies its Q fragments (loaded once) by Kᵀ fragments read straight from the buffer into
// a 16 × 32 score block, stores it to workgroup memory, and its invocations take the
// online softmax two per row (invocation i: row i / 2, half i % 2 of the keys and of the output
// columns). The probabilities go back to workgroup memory as f16, are multiplied by V
// fragments, and each invocation adds its part of that product to its output registers after
// scaling them by the row's correction: accumulator fragments cannot be scaled per row.
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
// Pitches (elements) of each subgroup's rows: f32 scores or P·V, f16 probabilities. The
// padding keeps rows 16-byte aligned.
const SP: u32 = 36u;
const PP: u32 = 40u;
// A finite "minus infinity": masked scores and the max of a row that has seen nothing yet.
const NEG: f32 = -3.0e38;

var<workgroup> scratch: array<f32, 2304>;
var<workgroup> probs: array<f16, 2560>;

fn visible(i: u32, j: u32) -> bool {
    return j < p.nk;
}


@compute @workgroup_size(128, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(subgroup_id) sg: u32,
    @builtin(subgroup_invocation_id) lane: u32,
) {
    let q0 = wid.x * BQ;
    let bh = wid.y;
    // A band past Nq (a multiple of 16) loads the last band again and stores nothing.
    let band = q0 + sg * 16u;
    let q_base = (bh * p.nq + min(band, p.nq - 16u)) * D;
    let kv_base = bh * p.nk * D;
    let qf_0 = coopLoadT<coop_mat16x16<f16, A>>(&q[q_base + 0u], D);
    let qf_1 = coopLoadT<coop_mat16x16<f16, A>>(&q[q_base + 16u], D);

    let r = lane / 2u;
    let half = lane % 2u;
    let row = band + r;
    let s_row = sg * 16u * SP + r * SP;
    let p_row = sg * 16u * PP + r * PP;
    var m = NEG;
    var l = 0.0;
    var o_0 = vec4<f32>(0.0);
    var o_1 = vec4<f32>(0.0);
    var o_2 = vec4<f32>(0.0);
    var o_3 = vec4<f32>(0.0);

    let k_end = p.nk;

    for (var k0 = 0u; k0 < k_end; k0 += BK) {
        // Scores of this band against the key block. A fragment wholly past Nk reads the last
        // whole one instead; its keys are masked below.
        {
            let key = min(k0 + 0u, p.nk - 16u);
            var s = coop_mat16x16<f32, C>();
            // Kᵀ (D × keys) is K read column-major with stride D.
            s = coopMultiplyAdd(qf_0, coopLoad<coop_mat16x16<f16, B>>(&k[kv_base + key * D + 0u], D), s);
            // Kᵀ (D × keys) is K read column-major with stride D.
            s = coopMultiplyAdd(qf_1, coopLoad<coop_mat16x16<f16, B>>(&k[kv_base + key * D + 16u], D), s);
            coopStoreT(s, &scratch[sg * 16u * SP + 0u], SP);
        }
        {
            let key = min(k0 + 16u, p.nk - 16u);
            var s = coop_mat16x16<f32, C>();
            // Kᵀ (D × keys) is K read column-major with stride D.
            s = coopMultiplyAdd(qf_0, coopLoad<coop_mat16x16<f16, B>>(&k[kv_base + key * D + 0u], D), s);
            // Kᵀ (D × keys) is K read column-major with stride D.
            s = coopMultiplyAdd(qf_1, coopLoad<coop_mat16x16<f16, B>>(&k[kv_base + key * D + 16u], D), s);
            coopStoreT(s, &scratch[sg * 16u * SP + 16u], SP);
        }
        workgroupBarrier();

        // Online softmax: this invocation's half of its row's scores.
        let key0 = k0 + half * 16u;
        var mb = NEG;
        let ok_0 = visible(row, key0 + 0u);
        let s_0 = select(NEG, scratch[s_row + half * 16u + 0u] * p.scale_log2, ok_0);
        mb = max(mb, s_0);
        let ok_1 = visible(row, key0 + 1u);
        let s_1 = select(NEG, scratch[s_row + half * 16u + 1u] * p.scale_log2, ok_1);
        mb = max(mb, s_1);
        let ok_2 = visible(row, key0 + 2u);
        let s_2 = select(NEG, scratch[s_row + half * 16u + 2u] * p.scale_log2, ok_2);
        mb = max(mb, s_2);
        let ok_3 = visible(row, key0 + 3u);
        let s_3 = select(NEG, scratch[s_row + half * 16u + 3u] * p.scale_log2, ok_3);
        mb = max(mb, s_3);
        let ok_4 = visible(row, key0 + 4u);
        let s_4 = select(NEG, scratch[s_row + half * 16u + 4u] * p.scale_log2, ok_4);
        mb = max(mb, s_4);
        let ok_5 = visible(row, key0 + 5u);
        let s_5 = select(NEG, scratch[s_row + half * 16u + 5u] * p.scale_log2, ok_5);
        mb = max(mb, s_5);
        let ok_6 = visible(row, key0 + 6u);
        let s_6 = select(NEG, scratch[s_row + half * 16u + 6u] * p.scale_log2, ok_6);
        mb = max(mb, s_6);
        let ok_7 = visible(row, key0 + 7u);
        let s_7 = select(NEG, scratch[s_row + half * 16u + 7u] * p.scale_log2, ok_7);
        mb = max(mb, s_7);
        let ok_8 = visible(row, key0 + 8u);
        let s_8 = select(NEG, scratch[s_row + half * 16u + 8u] * p.scale_log2, ok_8);
        mb = max(mb, s_8);
        let ok_9 = visible(row, key0 + 9u);
        let s_9 = select(NEG, scratch[s_row + half * 16u + 9u] * p.scale_log2, ok_9);
        mb = max(mb, s_9);
        let ok_10 = visible(row, key0 + 10u);
        let s_10 = select(NEG, scratch[s_row + half * 16u + 10u] * p.scale_log2, ok_10);
        mb = max(mb, s_10);
        let ok_11 = visible(row, key0 + 11u);
        let s_11 = select(NEG, scratch[s_row + half * 16u + 11u] * p.scale_log2, ok_11);
        mb = max(mb, s_11);
        let ok_12 = visible(row, key0 + 12u);
        let s_12 = select(NEG, scratch[s_row + half * 16u + 12u] * p.scale_log2, ok_12);
        mb = max(mb, s_12);
        let ok_13 = visible(row, key0 + 13u);
        let s_13 = select(NEG, scratch[s_row + half * 16u + 13u] * p.scale_log2, ok_13);
        mb = max(mb, s_13);
        let ok_14 = visible(row, key0 + 14u);
        let s_14 = select(NEG, scratch[s_row + half * 16u + 14u] * p.scale_log2, ok_14);
        mb = max(mb, s_14);
        let ok_15 = visible(row, key0 + 15u);
        let s_15 = select(NEG, scratch[s_row + half * 16u + 15u] * p.scale_log2, ok_15);
        mb = max(mb, s_15);
        mb = max(mb, subgroupShuffleXor(mb, 1u));
        let m_new = max(m, mb);
        let alpha = exp2(m - m_new);
        m = m_new;
        var part = 0.0;
        {
            let pj = select(0.0, exp2(s_0 - m_new), ok_0);
            part += pj;
            probs[p_row + half * 16u + 0u] = f16(pj);
        }
        {
            let pj = select(0.0, exp2(s_1 - m_new), ok_1);
            part += pj;
            probs[p_row + half * 16u + 1u] = f16(pj);
        }
        {
            let pj = select(0.0, exp2(s_2 - m_new), ok_2);
            part += pj;
            probs[p_row + half * 16u + 2u] = f16(pj);
        }
        {
            let pj = select(0.0, exp2(s_3 - m_new), ok_3);
            part += pj;
            probs[p_row + half * 16u + 3u] = f16(pj);
        }
        {
            let pj = select(0.0, exp2(s_4 - m_new), ok_4);
            part += pj;
            probs[p_row + half * 16u + 4u] = f16(pj);
        }
        {
            let pj = select(0.0, exp2(s_5 - m_new), ok_5);
            part += pj;
            probs[p_row + half * 16u + 5u] = f16(pj);
        }
        {
            let pj = select(0.0, exp2(s_6 - m_new), ok_6);
            part += pj;
            probs[p_row + half * 16u + 6u] = f16(pj);
        }
        {
            let pj = select(0.0, exp2(s_7 - m_new), ok_7);
            part += pj;
            probs[p_row + half * 16u + 7u] = f16(pj);
        }
        {
            let pj = select(0.0, exp2(s_8 - m_new), ok_8);
            part += pj;
            probs[p_row + half * 16u + 8u] = f16(pj);
        }
        {
            let pj = select(0.0, exp2(s_9 - m_new), ok_9);
            part += pj;
            probs[p_row + half * 16u + 9u] = f16(pj);
        }
        {
            let pj = select(0.0, exp2(s_10 - m_new), ok_10);
            part += pj;
            probs[p_row + half * 16u + 10u] = f16(pj);
        }
        {
            let pj = select(0.0, exp2(s_11 - m_new), ok_11);
            part += pj;
            probs[p_row + half * 16u + 11u] = f16(pj);
        }
        {
            let pj = select(0.0, exp2(s_12 - m_new), ok_12);
            part += pj;
            probs[p_row + half * 16u + 12u] = f16(pj);
        }
        {
            let pj = select(0.0, exp2(s_13 - m_new), ok_13);
            part += pj;
            probs[p_row + half * 16u + 13u] = f16(pj);
        }
        {
            let pj = select(0.0, exp2(s_14 - m_new), ok_14);
            part += pj;
            probs[p_row + half * 16u + 14u] = f16(pj);
        }
        {
            let pj = select(0.0, exp2(s_15 - m_new), ok_15);
            part += pj;
            probs[p_row + half * 16u + 15u] = f16(pj);
        }
        // Each invocation keeps its half of the row sum; the halves are added at the end.
        l = l * alpha + part;
        o_0 *= alpha;
        o_1 *= alpha;
        o_2 *= alpha;
        o_3 *= alpha;
        workgroupBarrier();

        // P · V for the band, one 16-column slice of the output at a time, through scratch.
        let pf_0 = coopLoadT<coop_mat16x16<f16, A>>(&probs[sg * 16u * PP + 0u], PP);
        let pf_1 = coopLoadT<coop_mat16x16<f16, A>>(&probs[sg * 16u * PP + 16u], PP);
        {
            var pv = coop_mat16x16<f32, C>();
            pv = coopMultiplyAdd(pf_0, coopLoadT<coop_mat16x16<f16, B>>(&v[kv_base + min(k0 + 0u, p.nk - 16u) * D + 0u], D), pv);
            pv = coopMultiplyAdd(pf_1, coopLoadT<coop_mat16x16<f16, B>>(&v[kv_base + min(k0 + 16u, p.nk - 16u) * D + 0u], D), pv);
            coopStoreT(pv, &scratch[sg * 16u * SP + 0u], SP);
        }
        {
            var pv = coop_mat16x16<f32, C>();
            pv = coopMultiplyAdd(pf_0, coopLoadT<coop_mat16x16<f16, B>>(&v[kv_base + min(k0 + 0u, p.nk - 16u) * D + 16u], D), pv);
            pv = coopMultiplyAdd(pf_1, coopLoadT<coop_mat16x16<f16, B>>(&v[kv_base + min(k0 + 16u, p.nk - 16u) * D + 16u], D), pv);
            coopStoreT(pv, &scratch[sg * 16u * SP + 16u], SP);
        }
        workgroupBarrier();
        {
            let at = s_row + half * 16u + 0u;
            o_0 += vec4<f32>(scratch[at], scratch[at + 1u], scratch[at + 2u], scratch[at + 3u]);
        }
        {
            let at = s_row + half * 16u + 4u;
            o_1 += vec4<f32>(scratch[at], scratch[at + 1u], scratch[at + 2u], scratch[at + 3u]);
        }
        {
            let at = s_row + half * 16u + 8u;
            o_2 += vec4<f32>(scratch[at], scratch[at + 1u], scratch[at + 2u], scratch[at + 3u]);
        }
        {
            let at = s_row + half * 16u + 12u;
            o_3 += vec4<f32>(scratch[at], scratch[at + 1u], scratch[at + 2u], scratch[at + 3u]);
        }
        // The next block's scores overwrite scratch.
        workgroupBarrier();
    }

    l += subgroupShuffleXor(l, 1u);
    if (row < p.nq) {
        let inv = select(0.0, 1.0 / l, l > 0.0);
        let at = (bh * p.nq + row) * D + half * 16u;
        o[at + 0u] = f16(o_0[0] * inv);
        o[at + 1u] = f16(o_0[1] * inv);
        o[at + 2u] = f16(o_0[2] * inv);
        o[at + 3u] = f16(o_0[3] * inv);
        o[at + 4u] = f16(o_1[0] * inv);
        o[at + 5u] = f16(o_1[1] * inv);
        o[at + 6u] = f16(o_1[2] * inv);
        o[at + 7u] = f16(o_1[3] * inv);
        o[at + 8u] = f16(o_2[0] * inv);
        o[at + 9u] = f16(o_2[1] * inv);
        o[at + 10u] = f16(o_2[2] * inv);
        o[at + 11u] = f16(o_2[3] * inv);
        o[at + 12u] = f16(o_3[0] * inv);
        o[at + 13u] = f16(o_3[1] * inv);
        o[at + 14u] = f16(o_3[2] * inv);
        o[at + 15u] = f16(o_3[3] * inv);
        if (half == 0u) {
            lse[bh * p.nq + row] = select(bitcast<f32>(p.inf_bits), (m + log2(l)) * 0.6931471805599453, l > 0.0);
        }
    }
}
