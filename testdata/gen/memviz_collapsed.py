#!/usr/bin/env python3
"""memviz_collapsed.py: PyTorch's own `_memory_viz memory` and `segments`
folded stacks for each slice and conversion in testdata/slices.

    python3 testdata/gen/memviz_collapsed.py testdata/slices OUT.tar

`python -m torch.cuda._memory_viz memory|segments FILE` pipe these lines
into flamegraph.pl, which torch 2.11 downloads and a machine without a
network cannot get; the functions take the formatter as an argument, so
the lines are taken before it (the identity formatter), as the corpus's
memviz_*.collapsed files were. Writes NAME.memviz_memory.collapsed and
NAME.memviz_segments.collapsed for each NAME.pickle / NAME.json into one
tar file (the device tool returns at most 8 files).
"""
import inspect
import io
import json
import os
import pickle
import sys
import tarfile

import torch
from torch.cuda import _memory_viz as mv


def collapsed(fn, snap):
    if "format_flamegraph" in inspect.signature(fn).parameters:
        return fn(snap, format_flamegraph=lambda s, *a, **k: s)
    saved = mv.format_flamegraph
    mv.format_flamegraph = lambda s, *a, **k: s
    try:
        return fn(snap)
    finally:
        mv.format_flamegraph = saved


def main():
    src, out = sys.argv[1], sys.argv[2]
    with tarfile.open(out, "w") as tar:
        for name in sorted(os.listdir(src)):
            base, ext = os.path.splitext(name)
            if ext not in (".pickle", ".json"):
                continue
            path = os.path.join(src, name)
            with open(path, "rb") as f:
                snap = pickle.load(f) if ext == ".pickle" else json.load(f)
            for view, fn in (("memory", mv.memory), ("segments", mv.segments)):
                try:
                    text = collapsed(fn, snap)
                except Exception as e:  # a file _memory_viz cannot read
                    print(f"{name} {view}: {type(e).__name__}: {e}", flush=True)
                    continue
                data = text.encode()
                info = tarfile.TarInfo(f"{base}.memviz_{view}.collapsed")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
                print(f"{name} {view}: {len(data)} bytes, {text.count(chr(10))} lines", flush=True)
    print("torch", torch.__version__)


if __name__ == "__main__":
    main()
