"""PyTorch's best practice for fixed shapes, on the same GPU: the whole-model anchors Kiln's
demos are measured against, beside eager.

    python3 scripts/torch-graph-anchors.py MODEL_DIR [--train]      (MODEL_DIR: all-MiniLM-L6-v2, f16 ok;
                                                            "-" skips MiniLM)

MiniLM-L6 forward (f32, TF32 off, SDPA attention) at the same two texts Kiln's bench-gpu.sh
uses: eager, and the same forward captured once in a CUDA graph and replayed (what a serving
stack does for a fixed shape). Wall clock per forward: ids copied in, forward, last hidden state
read back; median of 50 after warm-up. f16 under a CUDA graph too.
Training (--train): the flash demo's Medium model (scripts/flash-torch-step.py's layout) as one
CUDA-graph-captured step (forward, backward, capturable fused AdamW) against the same step eager
with fused AdamW. Wall clock: batch copied in, step, loss read back. One JSON line per figure.
"""
import json, statistics, sys, time, math
import torch, torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = "cuda"


def heat(ms=2000.0):
    x = torch.randn(4096, 4096, device=dev)
    t0 = time.perf_counter()
    while (time.perf_counter() - t0) * 1e3 < ms:
        for _ in range(4):
            x = torch.tanh(x @ x)
        torch.cuda.synchronize()


def wall(fn, reps=50, warm=10):
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter(); fn(); ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts), min(ts)


def emit(**kw):
    kw["torch"] = torch.__version__
    print(json.dumps(kw), flush=True)


def minilm(model_dir):
    from transformers import AutoModel, AutoTokenizer
    T13 = "The quick brown fox jumps over the lazy dog near the river bank today."
    base = ("Kernels are the implementations that run an operator on specific hardware, and the fastest "
            "one differs from device to device, so templates are rendered for the adapter in hand. ")
    tok = AutoTokenizer.from_pretrained(model_dir)
    for dtype, dname in ((torch.float32, "f32"), (torch.float16, "f16")):
        model = AutoModel.from_pretrained(model_dir, dtype=dtype, attn_implementation="sdpa").to(dev).eval()
        for text in (T13, base * 6):
            ids = tok(text, return_tensors="pt")
            n = int(ids["input_ids"].shape[1])
            host = {k: v.pin_memory() for k, v in ids.items()}
            with torch.inference_mode():
                if dname == "f32":
                    def eager():
                        on = {k: v.to(dev) for k, v in ids.items()}
                        return model(**on).last_hidden_state.cpu()
                    heat(500)
                    med, mn = wall(eager)
                    emit(what="minilm forward", how="eager sdpa", dtype=dname, tokens=n, wall_ms=med, min_ms=mn)
            static = {k: v.to(dev) for k, v in ids.items()}
            s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
            with torch.inference_mode():
                with torch.cuda.stream(s):
                    for _ in range(3):
                        model(**static)
                torch.cuda.current_stream().wait_stream(s)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    out = model(**static).last_hidden_state

                def replay():
                    for k in static:
                        static[k].copy_(host[k], non_blocking=True)
                    g.replay()
                    return out.cpu()
                heat(500)
                med, mn = wall(replay)
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                gpu = []
                for _ in range(30):
                    a.record(); g.replay(); b.record(); torch.cuda.synchronize(); gpu.append(a.elapsed_time(b))
            emit(what="minilm forward", how="cuda graph", dtype=dname, tokens=n, wall_ms=med, min_ms=mn,
                 gpu_ms=statistics.median(gpu))


PRESETS = {"small": (64, 2, 2, 64, 4), "medium": (128, 4, 4, 128, 8),
           "large": (256, 4, 4, 256, 8), "mega": (512, 8, 4, 512, 4)}


