#!/usr/bin/env python3
"""Record real CUDA memory snapshots (PyTorch 2.x) as ground truth for issues 21-25.

    python3 testdata/gen/gpurec3.py all OUTDIR [--deadline SECONDS] [--only GROUP,...]
    python3 testdata/gen/gpurec3.py one SPEC_JSON        (internal: one recording or probe)

`all` runs every recording below, each in its own process (several at once on the one GPU,
within a memory budget), in three phases: uncapped and fixed-cap recordings; unrecorded probes
that choose the caps that need measuring (llama_varlen's cap, the llama_ckpt_bs cap probes);
the recordings under those caps.  Every recording starts before the process's first CUDA
allocation with `_record_memory_history(enabled="all", context="all", stacks="python",
max_entries=1_000_000)` and is seeded (torch.manual_seed(0), and random.Random(seed) for the
random schedules).  Under a cap (torch.cuda.set_per_process_memory_fraction(cap / total_memory))
an OutOfMemoryError is caught: its full text is kept, the failed step's tensors are released
(the exception and its frames dropped, opt.zero_grad(set_to_none=True), gc.collect()), and then
the summary, stats and dump are taken with the model and optimizer state alive.

Each recording writes OUTDIR/<group>/<workload>/<folder>/:
    snapshot.pickle.xz   torch.cuda.memory._dump_snapshot(), xz preset 9
    summary.txt          torch.cuda.memory_summary() right before the dump
    stats.json           torch.cuda.memory_stats() at the same moment
    meta.json            alloc_conf, setting, cap_bytes, fraction, total_memory, oom, oom_message,
                         oom_step, oom_where, peak_reserved, peak_allocated, num_ooms,
                         num_alloc_retries, per_step, doc (what the workload does), command, ...
Probes (unrecorded) write OUTDIR/probes/<name>.json with the same figures.

Groups and workloads:
  whatif/pt123548        pytorch#123548: 60 cycles of four seeded tensors of 150-400 MiB, then a
                         2 MiB tensor that is kept, then the four freed; under
                         max_split_size_mb:128,expandable_segments:True, each alone, the default.
  whatif/vllm_load       vLLM#41268: per layer (6) a 530 MiB scratch and a 530 MiB result kept;
                         the scratches freed together (list cleared); per layer a 270 MiB weight
                         kept (lands in a cached 530 MiB block and splits it); a 2 GiB request.
                         Under a 7,680 MiB cap: default, max_split_size_mb:20, expandable; and
                         default uncapped.
  whatif/frag_oom        eight 200 MiB tensors freed; 64 x 25 MiB carved from their blocks,
                         every other one freed (32 holes of 25 MiB = 800 MiB cached between live
                         blocks); a 600 MiB request under a 2 GiB cap; five settings.
  whatif/llama_varlen    transformers Llama (8 layers, hidden 1024), AdamW, bf16 autocast,
                         gradient checkpointing, 6 steps of seeded random (batch, seq);
                         garbage_collection_threshold:0.6 and default under a cap chosen by the
                         probes (gc 0.6 OOMs in a later step), and default uncapped.
  whatif/resnet18_varlen torchvision ResNet-18, SGD, bf16 autocast, 8 steps of seeded random
                         (batch, resolution); default and gc 0.6, uncapped and under one cap.
  scaling/llama_ckpt_bs  the Llama above with gradient checkpointing, seq 512, batch 1,2,4,8,12;
                         cap probes (every batch up to the first two OOMs, default and
                         expandable_segments, unrecorded) -> cap_probe.json, and the default
                         runs at the largest fitting batch and the first OOMing batch recorded.
  scaling/vit_bs         timm vit_base_patch16_224, AdamW, bf16, batch 8,16,32,48,64.
  scaling/bert_seq       transformers BertForMaskedLM (6 layers, eager attention), batch 4,
                         seq 128,256,512,768,1024, no checkpointing.
  ranks_apart            two processes of one training workload (4-layer GPT-2, 6 steps, a gloo
                         barrier before each step), the second started 0.5 s after the first,
                         each recording its own file; meta has the measured start offsets.
  kv_eval_prompts        GPT-2 (6 layers) model.generate(use_cache=True) over 24 prompts of
                         seeded random length: one prompt is one step; meta lists the lengths.
  host_memory            whether _record_memory_history takes record_pinned_host_memory; if so a
                         pinned-host-memory recording (and a host-only one with record_cuda=False).
"""
import gc
import inspect
import json
import lzma
import os
import pickle
import random
import subprocess
import sys
import time
import traceback

