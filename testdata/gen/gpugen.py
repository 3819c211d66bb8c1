#!/usr/bin/env python3
"""Record real leak snapshots on a CUDA GPU (PyTorch 2.x), for snapview's leak tests.

    python3 testdata/gen/gpugen.py OUTDIR            (each scenario in its own process)
    python3 testdata/gen/gpugen.py OUTDIR SCENARIO

writes OUTDIR/<scenario>.pickle, .summary.txt, .stats.json and .meta.json for:

leak_cache  A training loop whose helper remember() keeps one activation per step
            in a dict that is never trimmed (a cache without eviction). Other
            activations and gradients are freed every step.
leak_cycle  Reference cycles that hold a tensor each: with the cycle collector off
            they pile up, step after step, and are freed only in bursts when
            gc.collect() runs every 6 steps (the sawtooth of pytorch.org's
            "Understanding GPU Memory 2"); the last burst never comes before the
            dump, so the last 5 steps' cycles are alive at the end.
cpp_pickled The same small workload dumped through the C++ pickler when this
            PyTorch exposes it (protocol 2); skipped otherwise.

The ground truth (file and line of each leak) goes to <scenario>.meta.json.
"""
import gc
import json
import os
import pickle
import sys

import torch

OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)
HERE = os.path.basename(__file__)


def line():
    return sys._getframe(1).f_lineno


def start():
    torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python",
                                             max_entries=100000)


def finish(name, meta):
    torch.cuda.synchronize()
    summary = torch.cuda.memory_summary()
    stats = torch.cuda.memory_stats()
    torch.cuda.memory._dump_snapshot(os.path.join(OUT, name + ".pickle"))
    torch.cuda.memory._record_memory_history(enabled=None)
    with open(os.path.join(OUT, name + ".summary.txt"), "w") as f:
        f.write(summary)
    with open(os.path.join(OUT, name + ".stats.json"), "w") as f:
        json.dump(stats, f, indent=1, sort_keys=True)
    meta.update(torch=torch.__version__, device=torch.cuda.get_device_name(),
                script=HERE, recorded_from_start=True)
    with open(os.path.join(OUT, name + ".meta.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)


def model():
    return torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(),
                               torch.nn.Linear(1024, 512)).cuda()


CACHE = {}
CACHE_LINE = 0


def remember(step, h):
    global CACHE_LINE
    CACHE_LINE = line() + 1
    CACHE[step] = h.detach().clone()          # never evicted: the leak


def leak_cache():
    start()
    m = model()
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    for step in range(24):
        x = torch.randn(256, 512, device="cuda")
        h = m[0](x)
        remember(step, h)
        loss = m[2](m[1](h)).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del x, h, loss
    finish("leak_cache", {"leak": {"file": HERE, "line": CACHE_LINE, "function": "remember",
                                   "kind": "cache without eviction, one 1 MiB tensor per step"},
                          "steps": 24, "not_leaks": ["parameters of model()", "SGD temporaries"]})


class Node:
    def __init__(self, t):
        self.t = t
        self.me = self                        # a reference cycle


CYCLE_LINE = 0


def make_cycle():
    global CYCLE_LINE
    CYCLE_LINE = line() + 1
    n = Node(torch.empty(512 * 1024, device="cuda"))   # 2 MiB held by a cycle
    return n


def leak_cycle():
    gc.disable()
    start()
    m = model()
    for step in range(29):
        x = torch.randn(256, 512, device="cuda")
        y = m(x)
        make_cycle()
        make_cycle()
        del x, y
        if step % 6 == 5:
            gc.collect()                      # frees the cycles in a burst
    finish("leak_cycle", {"leak": {"file": HERE, "line": CYCLE_LINE, "function": "make_cycle",
                                   "kind": "reference cycles freed only by gc.collect() every 6 steps; "
                                           "the last 5 steps' cycles (10 x 2 MiB) are alive at the end"},
                          "steps": 29})
    gc.enable()


def cpp_pickled():
    fn = getattr(torch._C, "_cuda_memorySnapshotPickled", None) or \
        getattr(torch._C, "_cuda_getMemorySnapshotPickled", None)
    if fn is None:
        print("cpp_pickled: no C++ pickler binding in this PyTorch; skipped")
        return
    start()
    m = model()
    y = m(torch.randn(64, 512, device="cuda"))
    torch.cuda.synchronize()
    data = fn()
    with open(os.path.join(OUT, "cpp_pickled.pickle"), "wb") as f:
        f.write(data)
    torch.cuda.memory._record_memory_history(enabled=None)
    del y


SCENARIOS = {"leak_cache": leak_cache, "leak_cycle": leak_cycle, "cpp_pickled": cpp_pickled}

if len(sys.argv) > 2:
    SCENARIOS[sys.argv[2]]()
else:
    import subprocess
    for name in SCENARIOS:
        r = subprocess.run([sys.executable, __file__, OUT, name])
        print(name, "exit", r.returncode)
    print(sorted(os.listdir(OUT)))
    print([n for n in dir(torch._C) if "napshot" in n.lower()])
