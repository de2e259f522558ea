"""One table from a bench-gpu.sh run: Kiln's fastest correct variant per shape beside PyTorch.

    python3 scripts/lib/gpu_table.py OUT_DIR

Reads OUT_DIR/matmul.jsonl and OUT_DIR/attention.jsonl (`kiln bench ... --json` objects, one
after another) and OUT_DIR/anchors.jsonl (torch_anchors.py lines); prints a Markdown table. Then,
from OUT_DIR/models.jsonl (the demos' `--bench --json`) and OUT_DIR/models-torch.jsonl
(hf-encoder-time.py, flash-torch-step.py), the whole-model table; from OUT_DIR/decode.jsonl
(`kiln bench decode --json`) and OUT_DIR/decode-torch.jsonl (torch-decode-anchors.py), the
decoding table.
"""
import json
import os
import sys


def objects(path):
    """The JSON objects of a file that holds several, pretty-printed one after another."""
    if not os.path.exists(path):
        return []
    text, dec, i, out = open(path).read(), json.JSONDecoder(), 0, []
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        try:
            obj, i = dec.raw_decode(text, i)
        except ValueError:
            # A run that died mid-object: skip to the next line.
            nxt = text.find("\n{", i)
            if nxt < 0:
                break
            i = nxt + 1
            continue
        out.append(obj)
    return out