MiB = 1 << 20
GiB = 1 << 30
HERE = os.path.basename(__file__)
HISTORY = dict(enabled="all", context="all", stacks="python", max_entries=1_000_000)
SETTINGS = {
    "default": "",
    "expandable": "expandable_segments:True",
    "max_split_128": "max_split_size_mb:128",
    "max_split_64": "max_split_size_mb:64",
    "max_split_20": "max_split_size_mb:20",
    "max_split_128_expandable": "max_split_size_mb:128,expandable_segments:True",
    "gc_06": "garbage_collection_threshold:0.6",
}


# ---------------------------------------------------------------------------- in the child

class Ctx:
    """What a workload reports to its recording: the step it is in and what it keeps alive."""

    def __init__(self, meta):
        self.meta = meta
        self.step = None
        self.keep = {}
        self.t0 = time.time()
        meta["per_step"] = []

    def begin(self, step, **info):
        self.step = step
        self.info = info

    def end(self):
        import torch
        torch.cuda.synchronize()
        rec = {"step": self.step, "seconds": round(time.time() - self.t0, 3),
               "time": time.time(),
               "allocated_after": torch.cuda.memory_allocated(),
               "reserved_after": torch.cuda.memory_reserved(),
               "max_allocated_so_far": torch.cuda.max_memory_allocated(),
               "max_reserved_so_far": torch.cuda.max_memory_reserved()}
        rec.update(self.info)
        self.meta["per_step"].append(rec)


def train_step(ctx, model, opt, batch_fn, loss_fn):
    import torch
    x, y = batch_fn()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = loss_fn(model, x, y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    del x, y, loss


def w_pt123548(ctx, cycles=60, seed=0):
    """pytorch#123548: per cycle four seeded tensors of 150-400 MiB, then a 2 MiB tensor kept alive
    (it fences the freed range off the segment's tail), then the four freed; 60 cycles."""
    import torch
    rng = random.Random(seed)
    kept = ctx.keep.setdefault("kept", [])
    for c in range(cycles):
        ctx.begin(c)
        big = [torch.empty(rng.randint(150 * MiB, 400 * MiB), dtype=torch.uint8, device="cuda")
               for _ in range(4)]
        kept.append(torch.empty(2 * MiB, dtype=torch.uint8, device="cuda"))
        del big
        ctx.end()


def w_vllm_load(ctx, layers=6):
    """vLLM#41268: per layer a 530 MiB scratch and a 530 MiB result (kept); the six scratches freed
    together after the pass (list cleared); per layer a 270 MiB weight kept, which lands in a cached
    530 MiB block and splits it (a 260 MiB remainder); then a 2 GiB request."""
    import torch
    results = ctx.keep.setdefault("results", [])
    weights = ctx.keep.setdefault("weights", [])
    ctx.begin(0, phase="pass")
    scratches = []
    for _ in range(layers):
        scratches.append(torch.empty(530 * MiB, dtype=torch.uint8, device="cuda"))
        results.append(torch.empty(530 * MiB, dtype=torch.uint8, device="cuda"))
    scratches.clear()
    ctx.end()
    ctx.begin(1, phase="load weights")
    for _ in range(layers):
        weights.append(torch.empty(270 * MiB, dtype=torch.uint8, device="cuda"))
    ctx.end()
    ctx.begin(2, phase="2 GiB request")
    ctx.keep["request"] = torch.empty(2 * GiB, dtype=torch.uint8, device="cuda")
    ctx.end()


def w_frag_oom(ctx, segments=8):
    """Eight 200 MiB tensors freed (eight cached 200 MiB segments); 64 tensors of 25 MiB carved from
    them in order; every other one freed: 32 holes of 25 MiB (800 MiB) between live blocks; then a
    600 MiB request under a 2 GiB cap."""
    import torch
    ctx.begin(0, phase="segments")
    bigs = [torch.empty(200 * MiB, dtype=torch.uint8, device="cuda") for _ in range(segments)]
    del bigs
    ctx.end()
    ctx.begin(1, phase="pieces")
    pieces = [torch.empty(25 * MiB, dtype=torch.uint8, device="cuda") for _ in range(8 * segments)]
    ctx.keep["live"] = pieces[::2]
    del pieces
    ctx.end()
    ctx.begin(2, phase="600 MiB request")
    ctx.keep["request"] = torch.empty(600 * MiB, dtype=torch.uint8, device="cuda")
    ctx.end()


LLAMA = dict(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
             num_attention_heads=16, num_key_value_heads=16, max_position_embeddings=2048)


def llama(ckpt):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**LLAMA))
    model.config.use_cache = False
    if ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return model


def lm_loss(model, x, y):
    return model(input_ids=x, labels=y).loss


