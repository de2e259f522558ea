"""Decode attention on the GPU with PyTorch, the anchor for Kiln's flash-decoding and GQA kernels
(a copy of the shared reference script, run by scripts/bench-gpu.sh's decode stage).

    python3 scripts/torch-decode-anchors.py

One new query token per sequence against a KV cache of N keys: q [B, Hq, 1, D], k and v
[B, Hkv, N, D], grouped-query attention (Hq / Hkv query heads share one KV head). Times
scaled_dot_product_attention with enable_gqa (and with K/V expanded to Hq heads, what a plain
implementation does), f16 and f32, TF32 off, CUDA events, median of 50 after warm-up. Decode is
memory-bound: the JSON line carries the bytes of K and V read and the achieved GB/s. Also the
device-to-device copy rate, the practical ceiling. One JSON line per figure.
"""
import json, statistics, torch
import torch.nn.functional as F

dev = "cuda"
torch.backends.cuda.matmul.allow_tf32 = False


def bench(fn, warm=10, reps=50):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts)


def out(**kw):
    kw["torch"] = torch.__version__
    print(json.dumps(kw), flush=True)


x = torch.empty(1 << 28, dtype=torch.float32, device=dev); y = torch.empty_like(x)
for _ in range(20):  # clocks up
    y.copy_(x)
ms = bench(lambda: y.copy_(x))
out(what="copy", bytes=2 * x.numel() * 4, ms=ms, gbps=2 * x.numel() * 4 / ms / 1e6)
del x, y

for dtype, dname in ((torch.float16, "f16"), (torch.float32, "f32")):
    for (b, hq, hkv, d) in ((1, 32, 8, 128), (8, 32, 8, 128), (1, 16, 16, 64)):
        for n in (1024, 8192, 32768, 131072):
            if b * hkv * n * d * 2 * (2 if dname == "f16" else 4) > 8e9:
                continue
            q = torch.randn(b, hq, 1, d, device=dev, dtype=dtype)
            k = torch.randn(b, hkv, n, d, device=dev, dtype=dtype)
            v = torch.randn(b, hkv, n, d, device=dev, dtype=dtype)
            kv_bytes = 2 * k.numel() * k.element_size()
            ms = bench(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=(hq != hkv)))
            out(what="decode attention sdpa", dtype=dname, b=b, hq=hq, hkv=hkv, d=d, n=n, ms=ms,
                kv_bytes=kv_bytes, gbps=kv_bytes / ms / 1e6)
            if hq != hkv:
                ke = k.repeat_interleave(hq // hkv, dim=1); ve = v.repeat_interleave(hq // hkv, dim=1)
                ms = bench(lambda: F.scaled_dot_product_attention(q, ke, ve))
                out(what="decode attention sdpa, K/V expanded to Hq", dtype=dname, b=b, hq=hq, hkv=hkv,
                    d=d, n=n, ms=ms, kv_bytes=kv_bytes, gbps=kv_bytes / ms / 1e6)
                del ke, ve
            del q, k, v
            torch.cuda.empty_cache()
