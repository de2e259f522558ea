"""cuBLAS on the waves frame's product, for the waves README: torch.bmm of 4 × [1024, 256] ·
[256, 1024] in f32 (TF32 off) and f16, CUDA events, median of 30 after 5 warm-up runs (the
method of the shared torch_anchors.py). Run in the same command as `waves --bench`.
A reference for comparison only; nothing imports it."""
import json
import statistics

import torch

torch.backends.cuda.matmul.allow_tf32 = False


def bench(fn, warm=5, reps=30):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts)


print(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__}))
for dt, name in [(torch.float32, "f32"), (torch.float16, "f16")]:
    u = torch.randn(4, 1024, 256, device="cuda", dtype=dt)
    v = torch.randn(4, 256, 1024, device="cuda", dtype=dt)
    ms = bench(lambda: torch.bmm(u, v))
    print(json.dumps({"what": f"wave frame {name} 4x1024x256x1024", "ms": ms,
                      "tflops": 4 * 2 * 1024 * 1024 * 256 / ms / 1e9}))