def w_llama_varlen(ctx, steps=6, seed=5):
    """transformers LlamaForCausalLM (8 layers, hidden 1024, 16 heads, vocab 32000), AdamW(lr=1e-4),
    bf16 autocast, gradient checkpointing; per step a seeded random batch in {2,4,6,8} and
    sequence length in [128, 1024] (random.Random(5))."""
    import torch
    model = llama(True).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ctx.keep.update(model=model, opt=opt)
    rng = random.Random(seed)
    for step in range(steps):
        b, s = rng.choice([2, 4, 6, 8]), rng.randint(128, 1024)
        ctx.begin(step, batch=b, seq=s)
        train_step(ctx, model, opt,
                   lambda: (lambda t: (t, t))(torch.randint(0, LLAMA["vocab_size"], (b, s), device="cuda")),
                   lm_loss)
        ctx.end()


def ce_loss(model, x, y):
    import torch
    return torch.nn.functional.cross_entropy(model(x), y)


def w_resnet18_varlen(ctx, steps=8, seed=3):
    """torchvision resnet18(weights=None), SGD(lr=0.1, momentum=0.9), bf16 autocast; per step a seeded
    random batch in {16,32,48,64} and image resolution in {128,160,192,224,256} (random.Random(3))."""
    import torch
    import torchvision
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ctx.keep.update(model=model, opt=opt)
    rng = random.Random(seed)
    for step in range(steps):
        b, r = rng.choice([16, 32, 48, 64]), rng.choice([128, 160, 192, 224, 256])
        ctx.begin(step, batch=b, resolution=r)
        train_step(ctx, model, opt,
                   lambda: (torch.randn(b, 3, r, r, device="cuda"),
                            torch.randint(0, 1000, (b,), device="cuda")), ce_loss)
        ctx.end()


def w_llama_ckpt_bs(ctx, batch, seq=512, steps=3):
    """transformers LlamaForCausalLM (8 layers, hidden 1024, 16 heads, vocab 32000) with gradient
    checkpointing (use_reentrant=False), AdamW(lr=1e-4), bf16 autocast, seq 512; 3 steps."""
    import torch
    model = llama(True).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ctx.keep.update(model=model, opt=opt)
    for step in range(steps):
        ctx.begin(step)
        train_step(ctx, model, opt,
                   lambda: (lambda t: (t, t))(torch.randint(0, LLAMA["vocab_size"], (batch, seq), device="cuda")),
                   lm_loss)
        ctx.end()


def w_vit_bs(ctx, batch, steps=3):
    """timm vit_base_patch16_224 (pretrained=False, 1000 classes), AdamW(lr=1e-4), bf16 autocast,
    input randn(b,3,224,224), cross_entropy; 3 steps."""
    import timm
    import torch
    torch.manual_seed(0)
    model = timm.create_model("vit_base_patch16_224", pretrained=False, num_classes=1000).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ctx.keep.update(model=model, opt=opt)
    for step in range(steps):
        ctx.begin(step)
        train_step(ctx, model, opt,
                   lambda: (torch.randn(batch, 3, 224, 224, device="cuda"),
                            torch.randint(0, 1000, (batch,), device="cuda")), ce_loss)
        ctx.end()


def mlm_loss(model, x, y):
    return model(input_ids=x, labels=y).loss


def w_bert_seq(ctx, seq, batch=4, steps=3):
    """transformers BertForMaskedLM(BertConfig(hidden 768, 6 layers, 12 heads, intermediate 3072,
    max_position_embeddings 1024), attn_implementation="eager": seq^2 attention scores),
    AdamW(lr=1e-4), bf16 autocast, batch 4, labels = input_ids; no checkpointing; 3 steps."""
    import torch
    from transformers import BertConfig, BertForMaskedLM
    torch.manual_seed(0)
    cfg = BertConfig(hidden_size=768, num_hidden_layers=6, num_attention_heads=12, intermediate_size=3072,
                     max_position_embeddings=1024)
    try:
        model = BertForMaskedLM._from_config(cfg, attn_implementation="eager")
    except (TypeError, ValueError, AttributeError):
        cfg._attn_implementation = "eager"
        model = BertForMaskedLM(cfg)
    model = model.cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ctx.keep.update(model=model, opt=opt)
    for step in range(steps):
        ctx.begin(step)
        train_step(ctx, model, opt,
                   lambda: (lambda t: (t, t))(torch.randint(0, cfg.vocab_size, (batch, seq), device="cuda")),
                   mlm_loss)
        ctx.end()


def gpt2(n_layer, n_embd, n_head, n_positions):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    return GPT2LMHeadModel(GPT2Config(n_layer=n_layer, n_embd=n_embd, n_head=n_head, n_positions=n_positions))


