#!/usr/bin/env python3
"""Writes a copy of a Hugging Face model directory with its weights in f16.

    python3 scripts/model-f16.py SRC_DIR DEST_DIR

model.safetensors is rewritten with every F32 tensor stored as F16 (other dtypes as they are);
config.json, vocab.txt and the tokenizer files are copied. The attention demo reads F16, and
Hugging Face transformers loads the same file as f32 with `dtype=torch.float32`, so both sides of
a comparison read one set of weights at half the size. Standard library only.
"""
import json, os, shutil, struct, sys


def convert(src, dst):
    with open(src, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__", None)
    out_header, chunks, offset = {}, [], 0
    for name in sorted(header, key=lambda k: header[k]["data_offsets"][0]):
        t = header[name]
        start, end = t["data_offsets"]
        raw = data[start:end]
        dtype = t["dtype"]
        if dtype == "F32":
            count = len(raw) // 4
            raw = struct.pack(f"<{count}e", *struct.unpack(f"<{count}f", raw))
            dtype = "F16"
        out_header[name] = {"dtype": dtype, "shape": t["shape"], "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    if meta is not None:
        out_header["__metadata__"] = meta
    text = json.dumps(out_header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    tmp = dst + ".partial"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for c in chunks:
            f.write(c)
    os.replace(tmp, dst)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, dst = sys.argv[1], sys.argv[2]
    if not os.path.isfile(os.path.join(src, "model.safetensors")):
        sys.exit(f"model-f16: {src} has no model.safetensors")
    os.makedirs(dst, exist_ok=True)
    for name in os.listdir(src):
        if name != "model.safetensors" and os.path.isfile(os.path.join(src, name)):
            shutil.copy(os.path.join(src, name), os.path.join(dst, name))
    convert(os.path.join(src, "model.safetensors"), os.path.join(dst, "model.safetensors"))
    print(f"model-f16: {dst}/model.safetensors, {os.path.getsize(os.path.join(dst, 'model.safetensors')) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
