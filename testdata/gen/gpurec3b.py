#!/usr/bin/env python3
"""Second device pass after gpurec3.py (which it imports, unchanged, so that the frames recorded by
the first pass keep naming gpurec3.py's lines):

    python3 testdata/gen/gpurec3b.py all OUTDIR [--deadline SECONDS] [--lo MiB --hi MiB]
    python3 testdata/gen/gpurec3b.py all OUTDIR --prebuilt  (3. only)
    python3 testdata/gen/gpurec3b.py one SPEC_JSON          (internal)

1. ranks_apart: the two ranks of gpurec3.py's pair, but each process first imports torch and
   transformers and initialises CUDA, then waits until a common instant T0 + 0.5 s x rank before it
   starts recording (the first pass, under the load of 12 other processes, started the two recordings
   3.3 s apart instead of 0.5 s: import time).  Run alone on the GPU.  The gloo barrier before each step
   lines the two ranks' steps (and peaks) up on the time_us clock.
2. llama_varlen: unrecorded probes of gpurec3.py's llama_varlen with garbage_collection_threshold:0.6
   and the default at caps between --lo and --hi MiB (the first pass found both OOMing in step 3 at
   5,360 MiB and both fitting at 5,696 MiB); then both settings recorded at the largest probed cap where
   gc 0.6 OOMs and the default fits (or, failing that, where exactly one of them OOMs).
3. ranks_apart_prebuilt (--prebuilt, a third device call): in 1. the first CUDA allocation came after
   building the model on the CPU and joining the process group (which waits for the later rank), so
   the two files' first entries were 56 ms apart, not 0.5 s.  Here each process joins the group and
   builds the model before recording starts at T0 + 0.5 s x rank; model.cuda() follows at once.
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpurec3 as g  # noqa: E402

HERE = os.path.basename(__file__)
MiB = g.MiB


def w_ranks_apart_sync(ctx, rank, world=2, store=None, steps=6):
    """One rank of a 2-process training run on one GPU: 4-layer GPT-2 (n_embd 512), AdamW, bf16
    autocast, batch 4 x seq 256; a gloo barrier (FileStore) before every step, as a collective would.
    Recording started at T0 + 0.5 s x rank, after imports and CUDA initialisation."""
    return g.w_ranks_apart(ctx, rank, world=world, store=store, steps=steps)


g.WORKLOADS["ranks_apart_sync"] = w_ranks_apart_sync

PREBUILT = {}


def w_ranks_apart_prebuilt(ctx, rank, world=2, store=None, steps=6):
    """One rank of a 2-process training run on one GPU: 4-layer GPT-2 (n_embd 512), AdamW, bf16
    autocast, batch 4 x seq 256; a gloo barrier before every step, as a collective would.  The process
    group is joined and the model built on the CPU before recording starts at T0 + 0.5 s x rank, so the
    first CUDA allocation (model.cuda()) follows the recording's start at once."""
    import torch
    import torch.distributed as dist
    model = PREBUILT["model"].cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ctx.keep.update(model=model, opt=opt)
    for step in range(steps):
        dist.barrier()
        ctx.begin(step, start=time.time())
        g.train_step(ctx, model, opt,
                     lambda: (lambda t: (t, t))(torch.randint(0, 50257, (4, 256), device="cuda")), g.lm_loss)
        ctx.end()
    dist.barrier()
    ctx.meta["before_dump"] = time.time()
    ctx.on_finish = dist.destroy_process_group


g.WORKLOADS["ranks_apart_prebuilt"] = w_ranks_apart_prebuilt


class Sched(g.Sched):
    def spawn(self, s):
        env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF=g.SETTINGS[s["setting"]], PYTHONUNBUFFERED="1")
        s["command"] = "python3 testdata/gen/%s one '<spec>' (PYTORCH_CUDA_ALLOC_CONF=%r)" % (HERE, g.SETTINGS[s["setting"]])
        return subprocess.Popen([sys.executable, __file__, "one", json.dumps(s)], env=env)


def one(spec):
    if spec.get("record_at"):
        import torch
        import transformers  # noqa: F401
        from transformers import GPT2LMHeadModel  # noqa: F401
        import torch.distributed  # noqa: F401
        g.versions()  # imports torchvision, timm, triton now, not after record_at
        torch.cuda.init()
        torch.cuda.get_device_properties(0)
        if spec["workload"] == "ranks_apart_prebuilt":
            import torch.distributed as dist
            kw = spec["kwargs"]
            dist.init_process_group("gloo", init_method="file://" + kw["store"], rank=kw["rank"],
                                    world_size=kw["world"])
            PREBUILT["model"] = g.gpt2(4, 512, 8, 256)
            torch.cuda.get_device_name(0)
        spec.setdefault("extra", {})["ready_at"] = time.time()
        while time.time() < spec["record_at"]:
            time.sleep(0.0005)
    g.child(spec)