def w_ranks_apart(ctx, rank, world=2, store=None, steps=6):
    """One rank of a 2-process training run on one GPU: 4-layer GPT-2 (n_embd 512), AdamW, bf16
    autocast, batch 4 x seq 256; a gloo barrier (FileStore) before every step, as a collective would."""
    import torch
    import torch.distributed as dist
    ctx.meta["rank_times"] = {"record_start": ctx.meta["record_start"]}
    dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=world)
    model = gpt2(4, 512, 8, 256).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ctx.keep.update(model=model, opt=opt)
    for step in range(steps):
        dist.barrier()
        ctx.begin(step, start=time.time())
        train_step(ctx, model, opt,
                   lambda: (lambda t: (t, t))(torch.randint(0, 50257, (4, 256), device="cuda")), lm_loss)
        ctx.end()
    dist.barrier()
    ctx.meta["rank_times"]["before_dump"] = time.time()
    ctx.on_finish = dist.destroy_process_group


def w_kv_eval_prompts(ctx, prompts=24, seed=13):
    """GPT-2 (6 layers, n_embd 512, 8 heads, 1024 positions) in eval, torch.inference_mode(),
    model.generate(use_cache=True, greedy, min_new_tokens = max_new_tokens) over 24 prompts of seeded
    random length (16-400 tokens) and new tokens (8-48); one prompt is one step; the generated ids are
    moved to the CPU (nothing kept on the GPU)."""
    import torch
    model = gpt2(6, 512, 8, 1024).cuda().eval()
    ctx.keep["model"] = model
    rng = random.Random(seed)
    plan = []
    outs = []
    with torch.inference_mode():
        for i in range(prompts):
            n, new = rng.randint(16, 400), rng.randint(8, 48)
            plan.append({"prompt_tokens": n, "generated_tokens": new})
            ctx.begin(i, prompt_tokens=n, generated_tokens=new)
            ids = torch.randint(0, 50257, (1, n), device="cuda")
            try:
                out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
                                     min_new_tokens=new, do_sample=False, use_cache=True, pad_token_id=0)
                ctx.meta["loop"] = "model.generate"
            except Exception as e:  # noqa: BLE001 (an older/newer generate: the same loop by hand)
                ctx.meta["generate_error"] = repr(e)[:400]
                ctx.meta["loop"] = "by hand (model(..., past_key_values, use_cache=True))"
                o = model(input_ids=ids, use_cache=True)
                past, tok, toks = o.past_key_values, o.logits[:, -1:].argmax(-1), []
                del o
                for _ in range(new):
                    toks.append(tok)
                    o = model(input_ids=tok, past_key_values=past, use_cache=True)
                    past, tok = o.past_key_values, o.logits[:, -1:].argmax(-1)
                    del o
                out = torch.cat([ids] + toks, 1)
                del past, tok, toks
            outs.append(out.cpu())
            del ids, out
            ctx.end()
    ctx.meta["prompts"] = plan


def w_host_memory(ctx, record_cuda=True):
    """Pinned host memory: pinned CPU tensors of 1, 4 and 16 MiB copied to the GPU non_blocking and
    freed, some kept; recorded with record_pinned_host_memory=True (record_cuda as given)."""
    import torch
    kept = ctx.keep.setdefault("kept", [])
    for step in range(4):
        ctx.begin(step)
        for n in (1, 4, 16):
            h = torch.empty(n * MiB, dtype=torch.uint8, pin_memory=True)
            d = h.to("cuda", non_blocking=True)
            torch.cuda.synchronize()
            if n == 4 and step % 2 == 0:
                kept.append(h)
            del h, d
        ctx.end()


WORKLOADS = {f.__name__[2:]: f for f in (w_pt123548, w_vllm_load, w_frag_oom, w_llama_varlen, w_resnet18_varlen,
                                          w_llama_ckpt_bs, w_vit_bs, w_bert_seq, w_ranks_apart,
                                          w_kv_eval_prompts, w_host_memory)}


def versions():
    out = {}
    for m in ("torch", "transformers", "torchvision", "timm", "triton"):
        try:
            out[m] = __import__(m).__version__
        except Exception:  # noqa: BLE001
            out[m] = None
    return out


def snapshot_facts(snap):
    acts = {}
    for t in snap.get("device_traces", []):
        for e in t:
            acts[e["action"]] = acts.get(e["action"], 0) + 1
    segs = snap.get("segments", [])
    return {"actions": acts, "trace_entries": [len(t) for t in snap.get("device_traces", [])],
            "segments": len(segs), "reserved": sum(s["total_size"] for s in segs),
            "allocated": sum(s["allocated_size"] for s in segs),
            "expandable_segments": sum(1 for s in segs if s.get("is_expandable")),
            "allocator_settings": snap.get("allocator_settings"),
            "keys": sorted(snap.keys()),
            "first_time_us": min((t[0]["time_us"] for t in snap.get("device_traces", []) if t), default=None),
            "last_time_us": max((t[-1]["time_us"] for t in snap.get("device_traces", []) if t), default=None),
            "host_traces": len(snap.get("host_traces", []) or []) if "host_traces" in snap else None}


