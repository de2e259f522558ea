#!/usr/bin/env python3
"""The flash demo's training step written in PyTorch, eager: the reference Kiln's step is timed
against on the GPU machine.

    python3 scripts/flash-torch-step.py [--preset medium] [--vocab 41] [--steps 50] [--device cuda]

The model is the one demos/flash/src/model.rs trains, layer for layer: token and position
embeddings; pre-norm blocks of a Q/K/V product over one [d, 3d] weight (no biases), causal
attention (scaled_dot_product_attention), the output projection, a 4·d exact-gelu MLP; a final
layer norm and a linear head; mean cross-entropy; AdamW (lr 3e-3, betas 0.9/0.99, eps 1e-8,
weight decay 0.01 on matrices only). Initialisation as Kiln's: normal(0, 0.02), the residual
outputs (wo, w2) at 0.02/sqrt(2·layers), layer norms at 1 and 0. The batch is random tokens of the
corpus's vocabulary (the step's time does not depend on which tokens).

One step, as Kiln's --bench times it: the batch copied to the device, forward, backward, the
AdamW update of every parameter, the loss read back. f32, TF32 off. Prints one JSON line:
median and min ms per step over --steps after the GPU is kept busy for 500 ms and 10 warm-up steps, wall clock (the device
synchronised at the end of each step by reading the loss).
"""
import argparse, json, math, statistics, time

import torch
import torch.nn.functional as F


def heat(device, ms=500.0):
    """Keeps the GPU busy for `ms` so its clocks are up before timing, as Kiln's benches do."""
    if device != "cuda":
        return
    x = torch.randn(4096, 4096, device=device)
    t0 = time.perf_counter()
    while (time.perf_counter() - t0) * 1e3 < ms:
        for _ in range(4):
            x = torch.tanh(x @ x)
        torch.cuda.synchronize()

PRESETS = {"small": (64, 2, 2, 64, 4), "medium": (128, 4, 4, 128, 8),
           "large": (256, 4, 4, 256, 8), "mega": (512, 8, 4, 512, 4)}


def params(d, h, layers, t, vocab, device, gen):
    def normal(*shape, std=0.02):
        return (torch.randn(*shape, generator=gen) * std).to(device).requires_grad_()
    residual = 0.02 / math.sqrt(2 * layers)
    p = {"tok": normal(vocab, d), "pos": normal(t, d)}
    for l in range(layers):
        p[f"{l}.ln1.g"] = torch.ones(d, device=device, requires_grad=True)
        p[f"{l}.ln1.b"] = torch.zeros(d, device=device, requires_grad=True)
        p[f"{l}.wqkv"] = normal(d, 3 * d)
        p[f"{l}.wo"] = normal(d, d, std=residual)
        p[f"{l}.ln2.g"] = torch.ones(d, device=device, requires_grad=True)
        p[f"{l}.ln2.b"] = torch.zeros(d, device=device, requires_grad=True)
        p[f"{l}.w1"] = normal(d, 4 * d)
        p[f"{l}.w2"] = normal(4 * d, d, std=residual)
    p["lnf.g"] = torch.ones(d, device=device, requires_grad=True)
    p["lnf.b"] = torch.zeros(d, device=device, requires_grad=True)
    p["head"] = normal(d, vocab)
    return p


def forward(p, ids, d, h, layers):
    b, t = ids.shape
    x = p["tok"][ids] + p["pos"][torch.arange(t, device=ids.device)]
    for l in range(layers):
        h1 = F.layer_norm(x, (d,), p[f"{l}.ln1.g"], p[f"{l}.ln1.b"], 1e-5)
        q, k, v = (h1 @ p[f"{l}.wqkv"]).view(b, t, 3, h, d // h).permute(2, 0, 3, 1, 4)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + o.transpose(1, 2).reshape(b, t, d) @ p[f"{l}.wo"]
        h2 = F.layer_norm(x, (d,), p[f"{l}.ln2.g"], p[f"{l}.ln2.b"], 1e-5)
        x = x + F.gelu(h2 @ p[f"{l}.w1"]) @ p[f"{l}.w2"]
    return F.layer_norm(x, (d,), p["lnf.g"], p["lnf.b"], 1e-5) @ p["head"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="medium", choices=PRESETS)
    ap.add_argument("--vocab", type=int, default=41)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    d, h, layers, t, b = PRESETS[a.preset]
    gen = torch.Generator().manual_seed(7)
    p = params(d, h, layers, t, a.vocab, a.device, gen)
    decay = [v for v in p.values() if v.dim() > 1]
    plain = [v for v in p.values() if v.dim() == 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": plain, "weight_decay": 0.0}],
                            lr=3e-3, betas=(0.9, 0.99), eps=1e-8)
    x_cpu = torch.randint(0, a.vocab, (b, t), generator=gen)
    y_cpu = torch.randint(0, a.vocab, (b, t), generator=gen)

    def step():
        x, y = x_cpu.to(a.device), y_cpu.to(a.device)
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(forward(p, x, d, h, layers).view(-1, a.vocab), y.view(-1))
        loss.backward()
        opt.step()
        return loss.item()

    heat(a.device)
    for _ in range(10):
        step()
    times, losses = [], []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        losses.append(step())
        times.append((time.perf_counter() - t0) * 1e3)
    print(json.dumps({
        "what": f"pytorch eager training step, flash preset {a.preset}",
        "preset": a.preset, "device": a.device, "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name() if a.device == "cuda" else None,
        "parameters": sum(v.numel() for v in p.values()),
        "ms": statistics.median(times), "min_ms": min(times), "steps": a.steps,
        "clock": "wall clock per step: batch to device, forward, backward, AdamW, loss read back",
        "loss_first": losses[0], "loss_last": losses[-1],
    }), flush=True)


if __name__ == "__main__":
    main()
