"""cuBLAS at given product shapes, measured with PyTorch (f32, TF32 off): the reference for
Kiln's products at a model's own shapes (`kiln bench matmul --at/--bt` in the same command).

Usage: torch-product-anchors.py M,N,K,LAYOUT ...   LAYOUT: nn (A·B), tn (Aᵀ·B, A stored
[K, M]) or nt (A·Bᵀ, B stored [N, K]). Prints one JSON object per line. A reference for
comparison only; it is not part of the product and nothing imports it.
"""
import json, statistics, sys, torch

torch.backends.cuda.matmul.allow_tf32 = False
dev = "cuda"


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


print(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__}), flush=True)
# Bring the clocks up before the first timing.
x = torch.randn(4096, 4096, device=dev)
for _ in range(200):
    x @ x
torch.cuda.synchronize()
for spec in sys.argv[1:]:
    m, n, k, layout = spec.split(",")
    m, n, k = int(m), int(n), int(k)
    a = torch.randn((k, m) if layout[0] == "t" else (m, k), device=dev)
    b = torch.randn((n, k) if layout[1] == "t" else (k, n), device=dev)
    left = a.t() if layout[0] == "t" else a
    right = b.t() if layout[1] == "t" else b
    ms = bench(lambda: left @ right)
    print(json.dumps({"what": "cublas f32", "m": m, "n": n, "k": k, "layout": layout,
                      "ms": ms, "tflops": 2 * m * n * k / ms / 1e9}), flush=True)