def child(spec):
    t_proc = time.time()
    import torch
    meta = {"workload": spec["workload"], "group": spec["group"], "setting": spec["setting"],
            "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""), "cap_bytes": spec.get("cap_bytes"),
            "fraction": None, "oom": False, "oom_message": None, "oom_step": None, "oom_where": None,
            "recorded": spec["record"], "generator": "testdata/gen/" + HERE,
            "command": spec.get("command"), "spec": spec, "torch": torch.__version__, "cuda": torch.version.cuda,
            "versions": versions(), "doc": " ".join((WORKLOADS[spec["workload"]].__doc__ or "").split()),
            "process_start": t_proc}
    meta.update(spec.get("extra", {}))
    out = spec.get("out")
    if out:
        os.makedirs(out, exist_ok=True)
    meta["device"] = torch.cuda.get_device_name(0)
    total = torch.cuda.get_device_properties(0).total_memory
    meta["total_memory"] = meta["device_total"] = total
    if spec.get("cap_bytes"):
        meta["fraction"] = spec["cap_bytes"] / total
        torch.cuda.set_per_process_memory_fraction(meta["fraction"], 0)
    hist = dict(HISTORY)
    if spec["workload"] == "host_memory":
        sig = inspect.signature(torch.cuda.memory._record_memory_history)
        meta["record_memory_history_signature"] = str(sig)
        # pytorch/pytorch#182407 first named the argument record_host (and had
        # no record_cuda); the 2.14 release notes name it
        # record_pinned_host_memory, with record_cuda.
        arg = next((a for a in ("record_pinned_host_memory", "record_host") if a in sig.parameters), None)
        if arg is None:
            meta["host_memory"] = "not supported by this torch: no record_pinned_host_memory (or record_host) parameter"
            with open(os.path.join(out, "meta.json"), "w") as f:
                json.dump(meta, f, indent=1, sort_keys=True, default=str)
            print(json.dumps({"name": spec["name"], "host_memory": meta["host_memory"]}), flush=True)
            return
        hist[arg] = True
        if not spec["kwargs"].get("record_cuda", True):
            if "record_cuda" not in sig.parameters:
                meta["host_memory"] = "this torch records host memory (%s) but has no record_cuda parameter" % arg
            else:
                hist["record_cuda"] = False
    ctx = Ctx(meta)
    ctx.on_finish = None
    if spec["record"]:
        meta["record_start"] = time.time()
        torch.cuda.memory._record_memory_history(**hist)
        meta["history"] = {k: v for k, v in hist.items()}
    else:
        meta["record_start"] = time.time()
    try:
        WORKLOADS[spec["workload"]](ctx, **spec.get("kwargs", {}))
    except torch.OutOfMemoryError as e:
        meta["oom"] = True
        meta["oom_message"] = str(e)
        meta["oom_step"] = ctx.step
        meta["oom_where"] = ["%s:%d %s" % (os.path.basename(f.filename), f.lineno, f.name)
                             for f in traceback.extract_tb(e.__traceback__)][-6:]
        meta["after_oom"] = ("failed step's tensors released (exception dropped), "
                             "opt.zero_grad(set_to_none=True), gc.collect(); what the workload keeps is alive")
    except Exception:  # noqa: BLE001
        meta["error"] = traceback.format_exc()[-3000:]
    if meta["oom"]:
        opt = ctx.keep.get("opt")
        if opt is not None:
            opt.zero_grad(set_to_none=True)
        ctx.keep.pop("request", None)
        gc.collect()
    m = ctx.keep.get("model")
    if m is not None:
        cfg = getattr(m, "config", None)
        meta["model"] = {"class": type(m).__name__, "params": sum(p.numel() for p in m.parameters()),
                         "param_bytes": sum(p.numel() * p.element_size() for p in m.parameters()),
                         "attn_implementation": getattr(cfg, "_attn_implementation", None),
                         "gradient_checkpointing": bool(getattr(m, "is_gradient_checkpointing", False)),
                         "optimizer": type(ctx.keep["opt"]).__name__ if "opt" in ctx.keep else None}
    torch.cuda.synchronize()
    stats = torch.cuda.memory_stats()
    meta.update(peak_reserved=stats.get("reserved_bytes.all.peak"), peak_allocated=stats.get("allocated_bytes.all.peak"),
                num_ooms=stats.get("num_ooms"), num_alloc_retries=stats.get("num_alloc_retries"),
                at_dump={k: stats.get(k) for k in ("allocated_bytes.all.current", "reserved_bytes.all.current",
                                                    "active_bytes.all.current", "segment.all.current", "max_split_size")},
                device_free_at_end=torch.cuda.mem_get_info(0)[0], seconds=round(time.time() - t_proc, 2))
    if spec["record"]:
        summary = torch.cuda.memory_summary()
        stats = torch.cuda.memory_stats()
        path = os.path.join(out, "snapshot.pickle")
        torch.cuda.memory._dump_snapshot(path)
        meta["dump_time"] = time.time()
        with open(os.path.join(out, "summary.txt"), "w") as f:
            f.write(summary)
        with open(os.path.join(out, "stats.json"), "w") as f:
            json.dump(stats, f, indent=1, sort_keys=True)
        raw = open(path, "rb").read()
        meta["snapshot_bytes"] = len(raw)
        meta["snapshot_facts"] = snapshot_facts(pickle.loads(raw))
        with open(path + ".xz", "wb") as f:
            f.write(lzma.compress(raw, format=lzma.FORMAT_XZ, preset=9))
        os.remove(path)
    if ctx.on_finish:
        ctx.on_finish()
    res = os.path.join(out, "meta.json") if spec["record"] else spec["probe_out"]
    with open(res, "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True, default=str)
    print(json.dumps({k: meta.get(k) for k in ("workload", "setting", "cap_bytes", "oom", "oom_step", "peak_reserved",
                                                "peak_allocated", "num_alloc_retries", "seconds")}
                     | {"name": spec["name"], "error": (meta.get("error") or "")[-300:] or None}), flush=True)


# ---------------------------------------------------------------------------- the driver

class Sched:
    """Runs specs as child processes, at most `slots` at once and within `budget` GiB of estimates."""

    def __init__(self, outdir, deadline, slots=12, budget=110):
        self.outdir, self.deadline, self.slots, self.budget = outdir, deadline, slots, budget
        self.t0 = time.time()

    def left(self):
        return self.deadline - (time.time() - self.t0)

    def run(self, specs):
        pending, running, results = list(specs), [], {}
        while pending or running:
            for p in list(running):
                if p[0].poll() is not None:
                    running.remove(p)
                    results[p[1]["name"]] = self.result(p[1], p[0].returncode)
                elif time.time() - p[2] > p[1].get("timeout", 200) or self.left() < 5:
                    p[0].kill()
            while pending and len(running) < self.slots and self.left() > 25:
                used = sum(p[1].get("gib", 8) for p in running)
                if running and used + pending[0].get("gib", 8) > self.budget:
                    break
                s = pending.pop(0)
                running.append((self.spawn(s), s, time.time()))
            if pending and self.left() <= 25 and not running:
                for s in pending:
                    print("SKIPPED (deadline)", s["name"], flush=True)
                break
            time.sleep(0.2)
        return results

    def spawn(self, s):
        env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF=SETTINGS[s["setting"]], PYTHONUNBUFFERED="1")
        if s["workload"] == "ranks_apart" and "ranks" in s:
            return subprocess.Popen([sys.executable, __file__, "pair", json.dumps(s)], env=env)
        s["command"] = "python3 testdata/gen/%s one '<spec>' (PYTORCH_CUDA_ALLOC_CONF=%r)" % (HERE, SETTINGS[s["setting"]])
        return subprocess.Popen([sys.executable, __file__, "one", json.dumps(s)], env=env)

    def result(self, s, rc):
        path = os.path.join(s["out"], "meta.json") if s.get("record") else s.get("probe_out")
        if "ranks" in s:
            path = os.path.join(s["out"], "launch.json")
        try:
            return json.load(open(path))
        except Exception:  # noqa: BLE001
            print("FAILED", s["name"], "rc", rc, flush=True)
            return None