def train(preset, vocab=41):
    d, h, layers, t, b = PRESETS[preset]
    gen = torch.Generator().manual_seed(7)

    def normal(*shape, std=0.02):
        return (torch.randn(*shape, generator=gen) * std).to(dev).requires_grad_()
    res = 0.02 / math.sqrt(2 * layers)
    p = {"tok": normal(vocab, d), "pos": normal(t, d)}
    for l in range(layers):
        p[f"{l}.ln1.g"] = torch.ones(d, device=dev, requires_grad=True)
        p[f"{l}.ln1.b"] = torch.zeros(d, device=dev, requires_grad=True)
        p[f"{l}.wqkv"] = normal(d, 3 * d); p[f"{l}.wo"] = normal(d, d, std=res)
        p[f"{l}.ln2.g"] = torch.ones(d, device=dev, requires_grad=True)
        p[f"{l}.ln2.b"] = torch.zeros(d, device=dev, requires_grad=True)
        p[f"{l}.w1"] = normal(d, 4 * d); p[f"{l}.w2"] = normal(4 * d, d, std=res)
    p["lnf.g"] = torch.ones(d, device=dev, requires_grad=True)
    p["lnf.b"] = torch.zeros(d, device=dev, requires_grad=True)
    p["head"] = normal(d, vocab)

    def fwd(ids):
        x = p["tok"][ids] + p["pos"][torch.arange(t, device=dev)]
        for l in range(layers):
            h1 = F.layer_norm(x, (d,), p[f"{l}.ln1.g"], p[f"{l}.ln1.b"], 1e-5)
            q, k, v = (h1 @ p[f"{l}.wqkv"]).view(b, t, 3, h, d // h).permute(2, 0, 3, 1, 4)
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + o.transpose(1, 2).reshape(b, t, d) @ p[f"{l}.wo"]
            h2 = F.layer_norm(x, (d,), p[f"{l}.ln2.g"], p[f"{l}.ln2.b"], 1e-5)
            x = x + F.gelu(h2 @ p[f"{l}.w1"]) @ p[f"{l}.w2"]
        return F.layer_norm(x, (d,), p["lnf.g"], p["lnf.b"], 1e-5) @ p["head"]

    decay = [v for v in p.values() if v.dim() > 1]
    plain = [v for v in p.values() if v.dim() == 1]
    def groups():
        return [{"params": decay, "weight_decay": 0.01}, {"params": plain, "weight_decay": 0.0}]
    x_cpu = torch.randint(0, vocab, (b, t), generator=gen).pin_memory()
    y_cpu = torch.randint(0, vocab, (b, t), generator=gen).pin_memory()

    # Eager with the fused optimizer.
    opt = torch.optim.AdamW(groups(), lr=3e-3, betas=(0.9, 0.99), eps=1e-8, fused=True)

    def step():
        x, y = x_cpu.to(dev), y_cpu.to(dev)
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(fwd(x).view(-1, vocab), y.view(-1)); loss.backward(); opt.step()
        return loss.item()
    heat(500)
    med, mn = wall(step)
    emit(what="train step", preset=preset, how="eager fused adamw", wall_ms=med, min_ms=mn)

    # Whole step in one CUDA graph.
    opt = torch.optim.AdamW(groups(), lr=3e-3, betas=(0.9, 0.99), eps=1e-8, fused=True, capturable=True)
    sx, sy = x_cpu.to(dev), y_cpu.to(dev)
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            opt.zero_grad(set_to_none=False)
            loss = F.cross_entropy(fwd(sx).view(-1, vocab), sy.view(-1)); loss.backward(); opt.step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)  # as PyTorch's whole-network capture: grads from the graph's pool
    with torch.cuda.graph(g):
        sloss = F.cross_entropy(fwd(sx).view(-1, vocab), sy.view(-1)); sloss.backward(); opt.step()

    def gstep():
        sx.copy_(x_cpu, non_blocking=True); sy.copy_(y_cpu, non_blocking=True)
        g.replay(); return sloss.item()
    heat(500)
    med, mn = wall(gstep)
    a, bb = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    gpu = []
    for _ in range(30):
        a.record(); g.replay(); bb.record(); torch.cuda.synchronize(); gpu.append(a.elapsed_time(bb))
    emit(what="train step", preset=preset, how="cuda graph", wall_ms=med, min_ms=mn, gpu_ms=statistics.median(gpu))


if __name__ == "__main__":
    heat(3000)
    if len(sys.argv) > 1 and sys.argv[1] != "-":
        minilm(sys.argv[1])
    if "--train" in sys.argv:
        for pr in ("medium", "mega"):
            train(pr)
