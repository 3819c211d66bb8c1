#!/usr/bin/env python3
"""Hand-made leak snapshots for snapview's leak tests (Python 3 standard library only).

    python3 testdata/gen/leakgen.py            (from the repository root)

writes testdata/snapshots/:

leak_gc_oom.pickle   Field report 27 ("Understanding GPU Memory 2"): every step
                     keeps a 32 MiB tensor in a reference cycle (model.py:120)
                     and gc frees the cycles only every 7 steps: a sawtooth. Each
                     step also appends 2 MiB to a list the model keeps
                     (model.py:150): a plain leak under it. At step 27 an
                     allocation fails: an oom entry, then the exception's
                     unwinding frees the step's tensors and every cycle at once
                     (not a fix). Steps are marked by ProfilerStep#N
                     record_function annotations.
leak_bounded.pickle  A cache dict that grows by one 8 MiB tensor per step
                     (train.py:61, model.encode) while same-size temporaries from
                     the same model.encode (train.py:55) come and go; next to it,
                     things that keep memory without leaking: parameters, Adam
                     state made at step 1, an LRU of the last 4 tensors
                     (bounded), a table filled during steps 1-8 and kept
                     (warm-up), and the last step's activations in flight at
                     the dump. Backward allocations have no stack, as with
                     stacks="python". No annotations: steps must be found from
                     the repeating allocation (the input batch).

A small model of PyTorch's caching allocator (round_size, small and large
pools, segment sizes, best fit, should_split, merging on free) writes the
trace entries and the final segments, so that the snapshots replay exactly.
Frames are shared objects, as PyTorch's symbolizer makes them.
"""
import os
import pickle

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "snapshots")

KIB, MIB = 1 << 10, 1 << 20
SMALL = 1 * MIB          # kSmallSize
SMALL_BUF = 2 * MIB      # kSmallBuffer
MIN_LARGE = 10 * MIB     # kMinLargeAlloc
LARGE_BUF = 20 * MIB     # kLargeBuffer
ROUND_LARGE = 2 * MIB    # kRoundLarge
T0 = 1_795_000_000_000_000