def pair(spec):
    """Start two ranks 0.5 s apart, as two processes, each recording its own file."""
    procs = []
    store = "/tmp/ranks_apart_store_%d" % os.getpid()
    starts = []
    for r in range(spec["ranks"]):
        s = dict(spec, name=spec["name"] + "_rank%d" % r, out=os.path.join(spec["out"], "rank%d" % r),
                 kwargs={"rank": r, "world": spec["ranks"], "store": store})
        s.pop("ranks")
        s["command"] = "python3 testdata/gen/%s pair '<spec>': rank %d started %.1f s after rank 0" % (HERE, r, 0.5 * r)
        if r:
            time.sleep(0.5)
        starts.append(time.time())
        procs.append(subprocess.Popen([sys.executable, __file__, "one", json.dumps(s)]))
    for p in procs:
        p.wait()
    with open(os.path.join(spec["out"], "launch.json"), "w") as f:
        json.dump({"popen_times": starts, "popen_offset_s": [t - starts[0] for t in starts]}, f, indent=1)


def rec(group, workload, folder, setting, kwargs=None, cap=None, gib=8, timeout=200, extra=None):
    return {"name": f"{group}/{workload}/{folder}", "group": group, "workload": workload, "setting": setting,
            "kwargs": kwargs or {}, "cap_bytes": cap, "record": True, "gib": gib, "timeout": timeout,
            "extra": extra or {}}