def ranks(outdir, world=2, apart=0.5, workload="ranks_apart_sync", folder="ranks_apart"):
    out = os.path.join(outdir, folder)
    store = "/tmp/ranks_apart_sync_store_%d" % os.getpid()
    t0 = time.time() + 25.0
    procs = []
    for r in range(world):
        s = g.rec("ranks_apart", workload, "", "default", {"rank": r, "world": world, "store": store},
                  extra={"generator": "testdata/gen/" + HERE, "rank": r, "world": world,
                         "record_at": t0 + apart * r, "t0": t0, "apart_s": apart})
        s.update(name="ranks_apart_rank%d" % r, out=os.path.join(out, "rank%d" % r), record_at=t0 + apart * r)
        s["command"] = "python3 testdata/gen/%s all: rank %d records from T0 + %.1f s" % (HERE, r, apart * r)
        procs.append(subprocess.Popen([sys.executable, __file__, "one", json.dumps(s)],
                                      env=dict(os.environ, PYTORCH_CUDA_ALLOC_CONF="", PYTHONUNBUFFERED="1")))
    for p in procs:
        p.wait(timeout=150)
    print("ranks_apart done", [p.returncode for p in procs], flush=True)


def llama_caps(outdir, sched, lo, hi, step):
    caps = list(range(lo * MiB, hi * MiB + 1, step * MiB))
    specs = []
    for c in caps:
        for st in ("gc_06", "default"):
            specs.append(g.probe(outdir, "llama_varlen_fine_%s%s" % (st, g.capname(c)), "llama_varlen", st, cap=c,
                                 gib=c // g.GiB + 1))
    res = sched.run(specs)
    rows = [{"cap_bytes": c, "gc_06": g._row(res.get("llama_varlen_fine_gc_06%s" % g.capname(c))),
             "default": g._row(res.get("llama_varlen_fine_default%s" % g.capname(c)))} for c in caps]
    choice, why = None, None
    for row in reversed(rows):
        gg, d = row["gc_06"], row["default"]
        if gg and d and gg["oom"] and not d["oom"]:
            choice, why = row["cap_bytes"], "gc 0.6 OOMs, default fits"
            break
    if choice is None:
        for row in reversed(rows):
            gg, d = row["gc_06"], row["default"]
            if gg and d and gg["oom"] != d["oom"]:
                choice, why = row["cap_bytes"], "exactly one setting OOMs"
                break
    with open(os.path.join(outdir, "probes", "llama_varlen_caps_fine.json"), "w") as f:
        json.dump({"rule": "largest probed cap where gc 0.6 OOMs and the default fits; else where exactly one "
                           "of them OOMs", "chosen_cap_bytes": choice, "why": why, "rows": rows}, f, indent=1)
    print("llama_varlen fine caps: chosen", choice, why, flush=True)
    if choice:
        specs = [g.rec("whatif", "llama_varlen", st + g.capname(choice), st, cap=choice, gib=choice // g.GiB + 1,
                       extra={"generator": "testdata/gen/gpurec3.py (workload), run by testdata/gen/" + HERE,
                              "cap_choice": why})
                 for st in ("gc_06", "default")]
        for s in specs:
            s["out"] = os.path.join(outdir, s["name"])
        sched.run(specs)


def main():
    if sys.argv[1] == "one":
        one(json.loads(sys.argv[2]))
        return
    outdir = sys.argv[2]
    arg = lambda k, d: type(d)(sys.argv[sys.argv.index(k) + 1]) if k in sys.argv else d  # noqa: E731
    os.makedirs(os.path.join(outdir, "probes"), exist_ok=True)
    sched = Sched(outdir, arg("--deadline", 400.0))
    if "--prebuilt" in sys.argv:
        ranks(outdir, workload="ranks_apart_prebuilt", folder="ranks_apart_prebuilt")
        return
    ranks(outdir)
    llama_caps(outdir, sched, arg("--lo", 5376), arg("--hi", 5680), arg("--step", 16))
    print("DONE at %.0f s" % (time.time() - sched.t0), flush=True)


if __name__ == "__main__":
    main()