def main(out):
    anchors = {a["what"]: a for a in objects(os.path.join(out, "anchors.jsonl")) if "what" in a}
    rows = []
    for r in objects(os.path.join(out, "matmul.jsonl")):
        s, best = r["shape"], r.get("fastest")
        if s["batch"] == 4 and s["k"] == 256:
            name, ref = "waves frame 4×[1024,256]·[256,1024]", f"wave frame f32 4x1024x{s['k']}x1024"
            ref_name = "torch.bmm"
        else:
            name = f"matmul {s['m']}×{s['n']}×{s['k']}" + (" Bᵀ" if r.get("b_transposed") else "")
            ref = f"gemm {r['dtype']} {s['m']}x{s['n']}x{s['k']}"
            ref_name = "cuBLAS " + ("SGEMM" if r["dtype"] == "f32" else "HGEMM")
        cpu_ms = r["cpu"]["median_ms"]
        if best is None:
            rows.append([name, r["dtype"], "—", "no correct variant", "", "", "", "", "", "", ""])
            continue
        a = anchors.get(ref, {}).get("ms")
        rows.append([name, r["dtype"], "—", best["variant"], f"{best['median_ms']:.4g}",
                     f"{best['gflops'] / 1e3:.1f}", ref_name, f"{a:.4g}" if a else "—",
                     f"{best['median_ms'] / a:.2f}×" if a else "—", f"{best['rel_l2_error']:.1e}",
                     f"{cpu_ms:,.0f} ({cpu_ms / best['median_ms']:,.0f}×)"])
    for r in objects(os.path.join(out, "attention.jsonl")):
        s, dt = r["shape"], r["dtype"]
        p = {x["path"]: x for x in r["paths"]}
        fl = p["flash"]
        best_ms, best_name = fl["timing"]["median_ms"], "+".join(v["variant"] for v in fl["variants"])
        # A sweep's fastest correct variant of each family replaces the selector's when faster.
        fams = {}
        for sw in r.get("sweep", []):
            if "median_ms" in sw and not sw.get("wrong"):
                if sw["family"] not in fams or sw["median_ms"] < fams[sw["family"]]["median_ms"]:
                    fams[sw["family"]] = sw
        backward = r["pass"] != "forward"
        ref_backend = "efficient" if dt == "f32" else "flash"
        key = f"sdpa {ref_backend} {dt} B{s['b']} H{s['h']} N{s['n']} D{s['d']} causal={r['causal']}"
        a = anchors.get(key, {}).get("fwdbwd_ms" if backward else "fwd_ms")
        name = f"attention B{s['b']} H{s['h']} N{s['n']} D{s['d']}" + (" causal" if r["causal"] else "")
        cpu_ms = p["cpu"]["timing"]["median_ms"]
        tflops = fl["timing"]["tflops"]
        rows.append([name, dt, r["pass"], best_name, f"{best_ms:.4g}", f"{tflops:.1f}",
                     f"SDPA {ref_backend}", f"{a:.4g}" if a else "—",
                     f"{best_ms / a:.2f}×" if a else "—", f"{fl['rel_l2_error']:.1e}",
                     f"{cpu_ms:,.0f} ({cpu_ms / best_ms:,.0f}×)"])
        if fams:
            rows[-1][3] += " (sweep: " + ", ".join(f"{f} {v['variant']} {v['median_ms']:.3f} ms" for f, v in fams.items()) + ")"
    head = ["shape", "dtype", "pass", "Kiln variant", "Kiln ms", "TFLOP/s", "PyTorch",
            "PyTorch ms", "Kiln / PyTorch time", "rel L2", "CPU ms (GPU/CPU)"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    dev = next((o for o in objects(os.path.join(out, "anchors.jsonl")) if "device" in o), {})
    print()
    print(f"Kiln: GPU timestamps, median after warm-up, fastest correct variant. PyTorch "
          f"{dev.get('torch', '?')} on {dev.get('device', '?')}: CUDA events, median, TF32 off. "
          f"CPU: kiln::cpu single-threaded, wall clock, sampled rows / slices scaled to the whole.")


def eager_step_ms(torch, preset):
    """PyTorch's eager training step for a flash preset on the GPU: the graph anchors' eager run
    (fused AdamW, wall clock) where the file has one, else the older eager anchor's time."""
    for t in torch:
        if t.get("what") == "train step" and t.get("preset") == preset and t.get("how") == "eager fused adamw":
            return t["wall_ms"]
    for t in torch:
        if (t.get("what", "").startswith("pytorch eager training step") and t.get("preset") == preset
                and t["device"] == "cuda"):
            return t["ms"]
    return None


def models(out):
    """The whole-model rows: each demo's unit of work beside PyTorch eager and PyTorch's
    CUDA-graph replay on the same GPU (torch-graph-anchors.py)."""
    kiln = objects(os.path.join(out, "models.jsonl"))
    torch = [o for o in objects(os.path.join(out, "models-torch.jsonl")) if "what" in o]
    if not kiln:
        return

    def nearest(pred, n):
        return min((t for t in torch if pred(t)), key=lambda t: abs(t["tokens"] - n), default=None)

    def counts(per):
        return (f"{per.get('dispatches', '?')} / {per.get('submissions', '?')} / "
                f"{per.get('buffers_created', '?')} / {per.get('bind_groups_created', '?')}")

    def split(h):
        # wgpu's encoding per launch and one queue.submit, where the bench split them.
        if not h or h.get("encode_us_per_launch") is None:
            return ""
        return (f" (encode {fmt(h['encode_us_per_launch'])}, "
                f"submit {fmt(h['us_per_submission'])} ×{h['submissions']})")

    def host(b):
        return fmt(b.get("host_us_per_launch")) + split(b.get("host")) if b else "—"

    rows = []
    for r in kiln:
        c = r.get("checks") or r.get("comparison") or {}
        if r.get("demo") == "attention":
            n = len(c.get("ids", []))
            synthetic = c.get("synthetic_weights")
            # Each dtype beside PyTorch's graph in the same dtype (eager is f32 only).
            dtype = c.get("dtype", "f32")
            what = (f"attention forward, {n} tokens, " + ("built-in weights" if synthetic else "MiniLM-L6")
                    + f", {dtype}")
            eager = None if synthetic or dtype != "f32" else nearest(
                lambda t: t.get("what") == "hf eager forward" and t["device"] == "cuda", n)
            graph = None if synthetic else nearest(
                lambda t: t.get("what") == "minilm forward" and t.get("how") == "cuda graph"
                and t.get("dtype") == dtype, n)
            cpu_ref = None if synthetic else nearest(
                lambda t: t.get("what") == "hf eager forward" and t["device"] == "cpu", n)
            lazy = c.get("recorded_each_call") or {}
            g = r["gpu"]["median_ms"]
            rows.append([what, f"{g:.3f}", fmt(lazy.get("wall_ms_median")),
                         fmt(c.get("gpu_timestamp_ms_per_forward")),
                         counts(c.get("per_forward", {}))
                         + (f" (heatmap forward {c['launches_per_heatmap_forward']})"
                            if "launches_per_heatmap_forward" in c else ""),
                         f"{host(c.get('wall_breakdown_ms_per_forward'))} / {host(lazy.get('wall_breakdown_ms_per_forward'))}",
                         f"{eager['wall_ms']:.3f} ({eager['tokens']} tokens)" if eager else "—",
                         f"{graph['wall_ms']:.3f} ({graph['tokens']} tokens)" if graph else "—",
                         f"{graph['wall_ms'] / g:.3g}×" if graph else "—",
                         f"{r['cpu']['median_ms']:.2f} ({r['cpu']['median_ms'] / g:.3g}×)"
                         + (f"; HF CPU {cpu_ref['threads']} threads {cpu_ref['wall_ms']:.2f}" if cpu_ref else "")])
        elif "comparison" in r:
            cmp_ = r["comparison"]
            prof = cmp_.get("gpu_step") or {}
            eager = eager_step_ms(torch, cmp_["preset"])
            graph = next((t for t in torch if t.get("what") == "train step" and t.get("preset") == cmp_["preset"]
                          and t.get("how") == "cuda graph"), None)
            g = cmp_["gpu_median_ms_per_step"]
            rows.append([f"flash {cmp_['preset']} training step (drift {cmp_['drift']:.1e})", f"{g:.3f}",
                         fmt(cmp_.get("gpu_recorded_median_ms_per_step")),
                         # The profile's GPU time beside the wall clock of its own runs (the
                         # profile refuses a run whose GPU time is over that run's wall).
                         f"{fmt(prof.get('gpu_ms'))} (wall {fmt(prof.get('wall_ms'))})",
                         counts(prof.get("counts", {})),
                         f"{fmt((cmp_.get('gpu_host') or {}).get('us_per_launch'))}{split(cmp_.get('gpu_host'))} / —",
                         fmt(eager), fmt(graph and graph["wall_ms"]),
                         f"{graph['wall_ms'] / g:.3g}×" if graph else "—",
                         f"{cmp_['cpu_median_ms_per_step']:.1f} ({cmp_['speedup']:.1f}×), {cmp_['cpu']['path']}"])
        elif r.get("demo") == "waves":
            per = c.get("per_frame", {})
            wall = c.get("wall_ms_per_frame")
            rows.append([f"waves frame ({r['settings']})", fmt(wall), "—",
                         f"{r['gpu']['median_ms']:.4f} ({1e3 / r['gpu']['median_ms']:,.0f} frames/s)",
                         counts(per), "—", "—", "—", "—",
                         f"{r['cpu']['median_ms']:.1f} ({r['cpu']['median_ms'] / r['gpu']['median_ms']:,.0f}×)"])
    head = ["work", "Kiln wall ms (plan)", "Kiln wall ms (recorded each call)", "Kiln GPU ms (timestamps)",
            "launches / submissions / buffers / bind groups made", "host µs per launch (plan / recorded)",
            "PyTorch eager ms", "PyTorch CUDA graph ms", "graph / Kiln time", "Kiln CPU path ms (GPU/CPU)"]
    print()
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print()
    print("Whole models: Kiln wall clock from the inputs uploaded to the result read back, median "
          "after warm-up; counts per unit after its first run; host µs per launch = (record + "
          "submit) / launches (encode: wgpu's encoding per launch, and each of the submissions' "
          "queue.submit in µs). PyTorch f32 (TF32 off), or f16 beside Kiln's f16 rows, wall clock on the same terms: eager "
          "(hf-encoder-time.py, torch-graph-anchors.py's fused AdamW step) and the same work "
          "captured once in a CUDA graph and replayed (torch-graph-anchors.py).")


def decode(out):
    kiln = [o for o in objects(os.path.join(out, "decode.jsonl")) if o.get("what") == "decode attention"]
    if not kiln:
        return
    torch = [o for o in objects(os.path.join(out, "decode-torch.jsonl")) if "what" in o]
    copy = next((o for o in torch if o["what"] == "copy"), None)

    def anchor(what, r):
        return next((o for o in torch if o["what"] == what and o["dtype"] == r["dtype"]
                     and (o["b"], o["hq"], o["hkv"], o["d"], o["n"]) ==
                     (r["b"], r["hq"], r["hkv"], r["d"], r["n"])), None)

    print()
    print("| dtype | B, Hq/Hkv, D | N | Kiln ms | Kiln GB/s | split variant | PyTorch SDPA ms | GB/s "
          "| Kiln / SDPA | SDPA, K/V expanded ms | CPU path ms | GPU/CPU | error |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in kiln:
        sdpa = anchor("decode attention sdpa", r)
        expanded = anchor("decode attention sdpa, K/V expanded to Hq", r)
        best = min([r["median_ms"]] + [s["median_ms"] for s in r.get("sweep", []) if not s.get("wrong")])
        cells = [r["dtype"], f"{r['b']}, {r['hq']}/{r['hkv']}, {r['d']}", str(r["n"]),
                 f"{fmt(r['median_ms'])} (best {fmt(best)})", f"{r['gbps']:.0f}", r["variants"]["split"]]
        if sdpa:
            cells += [fmt(sdpa["ms"]), f"{sdpa['gbps']:.0f}", f"{r['median_ms'] / sdpa['ms']:.2f}"]
        else:
            cells += ["—", "—", "—"]
        cells += [fmt(expanded and expanded["ms"]), fmt(r["cpu_ms"]), f"{r['gpu_over_cpu']:.3g}x",
                  f"{r['rel_l2_error']:.1e}"]
        print("| " + " | ".join(cells) + " |")
    print()
    print("Decoding: one new row per sequence against a cache of N keys; Kiln's split and combine "
          "passes timed together with GPU timestamps (median of 30 after warm-up; 'best': the "
          "fastest correct split variant of the sweep), PyTorch with CUDA events in the same "
          "command, TF32 off; GB/s counts the bytes of K and V read once."
          + (f" Device copy rate (read + write): {copy['gbps']:.0f} GB/s." if copy else ""))


def fmt(x):
    return f"{x:.3f}" if isinstance(x, (int, float)) else "—"


if __name__ == "__main__":
    main(sys.argv[1])
    models(sys.argv[1])
    decode(sys.argv[1])
