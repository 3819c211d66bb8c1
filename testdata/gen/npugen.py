#!/usr/bin/env python3
"""Make testdata/snapshots/npu_whole_run.pickle (and .meta.json, its ground truth): a whole torch_npu (Ascend) run, as
torch_npu's NPUCachingAllocator writes it in the CUDA schema (issue 25).

    python3 testdata/gen/npugen.py            (from the repository root; standard library only)

The rule is the one ../shared/snapshots/field/torch-npu-trimmed.pickle shows in every active
block: a block is round_up(request + 32, 512) bytes (torch_npu's round_size pads 32 bytes
before rounding to kMinBlockSize), where CUDA's round_size gives round_up(request, 512). Segment
sizes, pools, best fit, should_split and merging are the CUDA caching allocator's, which
torch_npu keeps. Like the trimmed file: no time_us, no allocator_settings, an NPU stream handle
(1534455456), frames through torch_npu/utils/_module.py.

The run: a model's parameters moved to the NPU (odd sizes, as conv and norm weights are), then
40 training steps (input batch, activations freed in reverse, gradients, Adam state made at step
1, a loss scalar), then `del model, optimizer` and the last tensors freed: the end state holds
cached segments and **no active block**, so the rounding can only be read from the trace (an
alloc followed in its segment by the next one round_up(size + 32, 512) bytes later, e.g. a 16 KiB
request and the next block 16,896 bytes on). Replayed with CUDA's rule the trace fails at the
first alloc that lands where CUDA's rule leaves no free block; with NPU's it replays exactly.

Ground truth (printed by this script and checked by the tests): the entries, the peak allocated
(the sum of the live blocks' sizes: a large block left unsplit, at most 1 MiB over its request's
rounding, counts whole, as the allocator's stats do) and its entry, the peak reserved and the
segments at the end.
"""
import json
import os
import pickle
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import leakgen  # noqa: E402  (its caching-allocator model, with the rounding swapped)

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "snapshots", "npu_whole_run.pickle")
STREAM = 1534455456


def npu_round(n):
    """torch_npu's round_size: round_up(n + 32, 512)."""
    return 512 * ((n + 32 + 511) // 512)


class NPUAllocator(leakgen.Allocator):
    allocated = peak = 0
    peak_entry = -1

    def entry(self, action, addr, size, frames, **kw):
        # torch_npu's trace entries: no time_us, compile_context or user_metadata.
        self.trace.append({"action": action, "addr": addr, "size": size, "stream": STREAM, "frames": frames})

    def malloc(self, req, frames):
        b = super().malloc(req, frames)
        self.allocated += b.size  # the block's size: a large block left unsplit counts whole
        if self.allocated > self.peak:
            self.peak, self.peak_entry = self.allocated, len(self.trace) - 1
        return b

    def free(self, b):
        self.allocated -= b.size
        super().free(b)


def F(path, line, name):
    return {"filename": path, "line": line, "name": name}


ENV = "/opt/conda/envs/torch-2.6-py311/lib/python3.11/site-packages/"
U = "/workspace/test/"
TAIL = [F(U + "train_npu.py", 88, "main"), F(U + "train_npu.py", 96, "<module>")]
PARAMS = [F(ENV + "torch_npu/utils/_module.py", 76, "convert"), F(ENV + "torch/nn/modules/module.py", 930, "_apply"),
          F(ENV + "torch/nn/modules/module.py", 903, "_apply"), F(ENV + "torch_npu/utils/_module.py", 78, "to"),
          F(U + "train_npu.py", 40, "build")] + TAIL


def step(line, *inner):
    return list(inner) + [F(U + "train_npu.py", line, "train_step"), F(U + "train_npu.py", 70, "loop")] + TAIL


BATCH = step(50, F(U + "data.py", 18, "to_npu"))
ACT = [step(52, F(ENV + "torch/nn/modules/conv.py", 549, "_conv_forward"), F(ENV + "torch/nn/modules/conv.py", 554, "forward")),
       step(52, F(ENV + "torch/nn/functional.py", 2822, "batch_norm")),
       step(52, F(ENV + "torch/nn/functional.py", 1704, "relu")),
       step(52, F(ENV + "torch/nn/modules/linear.py", 125, "forward"))]
GRAD = step(55, F(ENV + "torch/autograd/graph.py", 825, "_engine_run_backward"))
ADAM = step(58, F(ENV + "torch/optim/adam.py", 164, "_init_group"), F(ENV + "torch/optim/adam.py", 223, "step"))
LOSS = step(53, F(ENV + "torch/nn/functional.py", 3494, "cross_entropy"))


def build():
    rng = random.Random(25)
    leakgen.round_size = npu_round  # the one rule that differs (torch_npu's NPUCachingAllocator.cpp)
    a = NPUAllocator()
    # Parameters: conv / norm / linear weights and biases of odd sizes; one exactly 16 KiB.
    shapes = [37632, 256, 256, 256, 16384] + [rng.choice([4, 2]) * rng.randint(64, 40000) for _ in range(35)]
    shapes += [rng.randint(1, 6) * (1 << 20) + rng.randint(0, 4096) * 4 for _ in range(6)]  # large-pool weights
    params = [a.malloc(n, PARAMS) for n in shapes]
    adam = []
    for st in range(40):
        b = rng.choice([8, 16, 32])
        batch = a.malloc(b * 3 * 32 * 32 * 4, BATCH)
        acts = []
        for layer in range(12):
            n = b * rng.choice([16, 32, 64]) * rng.choice([8, 16, 32]) * 4 + rng.choice([0, 4, 8, 64])
            acts.append(a.malloc(n, ACT[layer % 4]))
        loss = a.malloc(4, LOSS)
        grads = [a.malloc(p.req, GRAD) for p in params]
        if st == 1:
            adam = [a.malloc(p.req, ADAM) for p in params for _ in range(2)]
        for t in reversed(acts):
            a.free(t)
        a.free(loss)
        a.free(batch)
        for g in grads:
            a.free(g)
    for t in adam + params:  # del optimizer, model
        a.free(t)
    snap = a.snapshot([])
    del snap["allocator_settings"], snap["external_annotations"]
    for sg in snap["segments"]:
        sg["stream"] = STREAM
    return snap, a


def truth(snap, a):
    reserved, peak_res = 0, 0
    for e in snap["device_traces"][0]:
        if e["action"] == "segment_alloc":
            reserved += e["size"]
            peak_res = max(peak_res, reserved)
        elif e["action"] == "segment_free":
            reserved -= e["size"]
    return {"entries": len(snap["device_traces"][0]), "peak_allocated": a.peak, "peak_entry": a.peak_entry,
            "peak_reserved": peak_res, "segments": len(snap["segments"]), "reserved_at_end": reserved,
            "active_blocks_at_end": sum(1 for sg in snap["segments"] for b in sg["blocks"] if b["state"] != "inactive")}


def main():
    snap, a = build()
    with open(OUT, "wb") as f:
        pickle.dump(snap, f, protocol=4)
    t = truth(snap, a)
    t["rule"] = "round_up(request + 32, 512)"
    t["made_by"] = "testdata/gen/npugen.py"
    with open(OUT.replace(".pickle", ".meta.json"), "w") as f:
        json.dump(t, f, indent=1, sort_keys=True)
        f.write("\n")
    print(json.dumps(t, indent=1))


if __name__ == "__main__":
    main()
