#!/usr/bin/env python3
"""Record real snapshots on CUDA GPUs (PyTorch 2.x) for snapview's step, monitoring and rank tests.

    python3 testdata/gen/gpurec.py OUTDIR                 (kv_eval, train_norf, monitor_train)
    python3 testdata/gen/gpurec.py OUTDIR SCENARIO
    torchrun --nproc_per_node=2 testdata/gen/gpurec.py OUTDIR ddp

Each scenario runs in its own process from its first CUDA allocation and writes
OUTDIR/<name>.pickle (the snapshot), <name>.summary.txt and <name>.stats.json
(torch.cuda.memory_summary() and memory_stats() right before the dump) and
<name>.meta.json (how it was recorded and the ground truth: steps, planted
lines).

kv_eval        Evaluation of a 4-layer GPT-2 with a KV cache, no record_function:
               N prompts of random length, each followed by a random number of
               generated tokens; the prompt's logits are kept every K-th prompt
               (a cache filled every K steps). The layers repeat inside a forward
               pass and the tokens inside a generation: the step is the prompt.
train_norf     A training loop without record_function over a model of 4
               identical blocks (the same allocation site repeats 4 times per
               step); one activation is kept every K steps.
monitor_train  A training loop that logs memory_stats() every step as JSON Lines
               (<name>.stats.jsonl: "step", "time" (seconds since the epoch) and
               the flat memory_stats() keys) while nvidia-smi writes
               timestamp,index,memory.used,memory.total every 100 ms to
               <name>.smi.csv. From step 10 on, 4 MiB are kept per step (memory
               keeps climbing); at step 5 a 512 MiB buffer is taken outside
               PyTorch's allocator (CuPy), part of the gap nvidia-smi shows.
ddp            DistributedDataParallel on 2 GPUs (torchrun), one file per rank
               (ddp_rank0.pickle, ddp_rank1.pickle); rank 1 alone allocates an
               extra 64 MiB buffer at step 2 and keeps it.
"""
import json
import os
import random
import subprocess
import sys
import time

import torch

OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)
HERE = os.path.basename(__file__)


def line():
    return sys._getframe(1).f_lineno


def start():
    torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python",
                                             max_entries=1000000)


