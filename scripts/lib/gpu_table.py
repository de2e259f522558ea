"""One table from a bench-gpu.sh run: Kiln's fastest correct variant per shape beside PyTorch.

    python3 scripts/lib/gpu_table.py OUT_DIR

Reads OUT_DIR/matmul.jsonl and OUT_DIR/attention.jsonl (`kiln bench ... --json` objects, one
after another) and OUT_DIR/anchors.jsonl (torch_anchors.py lines); prints a Markdown table.
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


if __name__ == "__main__":
    main(sys.argv[1])