def round_size(n):
    return 512 if n < 512 else 512 * ((n + 511) // 512)


def segment_size(n):
    if n <= SMALL:
        return SMALL_BUF
    if n < MIN_LARGE:
        return LARGE_BUF
    return ROUND_LARGE * ((n + ROUND_LARGE - 1) // ROUND_LARGE)


class Block:
    def __init__(self, seg, addr, size):
        self.seg, self.addr, self.size = seg, addr, size
        self.req, self.state, self.frames = 0, "inactive", []


class Seg:
    def __init__(self, addr, size):
        self.addr, self.size, self.large = addr, size, size != SMALL_BUF
        self.blocks = [Block(self, addr, size)]
        self.frames = []


class Allocator:
    def __init__(self):
        self.segs = []
        self.trace = []
        self.next_addr = 0x7F0000000000
        self.t = T0

    def tick(self, us=50):
        self.t += us
        return self.t

    def entry(self, action, addr, size, frames, **kw):
        e = {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": self.tick(),
             "compile_context": "N/A", "user_metadata": "", "frames": frames}
        e.update(kw)
        self.trace.append(e)

    def malloc(self, req, frames):
        size = round_size(req)
        large = size > SMALL
        best = None
        for s in self.segs:
            if s.large != large:
                continue
            for b in s.blocks:
                if b.state == "inactive" and b.size >= size and (best is None or (b.size, b.addr) < (best.size, best.addr)):
                    best = b
        if best is None:
            ssize = segment_size(size)
            s = Seg(self.next_addr, ssize)
            s.frames = frames
            self.next_addr += ((ssize + SMALL_BUF - 1) // SMALL_BUF) * SMALL_BUF + SMALL_BUF
            self.segs.append(s)
            self.entry("segment_alloc", s.addr, ssize, frames)
            best = s.blocks[0]
        s = best.seg
        rest = best.size - size
        if (not large and rest >= 512) or (large and rest > SMALL):
            i = s.blocks.index(best)
            s.blocks.insert(i + 1, Block(s, best.addr + size, rest))
            best.size = size
        best.state, best.req, best.frames = "active_allocated", req, frames
        self.entry("alloc", best.addr, req, frames)
        return best

    def free(self, b):
        assert b.state == "active_allocated"
        self.entry("free_requested", b.addr, b.req, b.frames)
        self.entry("free_completed", b.addr, b.req, b.frames)
        b.state, b.frames = "inactive", []
        s = b.seg
        i = s.blocks.index(b)
        if i + 1 < len(s.blocks) and s.blocks[i + 1].state == "inactive":
            b.size += s.blocks.pop(i + 1).size
        if i > 0 and s.blocks[i - 1].state == "inactive":
            prev = s.blocks[i - 1]
            prev.size += b.size
            s.blocks.pop(i)

    def oom(self, req, frames, device_free):
        # release_cached_blocks: cudaFree every segment that is wholly free.
        for s in [s for s in self.segs if len(s.blocks) == 1 and s.blocks[0].state == "inactive"]:
            self.entry("segment_free", s.addr, s.size, frames)
            self.segs.remove(s)
        self.trace.append({"action": "oom", "device_free": device_free, "size": round_size(req), "stream": 0,
                           "time_us": self.tick(), "compile_context": "N/A", "user_metadata": "", "frames": frames})

    def snapshot(self, annotations):
        segs = []
        for s in sorted(self.segs, key=lambda s: s.addr):
            active = [b for b in s.blocks if b.state != "inactive"]
            segs.append({
                "device": 0, "address": s.addr, "total_size": s.size,
                "allocated_size": sum(b.size for b in active), "active_size": sum(b.size for b in active),
                "requested_size": sum(b.req for b in active), "stream": 0,
                "segment_type": "large" if s.large else "small", "segment_pool_id": (0, 0),
                "is_expandable": False, "frames": s.frames if len(s.blocks) == 1 else [],
                "blocks": [{"address": b.addr, "size": b.size, "requested_size": b.req if b.state != "inactive" else 0,
                            "state": b.state, "frames": b.frames} for b in s.blocks],
            })
        return {
            "segments": segs,
            "device_traces": [self.trace],
            "allocator_settings": {
                "PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1, "garbage_collection_threshold": 0.0,
                "expandable_segments": False, "pinned_num_register_threads": 1,
                "release_lock_on_cudamalloc": False, "pinned_use_cuda_host_register": False,
                "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)},
            },
            "external_annotations": annotations,
        }


# Frames, innermost first. One dict per frame and one list per stack, shared.
def F(path, line, name):
    return {"filename": path, "line": line, "name": name}


TORCH = "/home/xxxx/venv/lib/python3.11/site-packages/torch/"
STD = "/usr/lib/python3.11/"
U = "/home/xxxx/proj/"
TAIL = [F(U + "train.py", 130, "main"), F(STD + "runpy.py", 88, "_run_code"), F(U + "train.py", 140, "<module>")]
CALL = [F(TORCH + "nn/modules/module.py", 1790, "_call_impl"), F(TORCH + "nn/modules/module.py", 1779, "_wrapped_call_impl")]


def stack(*frames):
    return list(frames) + TAIL


def step_frames(line, *inner):
    return stack(*inner, F(U + "train.py", line, "train_step"), F(U + "train.py", 110, "main_loop"))


PARAMS = stack(F(TORCH + "nn/modules/module.py", 1341, "convert"), F(TORCH + "nn/modules/module.py", 942, "_apply"),
               F(TORCH + "nn/modules/module.py", 1355, "to"), F(U + "train.py", 30, "build"))
ADAM = step_frames(70, F(TORCH + "optim/adam.py", 164, "_init_group"), F(TORCH + "optim/adam.py", 230, "step"),
                   F(TORCH + "optim/optimizer.py", 485, "wrapper"))
BATCH = step_frames(50, F(U + "data.py", 22, "next_batch"))
ENCODE = [F(TORCH + "nn/functional.py", 2551, "embedding"), F(TORCH + "nn/modules/sparse.py", 190, "forward"), *CALL,
          F(U + "model.py", 88, "encode")]
ENCODE_TMP = step_frames(55, *ENCODE)
CACHE = step_frames(61, *ENCODE)
ACT1 = step_frames(56, F(TORCH + "nn/functional.py", 1723, "relu"), F(U + "model.py", 95, "forward"), *CALL)
ACT2 = step_frames(56, F(TORCH + "nn/modules/linear.py", 134, "forward"), *CALL, F(U + "model.py", 97, "forward"), *CALL)
LRU = step_frames(64, F(U + "cache.py", 40, "put"))
WARM = step_frames(56, F(U + "model.py", 140, "rotary_table"), F(U + "model.py", 96, "forward"), *CALL)
CYCLE = step_frames(77, F(U + "model.py", 120, "attach_debug"), F(U + "model.py", 99, "forward"), *CALL)
HISTORY = step_frames(78, F(U + "model.py", 150, "log_stats"))
LOSS = step_frames(58, F(TORCH + "nn/functional.py", 3504, "cross_entropy"))
NOSTACK = []  # backward allocations: no Python frames with stacks="python"

PARAM_SIZES = [8 * MIB, 8 * MIB, 4 * MIB, 512 * KIB, 256 * KIB]


def leak_bounded():
    a = Allocator()
    params = [a.malloc(n, PARAMS) for n in PARAM_SIZES]
    adam, cache, lru, warm = [], [], [], []
    steps = 40
    for step in range(1, steps + 1):
        batch = a.malloc(2 * MIB, BATCH)
        tmp = a.malloc(8 * MIB, ENCODE_TMP)         # same size as the cache entries, freed below
        if step <= 8:
            warm.append(a.malloc(3 * MIB, WARM))    # filled during warm-up, then kept
        act1 = a.malloc(16 * MIB, ACT1)
        act2 = a.malloc(16 * MIB, ACT2)
        cache.append(a.malloc(8 * MIB, CACHE))      # cache[step] = model.encode(x): the leak
        lru.append(a.malloc(4 * MIB, LRU))
        if len(lru) > 4:
            a.free(lru.pop(0))                      # bounded: keeps the last 4
        loss = a.malloc(4 * KIB, LOSS)
        grads = [a.malloc(n, NOSTACK) for n in PARAM_SIZES]
        if step == steps:
            break                                   # dumped mid-step: activations and grads in flight
        a.free(act2)
        a.free(act1)
        a.free(tmp)
        a.free(loss)
        if step == 1:
            adam = [a.malloc(n, ADAM) for n in PARAM_SIZES for _ in range(2)]
        for g in grads:
            a.free(g)
        a.free(batch)
    return a.snapshot([])


def leak_gc_oom():
    a = Allocator()
    params = [a.malloc(n, PARAMS) for n in PARAM_SIZES]
    cycles, history = [], []
    annotations = []
    for step in range(1, 28):
        annotations.append({"stage": "START", "name": "ProfilerStep#%d" % step, "device": 0, "time_us": a.tick(5)})
        if step % 7 == 0:
            for c in cycles:                        # gc.collect(): the burst
                a.free(c)
            cycles = []
        batch = a.malloc(2 * MIB, BATCH)
        act1 = a.malloc(16 * MIB, ACT1)
        cycles.append(a.malloc(32 * MIB, CYCLE))    # held by a reference cycle until gc
        history.append(a.malloc(2 * MIB, HISTORY))  # model.stats.append(...): never freed
        if step == 27:
            a.oom(6 * (1 << 30), ACT2, device_free=96 * MIB)
            # The exception unwinds: the step's tensors go, gc collects every
            # cycle; the model (and its stats list) lives on.
            for b in [act1, batch] + cycles:
                a.free(b)
            annotations.append({"stage": "END", "name": "ProfilerStep#%d" % step, "device": 0, "time_us": a.tick(5)})
            break
        a.free(act1)
        a.free(batch)
        annotations.append({"stage": "END", "name": "ProfilerStep#%d" % step, "device": 0, "time_us": a.tick(5)})
    return a.snapshot(annotations)


def main():
    for name, fn in (("leak_bounded", leak_bounded), ("leak_gc_oom", leak_gc_oom)):
        path = os.path.join(OUT, name + ".pickle")
        with open(path, "wb") as f:
            pickle.dump(fn(), f, protocol=4)
        print(path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
