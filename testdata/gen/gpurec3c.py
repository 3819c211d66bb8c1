#!/usr/bin/env python3
"""Record a torch.compile training run with compile_context (issue 25: compiled regions).

    python3 testdata/gen/gpurec3c.py OUTDIR

Writes OUTDIR/compiled_regions/{snapshot.pickle.xz, summary.txt, stats.json, meta.json}: a model of
two parts compiled separately (torch.compile of an MLP block and of an attention block: two
compiled regions, "0/0" and "1/0" in compile_context, recompiled once for a second batch shape:
"0/1", "1/1"), AdamW, 4 training steps (batch 32, 32, 48, 48), recorded from the first CUDA
allocation with _record_memory_history(enabled="all", context="all", stacks="python",
max_entries=1_000_000, compile_context=True). Where this torch has
torch.cuda.memory._set_memory_metadata, the optimizer step runs under the metadata "optimizer"
(user_metadata on its entries). meta.json lists what was recorded and the regions seen.
"""
import json
import lzma
import os
import pickle
import sys
import time

import torch

OUT = os.path.join(sys.argv[1], "compiled_regions")
os.makedirs(OUT, exist_ok=True)


class MLP(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.a, self.b = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.b(torch.nn.functional.gelu(self.a(x)))


class Attn(torch.nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.qkv, self.o, self.h = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d), h

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.h, d // self.h).unbind(2)
        a = torch.softmax(q.transpose(1, 2) @ k.transpose(1, 2).transpose(-1, -2) / (d // self.h) ** 0.5, -1)
        return x + self.o((a @ v.transpose(1, 2)).transpose(1, 2).reshape(b, s, d))


def main():
    torch.manual_seed(0)
    meta = {"torch": torch.__version__, "generator": "testdata/gen/gpurec3c.py"}
    hist = dict(enabled="all", context="all", stacks="python", max_entries=1_000_000, compile_context=True)
    torch.cuda.memory._record_memory_history(**hist)
    meta["history"] = hist
    d = 512
    attn, mlp = Attn(d, 8).cuda(), MLP(d).cuda()
    c_attn, c_mlp = torch.compile(attn), torch.compile(mlp)
    opt = torch.optim.AdamW(list(attn.parameters()) + list(mlp.parameters()), lr=1e-4)
    setmeta = getattr(torch.cuda.memory, "_set_memory_metadata", None)
    meta["set_memory_metadata"] = setmeta is not None
    t0 = time.time()
    for step, b in enumerate([32, 32, 48, 48]):
        x = torch.randn(b, 256, d, device="cuda")
        loss = c_mlp(c_attn(x)).square().mean()
        loss.backward()
        if setmeta:
            setmeta("optimizer")
        opt.step()
        opt.zero_grad(set_to_none=True)
        if setmeta:
            setmeta("")
        del x, loss
    torch.cuda.synchronize()
    meta["seconds"] = round(time.time() - t0, 2)
    summary, stats = torch.cuda.memory_summary(), torch.cuda.memory_stats()
    snap = torch.cuda.memory._snapshot()
    raw = pickle.dumps(snap)
    with open(os.path.join(OUT, "snapshot.pickle.xz"), "wb") as f:
        f.write(lzma.compress(raw, format=lzma.FORMAT_XZ, preset=9))
    ctx = {}
    for t in snap["device_traces"]:
        for e in t:
            c = e.get("compile_context", "")
            ctx[c] = ctx.get(c, 0) + 1
    meta.update(compile_contexts=ctx, entries=[len(t) for t in snap["device_traces"]], snapshot_bytes=len(raw),
                peak_allocated=stats["allocated_bytes.all.peak"], peak_reserved=stats["reserved_bytes.all.peak"],
                user_metadata=sorted({e.get("user_metadata", "") for t in snap["device_traces"] for e in t}))
    open(os.path.join(OUT, "summary.txt"), "w").write(summary)
    json.dump(stats, open(os.path.join(OUT, "stats.json"), "w"), indent=1, sort_keys=True)
    json.dump(meta, open(os.path.join(OUT, "meta.json"), "w"), indent=1, sort_keys=True)
    print(json.dumps(meta, indent=1))


if __name__ == "__main__":
    main()
