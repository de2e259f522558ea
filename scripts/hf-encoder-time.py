#!/usr/bin/env python3
"""Hugging Face transformers' forward pass of an encoder, eager, timed as Kiln's attention demo
times its own: the reference for the whole-model rows of scripts/bench-gpu.sh.

    python3 scripts/hf-encoder-time.py MODEL_DIR TEXT [TEXT ...]

For each text: the token ids on the host, copied to the device, the forward pass, the last hidden
state copied back — wall clock, median of 30 after the GPU is kept busy for 500 ms and 10 warm-up passes (and the CUDA-event time of
the forward alone). f32 (weights stored as f16 are loaded as f32), TF32 off, eager attention.
Also the same on the CPU with every core. Prints one JSON line per (device, text).
"""
import json, statistics, sys, time

import torch
from transformers import AutoModel, AutoTokenizer


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


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    model_dir, texts = sys.argv[1], sys.argv[2:]
    torch.backends.cuda.matmul.allow_tf32 = False
    tok = AutoTokenizer.from_pretrained(model_dir)
    devices = (["cuda"] if torch.cuda.is_available() else []) + ["cpu"]
    for device in devices:
        model = AutoModel.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="eager")
        model = model.to(device).eval()
        for text in texts:
            ids = tok(text, return_tensors="pt")
            n = int(ids["input_ids"].shape[1])

            def forward():
                on = {k: v.to(device) for k, v in ids.items()}
                return model(**on).last_hidden_state.cpu()

            with torch.inference_mode():
                heat(device)
                for _ in range(10):
                    forward()
                wall, events = [], []
                for _ in range(30):
                    t0 = time.perf_counter()
                    forward()
                    wall.append((time.perf_counter() - t0) * 1e3)
                    if device == "cuda":
                        on = {k: v.to(device) for k, v in ids.items()}
                        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                        a.record(); model(**on); b.record(); torch.cuda.synchronize()
                        events.append(a.elapsed_time(b))
            print(json.dumps({
                "what": "hf eager forward", "model": model_dir.rstrip("/").split("/")[-1],
                "device": device, "tokens": n, "dtype": "f32",
                "threads": torch.get_num_threads() if device == "cpu" else None,
                "wall_ms": statistics.median(wall),
                "cuda_event_ms": statistics.median(events) if events else None,
                "torch": torch.__version__,
            }), flush=True)


if __name__ == "__main__":
    main()