def finish(name, meta):
    torch.cuda.synchronize()
    summary = torch.cuda.memory_summary()
    stats = torch.cuda.memory_stats()
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._dump_snapshot(os.path.join(OUT, name + ".pickle"))
    torch.cuda.memory._record_memory_history(enabled=None)
    with open(os.path.join(OUT, name + ".summary.txt"), "w") as f:
        f.write(summary)
    with open(os.path.join(OUT, name + ".stats.json"), "w") as f:
        json.dump(stats, f, indent=1, sort_keys=True)
    meta.update(torch=torch.__version__, device=torch.cuda.get_device_name(),
                script=HERE, recorded_from_start=True,
                trace_entries=[len(t) for t in snap["device_traces"]],
                history={"enabled": "all", "context": "all", "stacks": "python", "max_entries": 1000000})
    with open(os.path.join(OUT, name + ".meta.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    print(name, "entries", meta["trace_entries"], flush=True)


KV_KEEP_LINE = 0
KV_STEP_LINE = 0


def kv_eval():
    global KV_KEEP_LINE, KV_STEP_LINE
    from transformers import GPT2Config, GPT2LMHeadModel
    rng = random.Random(11)
    n_prompts, keep_every = 8, 3
    start()
    cfg = GPT2Config(n_layer=4, n_embd=256, n_head=4, vocab_size=8192, n_positions=256)
    model = GPT2LMHeadModel(cfg).cuda().eval()
    kept = []
    plan = []
    with torch.inference_mode():
        for i in range(n_prompts):
            length, n_new = rng.randint(16, 64), rng.randint(3, 8)
            plan.append({"prompt_tokens": length, "generated_tokens": n_new})
            KV_STEP_LINE = line() + 1
            ids = torch.randint(0, cfg.vocab_size, (1, length), device="cuda")
            out = model(input_ids=ids, use_cache=True)
            past = out.past_key_values
            if i % keep_every == keep_every - 1:
                KV_KEEP_LINE = line() + 1
                kept.append(out.logits.clone())     # the prompt's logits, kept every 3rd prompt
            tok = out.logits[:, -1:].argmax(-1)
            del out
            for _ in range(n_new):
                out = model(input_ids=tok, past_key_values=past, use_cache=True)
                past = out.past_key_values
                tok = out.logits[:, -1:].argmax(-1)
                del out
            del ids, past, tok
    finish("kv_eval", {"steps": n_prompts, "step_line": KV_STEP_LINE, "plan": plan,
                       "cache": {"file": HERE, "line": KV_KEEP_LINE, "every": keep_every,
                                 "kept": len(kept), "kind": "prompt logits kept every 3rd prompt"},
                       "layers": cfg.n_layer, "record_function": False})


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(512, 512)

    def forward(self, x):
        return torch.relu(self.fc(x)) + x


NORF_KEEP_LINE = 0
NORF_STEP_LINE = 0


def train_norf():
    global NORF_KEEP_LINE, NORF_STEP_LINE
    steps, keep_every = 12, 3
    start()
    model = torch.nn.Sequential(*[Block() for _ in range(4)]).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    kept = []
    for step in range(steps):
        NORF_STEP_LINE = line() + 1
        x = torch.randn(128, 512, device="cuda")
        y = model(x)
        loss = y.square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step % keep_every == keep_every - 1:
            NORF_KEEP_LINE = line() + 1
            kept.append(y.detach().clone())        # 256 KiB kept every 3rd step
        del x, y, loss
    finish("train_norf", {"steps": steps, "step_line": NORF_STEP_LINE, "blocks": 4,
                          "leak": {"file": HERE, "line": NORF_KEEP_LINE, "every": keep_every,
                                   "kept": len(kept), "kind": "an activation kept every 3rd step"},
                          "record_function": False})


MON_LEAK_LINE = 0


def monitor_train():
    global MON_LEAK_LINE
    name = "monitor_train"
    smi_path = os.path.join(OUT, name + ".smi.csv")
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,index,memory.used,memory.total",
                            "--format=csv", "-lms", "100", "-f", smi_path])
    time.sleep(0.5)
    steps, leak_from = 30, 10
    start()
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
                                torch.nn.Linear(4096, 1024)).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    kept, other = [], None
    log = open(os.path.join(OUT, name + ".stats.jsonl"), "w")
    for step in range(steps):
        x = torch.randn(512, 1024, device="cuda")
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step >= leak_from:
            MON_LEAK_LINE = line() + 1
            kept.append(torch.empty(4 * 2**20, dtype=torch.uint8, device="cuda"))
        if step == 5:
            try:
                import cupy
                other = cupy.empty(512 * 2**20, dtype=cupy.uint8)   # outside PyTorch's allocator
            except Exception as e:  # noqa: BLE001
                print("cupy:", e)
        del x, loss
        torch.cuda.synchronize()
        rec = {"step": step, "time": time.time()}
        rec.update(torch.cuda.memory_stats())
        log.write(json.dumps(rec) + "\n")
        log.flush()
        time.sleep(0.1)
    log.close()
    finish(name, {"steps": steps, "leak": {"file": HERE, "line": MON_LEAK_LINE, "from_step": leak_from,
                                           "bytes_per_step": 4 * 2**20},
                  "outside_pytorch": {"bytes": 512 * 2**20 if other is not None else 0, "at_step": 5,
                                      "by": "cupy.empty"},
                  "smi": {"query": "timestamp,index,memory.used,memory.total", "interval_ms": 100,
                          "tz": time.strftime("%Z"), "utc_offset_s": -time.timezone},
                  "gpus": torch.cuda.device_count()})
    time.sleep(0.5)
    smi.terminate()
    smi.wait()


DDP_EXTRA_LINE = 0


def ddp():
    global DDP_EXTRA_LINE
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    torch.cuda.set_device(rank)
    start()
    model = DDP(torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
                                    torch.nn.Linear(4096, 1024)).cuda(), device_ids=[rank])
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    extra = None
    for step in range(6):
        x = torch.randn(256, 1024, device="cuda")
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if rank == 1 and step == 2:
            DDP_EXTRA_LINE = line() + 1
            extra = torch.empty(64 * 2**20, dtype=torch.uint8, device="cuda")   # rank 1 only
        del x, loss
    dist.barrier()
    finish(f"ddp_rank{rank}", {"rank": rank, "world": dist.get_world_size(), "steps": 6,
                               "extra_buffer": {"rank": 1, "file": HERE, "line": DDP_EXTRA_LINE or None,
                                                "bytes": 64 * 2**20, "at_step": 2,
                                                "here": extra is not None}})
    dist.barrier()
    dist.destroy_process_group()


SCENARIOS = {"kv_eval": kv_eval, "train_norf": train_norf, "monitor_train": monitor_train, "ddp": ddp}

if len(sys.argv) > 2:
    SCENARIOS[sys.argv[2]]()
else:
    for name in ("kv_eval", "train_norf", "monitor_train"):
        r = subprocess.run([sys.executable, __file__, OUT, name])
        print(name, "exit", r.returncode, flush=True)
