#!/usr/bin/env python3
"""What the NVIDIA Vulkan driver made of Kiln's pipelines: registers and instruction mix.

    __GL_SHADER_DISK_CACHE_PATH=DIR __GL_SHADER_DISK_CACHE_SKIP_CLEANUP=1 kiln bench ...
    python3 scripts/lib/nv_pipeline_sass.py DIR OUT_DIR [NVDISASM]

The driver's disk cache (driver 580) holds zstd frames; the large ones are `NVDA` containers, one
per pipeline, with the NVVM IR and the machine code. The container's layout is not documented;
what this script reads of it was found by looking and checked against the disassembly
(kernels/perf/flash-driver-registers.md): a table at byte 0x48 whose first entry is (id, size,
offset) of the code, the instructions starting 8 bytes into it; and, in the 8 bytes before the
code, two 32-bit words: the register count (three more than the highest register the
disassembly names, in each of six pipelines read) and 255, the most a thread may have. Treat
both as observations, not a format.

For each container: OUT_DIR/pipeline-N.sass (when nvdisasm is given or on PATH: it comes with
the CUDA toolkit, and with Triton's wheel) and one summary line: registers, instruction count,
tensor-core ops and f32 fused multiply-adds, shared-memory and global loads and stores,
barriers, spills. Exits non-zero when it finds no pipeline. Needs the `zstd` command.
"""
import collections
import os
import re
import shutil
import struct
import subprocess
import sys

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
COUNTED = ["HMMA", "FFMA", "LDSM", "LDS", "STS", "LDG", "STG", "BAR", "MUFU", "STL", "LDL"]


def frames(blob):
    """The zstd frames of one cache file, decompressed. A frame ends at the next magic number
    that starts a frame zstd can read (the magic may also occur inside compressed data), or at
    the end; bytes between frames are ignored."""
    starts = [m.start() for m in re.finditer(re.escape(ZSTD_MAGIC), blob)]
    ends = starts[1:] + [len(blob)]
    for i, a in enumerate(starts):
        for b in ends[i:]:
            r = subprocess.run(["zstd", "-d", "-c", "-q"], input=blob[a:b], capture_output=True)
            if r.stdout:
                yield r.stdout
                break


def summary(sass):
    ops = collections.Counter(
        m.split(".")[0]
        for m in re.findall(r"\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", sass)
    )
    top = max((int(r) for r in re.findall(r"\bR(\d+)\b", sass)), default=-1)
    counts = " ".join(f"{k} {ops[k]}" for k in COUNTED if ops[k])
    return f"{sum(ops.values())} instructions, highest register R{top}; {counts}"


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    cache, out = sys.argv[1], sys.argv[2]
    nvdisasm = sys.argv[3] if len(sys.argv) > 3 else shutil.which("nvdisasm")
    if not shutil.which("zstd"):
        sys.exit("nv_pipeline_sass: needs the zstd command")
    os.makedirs(out, exist_ok=True)
    n = 0
    for root, _, files in sorted(os.walk(cache)):
        for name in sorted(files):
            if not name.endswith(".bin"):
                continue
            with open(os.path.join(root, name), "rb") as fh:
                blob = fh.read()
            for d in frames(blob):
                if not d.startswith(b"NVDA") or len(d) < 0x54:
                    continue
                _, size, off = struct.unpack_from("<III", d, 0x48)
                if not 8 <= off <= len(d) - 8 or size < 8:
                    print(f"pipeline {n + 1}: container not understood (code at {off}, {size} bytes)")
                    continue
                n += 1
                regs = struct.unpack_from("<I", d, off - 8)[0]
                code = d[off + 8 : min(len(d), off + 8 + (size - 8) // 16 * 16)]
                line = f"pipeline {n}: {regs} registers, {len(code)} bytes of code"
                if nvdisasm and code:
                    raw = os.path.join(out, f"pipeline-{n}.bin")
                    with open(raw, "wb") as fh:
                        fh.write(code)
                    r = subprocess.run([nvdisasm, "-b", "SM90", raw], capture_output=True, text=True)
                    if r.returncode == 0:
                        with open(os.path.join(out, f"pipeline-{n}.sass"), "w") as fh:
                            fh.write(r.stdout)
                        line += "; " + summary(r.stdout)
                    else:
                        line += f"; nvdisasm failed: {r.stderr.strip()[:200]}"
                print(line)
    print(f"{n} pipelines in {cache}")
    if n == 0:
        sys.exit("nv_pipeline_sass: no pipelines found (is the cache path one the driver wrote?)")


if __name__ == "__main__":
    main()
