#!/usr/bin/env python3
"""Parity of Kiln's attention demo with the reference implementation of the model.

Runs sentences through Kiln (`attention --bench --dump`, the GPU path) and through Hugging Face
`transformers` (PyTorch, f32, eager attention) on the same model directory, and prints, per
layer, the worst relative L2 error over the sentences of the attention probabilities and of the
hidden states. Token ids are compared too. Exits 1 if any error is over the target (1e-3).

  python3 scripts/attention-parity.py [--model models/all-minilm-l6-v2]
                                      [--attention target/release/attention]

Needs torch and transformers (pip install torch transformers); see demos/attention/README.md.
"""
import argparse, json, os, subprocess, sys, tempfile

SENTENCES = [
    "The cat sat on the mat because it was tired.",
    "Kiln renders WGSL kernels for the adapter in hand.",
    "Attention weights show which words each word looks at.",
    "She read the old book by the river, then walked home in the rain.",
]
TARGET = 1e-3


def rel_l2(a, b):
    import numpy as np
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="models/all-minilm-l6-v2")
    ap.add_argument("--attention", default="target/release/attention")
    args = ap.parse_args()
    import torch
    from transformers import BertModel, BertTokenizer

    model = BertModel.from_pretrained(args.model, attn_implementation="eager").eval().float()
    tok = BertTokenizer(os.path.join(args.model, "vocab.txt"), do_lower_case=True)
    layers = model.config.num_hidden_layers
    worst_p = [0.0] * layers
    worst_h = [0.0] * (layers + 1)
    ids_ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for k, text in enumerate(SENTENCES):
            dump = os.path.join(tmp, f"{k}.json")
            subprocess.run([args.attention, "--bench", "--frames", "1", "--model", args.model,
                            "--text", text, "--dump", dump], check=True, stdout=subprocess.DEVNULL)
            kiln = json.load(open(dump))
            ref_ids = tok(text)["input_ids"]
            if ref_ids != kiln["ids"]:
                ids_ok = False
                print(f"token ids differ for {text!r}:\n  kiln {kiln['ids']}\n  ref  {ref_ids}")
                continue
            with torch.no_grad():
                out = model(torch.tensor([ref_ids]), output_attentions=True, output_hidden_states=True)
            for l in range(layers):
                worst_p[l] = max(worst_p[l], rel_l2(kiln["attentions"][l], out.attentions[l][0].numpy().ravel()))
            for l in range(layers + 1):
                worst_h[l] = max(worst_h[l], rel_l2(kiln["hidden_states"][l], out.hidden_states[l][0].numpy().ravel()))
    print(f"model {args.model}; {len(SENTENCES)} sentences; Kiln GPU path ({kiln['adapter']}) "
          f"vs transformers {__import__('transformers').__version__} / torch {torch.__version__} (f32, CPU)")
    print(f"token ids identical: {ids_ok}")
    print("layer  worst rel L2 attention  worst rel L2 hidden state")
    print(f"emb    {'—':>22}  {worst_h[0]:>25.2e}")
    for l in range(layers):
        print(f"{l:<5}  {worst_p[l]:>22.2e}  {worst_h[l + 1]:>25.2e}")
    worst = max(worst_p + worst_h)
    ok = ids_ok and worst <= TARGET
    print(f"worst {worst:.2e}; target {TARGET:.0e}: {'met' if ok else 'MISSED'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
