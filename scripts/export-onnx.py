#!/usr/bin/env python3
"""Writes a BERT encoder (the attention demo's model directory: config.json, model.safetensors)
as ONNX, for transformers.js and ONNX Runtime: MODEL_DIR/onnx/model.onnx, inputs `input_ids`,
`attention_mask`, `token_type_ids` (int64, [batch, sequence]), output `last_hidden_state`
(float32, [batch, sequence, hidden]), opset 17. Weights are stored as the model stores them: an
f16 file's stay f16 in the graph (half the bytes: the site carries it), each widened by a Cast
that ONNX Runtime folds away when it loads the model, so the arithmetic is f32 either way.

The graph is built here from the weights with the `onnx` package, op by op as BERT computes:
embeddings summed and normalised; per layer the heads' scaled dot products with the padding
masked, softmax, the weighted values merged and projected, a residual and layer norm, the
feed-forward with GELU (erf), a residual and layer norm. No PyTorch.

    python3 scripts/export-onnx.py MODEL_DIR [--check ATTENTION_BIN]

--check runs a few sentences through ONNX Runtime (CPU) on the written file and through the
attention demo's binary (`--bench --dump`: the GPU path, where the demo checks itself against
its CPU path), and exits 1 unless every last hidden state agrees within 1e-5 relative L2
(1.1e-6 measured on MiniLM).
Needs numpy and onnx (and onnxruntime for --check): pip install numpy onnx onnxruntime.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

DTYPES = {"F32": np.float32, "F16": np.float16}
CHECK_SENTENCES = [
    "The quick brown fox jumps over the lazy dog near the river bank today.",
    "Kiln renders WGSL kernels for the adapter in hand.",
    "[CLS] special tokens [MASK] stay whole [SEP]",
]
TOLERANCE = 1e-5


def read_safetensors(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    header.pop("__metadata__", None)
    tensors = {}
    for name, meta in header.items():
        if meta["dtype"].startswith(("I", "U", "BOOL")):
            continue  # integer buffers (position ids) that the graph computes itself
        if meta["dtype"] not in DTYPES:
            sys.exit(f"export-onnx: {name} is {meta['dtype']}; only F32 and F16 are read")
        begin, end = meta["data_offsets"]
        array = np.frombuffer(data[begin:end], dtype=DTYPES[meta["dtype"]]).reshape(meta["shape"])
        # Some exports prefix every name with the model's type.
        tensors[name.removeprefix("bert.")] = array
    return tensors


class Graph:
    """Nodes and initializers, with fresh names for intermediate values."""

    def __init__(self, weights):
        from onnx import helper
        self.helper = helper
        self.weights = weights
        self.nodes, self.initializers, self.count = [], {}, 0
        self.weight_names = set()

    def weight(self, name, transpose=False):
        from onnx import TensorProto, numpy_helper
        key = name + (".T" if transpose else "")
        if key not in self.weight_names:
            if name not in self.weights:
                sys.exit(f"export-onnx: the model has no tensor {name}")
            w = np.ascontiguousarray(self.weights[name].T if transpose else self.weights[name])
            self.weight_names.add(key)
            if w.dtype == np.float16:
                # Stored in f16, computed in f32: ONNX Runtime folds the Cast at load time.
                self.initializers[key + ".f16"] = numpy_helper.from_array(w, key + ".f16")
                self.nodes.append(self.helper.make_node("Cast", [key + ".f16"], [key], to=TensorProto.FLOAT))
            else:
                self.initializers[key] = numpy_helper.from_array(w, key)
        return key

    def const(self, value, dtype):
        from onnx import numpy_helper
        key = f"const_{len(self.initializers)}"
        self.initializers[key] = numpy_helper.from_array(np.asarray(value, dtype=dtype), key)
        return key

    def op(self, kind, inputs, **attrs):
        self.count += 1
        out = f"{kind.lower()}_{self.count}"
        self.nodes.append(self.helper.make_node(kind, inputs, [out], **attrs))
        return out

    def linear(self, x, prefix):
        return self.op("Add", [self.op("MatMul", [x, self.weight(prefix + ".weight", True)]),
                               self.weight(prefix + ".bias")])

    def layer_norm(self, x, prefix, eps):
        return self.op("LayerNormalization", [x, self.weight(prefix + ".weight"),
                                              self.weight(prefix + ".bias")], axis=-1, epsilon=eps)


def build(model_dir):
    import onnx
    from onnx import TensorProto, helper

    config = json.load(open(os.path.join(model_dir, "config.json")))
    weights = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    hidden, heads = config["hidden_size"], config["num_attention_heads"]
    layers, eps = config["num_hidden_layers"], config.get("layer_norm_eps", 1e-12)
    if (config.get("hidden_act", "gelu") != "gelu" or hidden % heads
            or config.get("position_embedding_type", "absolute") != "absolute"):
        sys.exit("export-onnx: only BERT encoders with GELU (erf), whole heads and absolute positions are written")
    d = hidden // heads
    g = Graph(weights)

    # Embeddings: word + position (0..sequence) + token type, normalised.
    ids, types = "input_ids", "token_type_ids"
    shape = g.op("Shape", [ids])
    seq = g.op("Gather", [shape, g.const(1, np.int64)], axis=0)
    positions = g.op("Range", [g.const(0, np.int64), seq, g.const(1, np.int64)])
    x = g.op("Add", [g.op("Gather", [g.weight("embeddings.word_embeddings.weight"), ids]),
                     g.op("Gather", [g.weight("embeddings.position_embeddings.weight"), positions])])
    x = g.op("Add", [x, g.op("Gather", [g.weight("embeddings.token_type_embeddings.weight"), types])])
    x = g.layer_norm(x, "embeddings.LayerNorm", eps)

    # The padding mask as an additive bias over the keys: [batch, 1, 1, sequence].
    mask = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    bias = g.op("Mul", [g.op("Sub", [g.const(1.0, np.float32), mask]), g.const(-1e9, np.float32)])
    bias = g.op("Unsqueeze", [bias, g.const([1, 2], np.int64)])

    split = g.const([0, 0, heads, d], np.int64)
    merged = g.const([0, 0, hidden], np.int64)
    scale = g.const(1.0 / np.sqrt(d), np.float32)
    for i in range(layers):
        p = f"encoder.layer.{i}."
        q = g.op("Transpose", [g.op("Reshape", [g.linear(x, p + "attention.self.query"), split])],
                 perm=[0, 2, 1, 3])
        k = g.op("Transpose", [g.op("Reshape", [g.linear(x, p + "attention.self.key"), split])],
                 perm=[0, 2, 3, 1])
        v = g.op("Transpose", [g.op("Reshape", [g.linear(x, p + "attention.self.value"), split])],
                 perm=[0, 2, 1, 3])
        scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, k]), scale]), bias])
        context = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        context = g.op("Reshape", [g.op("Transpose", [context], perm=[0, 2, 1, 3]), merged])
        attended = g.linear(context, p + "attention.output.dense")
        x = g.layer_norm(g.op("Add", [attended, x]), p + "attention.output.LayerNorm", eps)
        h = g.linear(x, p + "intermediate.dense")
        erf = g.op("Erf", [g.op("Mul", [h, g.const(1.0 / np.sqrt(2.0), np.float32)])])
        h = g.op("Mul", [g.op("Mul", [h, g.const(0.5, np.float32)]),
                         g.op("Add", [erf, g.const(1.0, np.float32)])])
        out = g.linear(h, p + "output.dense")
        x = g.layer_norm(g.op("Add", [out, x]), p + "output.LayerNorm", eps)
    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))

    dims = ["batch", "sequence"]
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, dims)
              for n in ("input_ids", "attention_mask", "token_type_ids")]
    output = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, dims + [hidden])
    graph = helper.make_graph(g.nodes, "bert_encoder", inputs, [output],
                              list(g.initializers.values()))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="kiln scripts/export-onnx.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def check(path, model_dir, attention):
    import onnxruntime as ort
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for k, text in enumerate(CHECK_SENTENCES):
            dump = os.path.join(tmp, f"{k}.json")
            subprocess.run([attention, "--bench", "--frames", "1", "--model", model_dir,
                            "--text", text, "--dump", dump], check=True, stdout=subprocess.DEVNULL)
            kiln = json.load(open(dump))
            ids = np.array([kiln["ids"]], dtype=np.int64)
            (hidden,) = session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids),
                                           "token_type_ids": np.zeros_like(ids)})
            ref = np.asarray(kiln["hidden_states"][-1], dtype=np.float64)
            got = hidden[0].astype(np.float64).ravel()
            err = float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30))
            worst = max(worst, err)
            print(f"{len(kiln['ids']):>4} tokens: relative L2 {err:.2e} against Kiln ({kiln['adapter']})")
    print(f"worst {worst:.2e}; tolerance {TOLERANCE:.0e}: {'met' if worst <= TOLERANCE else 'MISSED'}")
    return worst <= TOLERANCE


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model_dir")
    ap.add_argument("--check", metavar="ATTENTION_BIN",
                    help="compare with the attention demo's binary on a few sentences")
    args = ap.parse_args()
    for name in ("config.json", "model.safetensors"):
        if not os.path.isfile(os.path.join(args.model_dir, name)):
            sys.exit(f"export-onnx: {args.model_dir} has no {name}")
    model = build(args.model_dir)
    import onnx
    out_dir = os.path.join(args.model_dir, "onnx")
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "model.onnx")
    # Written beside and moved into place: a failed export leaves no half-written model.
    onnx.save(model, path + ".partial")
    os.replace(path + ".partial", path)
    print(f"export-onnx: {path}, {os.path.getsize(path) / 1e6:.1f} MB")
    if args.check and not check(path, args.model_dir, args.check):
        sys.exit(1)


if __name__ == "__main__":
    main()