def probe(outdir, name, workload, setting, kwargs=None, cap=None, gib=8, timeout=200):
    return {"name": name, "group": "probes", "workload": workload, "setting": setting, "kwargs": kwargs or {},
            "cap_bytes": cap, "record": False, "gib": gib, "timeout": timeout,
            "probe_out": os.path.join(outdir, "probes", name.replace("/", "__") + ".json")}


def capname(cap):
    return "_cap%dM" % (cap // MiB)


def drive(outdir, deadline, only):
    os.makedirs(os.path.join(outdir, "probes"), exist_ok=True)
    sched = Sched(outdir, deadline)
    W = "whatif"

    def place(specs):
        for s in specs:
            if s.get("record"):
                s["out"] = os.path.join(outdir, s["name"])
        return [s for s in specs if not only or set(s["name"].split("/")[:2]) & set(only)
                or s["workload"] in only]

    # ---- phase 1: everything whose cap is fixed in advance
    p1 = []
    for st in ("max_split_128_expandable", "max_split_128", "expandable", "default"):
        p1.append(rec(W, "pt123548", st, st, gib=16))
    vcap = 7680 * MiB
    for st in ("default", "max_split_20", "expandable"):
        p1.append(rec(W, "vllm_load", st + capname(vcap), st, cap=vcap, gib=9))
    p1.append(rec(W, "vllm_load", "default", "default", gib=9))
    fcap = 2048 * MiB
    for st in ("default", "expandable", "max_split_64", "max_split_128", "max_split_20", "gc_06"):
        p1.append(rec(W, "frag_oom", st + capname(fcap), st, cap=fcap, gib=3))
    p1.append(rec(W, "llama_varlen", "default", "default", gib=10))
    p1.append(rec(W, "resnet18_varlen", "default", "default", gib=8))
    p1.append(rec(W, "resnet18_varlen", "gc_06", "gc_06", gib=8))
    sc = "scaling"
    for b in (1, 2, 4, 8, 12):
        p1.append(rec(sc, "llama_ckpt_bs", "batch_%d" % b, "default", {"batch": b}, gib=4 + b,
                      extra={"param": "batch", "value": b, "batch": b, "steps": 3, "fixed": {"seq": 512}}))
    for b in (8, 16, 32, 48, 64):
        p1.append(rec(sc, "vit_bs", "batch_%d" % b, "default", {"batch": b}, gib=3 + b // 4,
                      extra={"param": "batch", "value": b, "batch": b, "steps": 3, "fixed": {"image": 224}}))
    for s in (128, 256, 512, 768, 1024):
        p1.append(rec(sc, "bert_seq", "seq_%d" % s, "default", {"seq": s}, gib=3 + s // 128,
                      extra={"param": "seq", "value": s, "seq": s, "steps": 3, "fixed": {"batch": 4}}))
    ra = rec("ranks_apart", "ranks_apart", "", "default", gib=6)
    ra.update(name="ranks_apart", ranks=2)
    p1.append(ra)
    kv = rec("kv_eval_prompts", "kv_eval_prompts", "", "default", gib=4)
    kv["name"] = "kv_eval_prompts"
    p1.append(kv)
    for nm, kw in (("host_memory", {}), ("host_only", {"record_cuda": False})):
        h = rec("host_memory", "host_memory", "", "default", kw, gib=1)
        h["name"] = nm
        p1.append(h)
    r1 = sched.run(place(p1))
    print("PHASE 1 done at %.0f s" % (time.time() - sched.t0), flush=True)

    # ---- phase 2: probes
    p2 = []
    lv = r1.get(W + "/llama_varlen/default")
    lcaps = []
    if lv and lv.get("peak_reserved"):
        P = lv["peak_reserved"]
        lcaps = sorted({int(P * f) // (16 * MiB) * (16 * MiB) for f in
                        (0.56, 0.60, 0.64, 0.68, 0.72, 0.76, 0.80, 0.84, 0.88, 0.92, 0.96, 1.0)})
        for c in lcaps:
            for st in ("gc_06", "default"):
                p2.append(probe(outdir, "llama_varlen_%s%s" % (st, capname(c)), "llama_varlen", st, cap=c,
                                gib=c // GiB + 1))
    rn = r1.get(W + "/resnet18_varlen/default")
    if rn and rn.get("peak_reserved"):
        A, R = rn["peak_allocated"], rn["peak_reserved"]
        rcap = (A + (R - A) // 2) // MiB * MiB
        for st in ("default", "gc_06"):
            p2.append(rec(W, "resnet18_varlen", st + capname(rcap), st, cap=rcap, gib=8))
    b12 = r1.get(sc + "/llama_ckpt_bs/batch_12")
    pcap = None
    if b12 and b12.get("peak_reserved"):
        pcap = int(0.8 * b12["peak_reserved"]) // MiB * MiB
        for st in ("default", "expandable"):
            for b in range(1, 15):
                p2.append(probe(outdir, "llama_ckpt_bs_%s_b%d" % (st, b), "llama_ckpt_bs", st, {"batch": b},
                                cap=pcap, gib=pcap // GiB + 1))
    r2 = sched.run(place(p2))
    print("PHASE 2 done at %.0f s" % (time.time() - sched.t0), flush=True)

    # ---- phase 3: recordings under the caps the probes chose
    p3 = []
    choice = None
    rows = []
    for c in lcaps:
        g = r2.get("llama_varlen_gc_06%s" % capname(c))
        d = r2.get("llama_varlen_default%s" % capname(c))
        rows.append({"cap_bytes": c, "gc_06": _row(g), "default": _row(d)})
    for want_default_fits in (True, False):
        for row in reversed(rows):
            g, d = row["gc_06"], row["default"]
            if g and g["oom"] and (g["oom_step"] or 0) >= 3 and (not want_default_fits or (d and not d["oom"])):
                choice = row["cap_bytes"]
                break
        if choice:
            break
    if choice is None:
        for row in reversed(rows):
            if row["gc_06"] and row["gc_06"]["oom"]:
                choice = row["cap_bytes"]
                break
    with open(os.path.join(outdir, "probes", "llama_varlen_caps.json"), "w") as f:
        json.dump({"rule": "largest probed cap where gc 0.6 OOMs in step >= 3 and default fits; else where gc "
                           "0.6 OOMs in step >= 3; else the largest where it OOMs",
                   "chosen_cap_bytes": choice, "rows": rows}, f, indent=1)
    if choice:
        for st in ("gc_06", "default"):
            p3.append(rec(W, "llama_varlen", st + capname(choice), st, cap=choice, gib=choice // GiB + 1))
    if pcap:
        tables = {}
        for st in ("default", "expandable"):
            t = [dict(_row(r2.get("llama_ckpt_bs_%s_b%d" % (st, b))) or {"error": "missing"}, batch=b)
                 for b in range(1, 15)]
            ooms = [r["batch"] for r in t if r.get("oom")]
            first = ooms[0] if ooms else None
            tables[st] = {"alloc_conf": SETTINGS[st], "rows": t, "first_oom_batch": first,
                          "first_two_ooms": ooms[:2],
                          "largest_fit_below_first_oom": (max([r["batch"] for r in t if r.get("oom") is False and
                                                               (first is None or r["batch"] < first)], default=None)),
                          "fits_above_first_oom": [r["batch"] for r in t if r.get("oom") is False and first
                                                   and r["batch"] > first]}
        cp = {"cap_bytes": pcap, "cap_mib": pcap // MiB, "fraction": None,
              "cap_rule": "int(0.8 * uncapped default peak_reserved at batch 12) // MiB * MiB",
              "probe_rule": "every batch from 1 to 14 (covering the first two OOMs), each in its own process, "
                            "no recording, set_per_process_memory_fraction(cap / total_memory)",
              "ref_batch": 12, "ref_peak_reserved": b12["peak_reserved"], "tables": tables}
        with open(os.path.join(outdir, "probes", "llama_ckpt_bs_cap_probe.json"), "w") as f:
            json.dump(cp, f, indent=1)
        d = tables["default"]
        for b in (d["largest_fit_below_first_oom"], d["first_oom_batch"]):
            if b:
                p3.append(rec(sc, "llama_ckpt_bs", "batch_%d%s" % (b, capname(pcap)), "default", {"batch": b},
                              cap=pcap, gib=pcap // GiB + 1,
                              extra={"param": "batch", "value": b, "batch": b, "steps": 3, "fixed": {"seq": 512}}))
    sched.run(place(p3))
    print("PHASE 3 done at %.0f s" % (time.time() - sched.t0), flush=True)


def _row(m):
    if not m:
        return None
    return {k: m.get(k) for k in ("oom", "oom_step", "peak_reserved", "peak_allocated", "num_alloc_retries",
                                  "num_ooms", "error", "fraction")} | {"fits": (not m.get("oom") and not m.get("error"))}


if __name__ == "__main__":
    if sys.argv[1] == "one":
        child(json.loads(sys.argv[2]))
    elif sys.argv[1] == "pair":
        pair(json.loads(sys.argv[2]))
    else:
        dl = float(sys.argv[sys.argv.index("--deadline") + 1]) if "--deadline" in sys.argv else 500
        only = sys.argv[sys.argv.index("--only") + 1].split(",") if "--only" in sys.argv else None
        drive(sys.argv[2], dl, only)
