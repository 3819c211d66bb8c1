#!/usr/bin/env python3
"""Lay out the device output of gpurec3.py / gpurec3b.py under testdata/snapshots/ (standard library).

    python3 testdata/gen/gpurec3_assemble.py PASS1_DIR PASS2_DIR PASS3_DIR [DEST=testdata/snapshots]

PASS1_DIR is gpurec3.py's OUTDIR (`all`), PASS2_DIR gpurec3b.py's (`all`), PASS3_DIR gpurec3b.py's
(`all --prebuilt`).  Copies each recording folder as it came (snapshot.pickle.xz, summary.txt,
stats.json), rewrites meta.json with sorted keys, the scaling points' `fixed` spelled out as
../shared/snapshots/scaling does, and writes the probe tables:
    scaling/llama_ckpt_bs/cap_probe.json   (as ../shared/snapshots/scaling/gpt2_bs/cap_probe.json)
    whatif/llama_varlen/cap_probes.json    (the coarse and the fine cap grids for gc 0.6 / default)
The pair of pass 3 becomes ranks_apart/ (recordings started 0.5 s apart); pass 1's pair, whose
recordings started 3.3 s apart (import time under load), becomes ranks_apart_3s/.  Pass 2's pair
(first entries 56 ms apart) is not kept.
"""
import glob
import json
import os
import shutil
import sys

FIXED = {
    "llama_ckpt_bs": {"model": "LlamaForCausalLM(LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=2816, "
                               "num_hidden_layers=8, num_attention_heads=16, num_key_value_heads=16, "
                               "max_position_embeddings=2048)), gradient_checkpointing(use_reentrant=False)",
                      "optimizer": "AdamW(lr=1e-4)", "autocast": "bf16", "attn_implementation": "default"},
    "vit_bs": {"model": "timm vit_base_patch16_224(pretrained=False, num_classes=1000)", "optimizer": "AdamW(lr=1e-4)",
               "autocast": "bf16"},
    "bert_seq": {"model": "BertForMaskedLM(BertConfig(hidden_size=768, num_hidden_layers=6, num_attention_heads=12, "
                          "intermediate_size=3072, max_position_embeddings=1024))",
                 "optimizer": "AdamW(lr=1e-4)", "autocast": "bf16", "attn_implementation": "eager"},
}


def copy_rec(src, dst, fix=None):
    os.makedirs(dst, exist_ok=True)
    for f in ("snapshot.pickle.xz", "summary.txt", "stats.json"):
        if os.path.exists(os.path.join(src, f)):
            shutil.copy(os.path.join(src, f), os.path.join(dst, f))
    m = json.load(open(os.path.join(src, "meta.json")))
    m.pop("spec", None)
    if fix:
        fix(m)
    with open(os.path.join(dst, "meta.json"), "w") as f:
        json.dump(m, f, indent=1, sort_keys=True)
        f.write("\n")
    return m


def main():
    p1, p2, p3 = sys.argv[1:4]
    dest = sys.argv[4] if len(sys.argv) > 4 else "testdata/snapshots"
    for d in sorted(glob.glob(os.path.join(p1, "whatif", "*", "*"))):
        copy_rec(d, os.path.join(dest, os.path.relpath(d, p1)))
    for d in sorted(glob.glob(os.path.join(p1, "scaling", "*", "*"))):
        w = d.split(os.sep)[-2]

        def fix(m, w=w):
            m["fixed"] = dict(FIXED[w], **m.get("fixed", {}))
        copy_rec(d, os.path.join(dest, os.path.relpath(d, p1)), fix)
    for d in ("kv_eval_prompts",):
        copy_rec(os.path.join(p1, d), os.path.join(dest, d))
    for r in ("rank0", "rank1"):
        copy_rec(os.path.join(p3, "ranks_apart_prebuilt", r), os.path.join(dest, "ranks_apart", r))
        copy_rec(os.path.join(p1, "ranks_apart", r), os.path.join(dest, "ranks_apart_3s", r))
    shutil.copy(os.path.join(p1, "ranks_apart", "launch.json"), os.path.join(dest, "ranks_apart_3s", "launch.json"))

    cp = json.load(open(os.path.join(p1, "probes", "llama_ckpt_bs_cap_probe.json")))
    total = json.load(open(os.path.join(p1, "scaling", "llama_ckpt_bs", "batch_1", "meta.json")))["total_memory"]
    cp["fraction"] = cp["cap_bytes"] / total
    cp["total_memory"] = total
    cp["recorded"] = {}
    for d in sorted(glob.glob(os.path.join(dest, "scaling", "llama_ckpt_bs", "*_cap*"))):
        m = json.load(open(os.path.join(d, "meta.json")))
        cp["recorded"][os.path.basename(d)] = {k: m.get(k) for k in ("batch", "oom", "oom_step", "peak_allocated",
                                                                      "peak_reserved", "num_alloc_retries", "num_ooms")}
    with open(os.path.join(dest, "scaling", "llama_ckpt_bs", "cap_probe.json"), "w") as f:
        json.dump(cp, f, indent=1, sort_keys=True)
        f.write("\n")

    coarse = json.load(open(os.path.join(p1, "probes", "llama_varlen_caps.json")))
    fine = json.load(open(os.path.join(p2, "probes", "llama_varlen_caps_fine.json")))
    with open(os.path.join(dest, "whatif", "llama_varlen", "cap_probes.json"), "w") as f:
        json.dump({"what": "unrecorded runs of llama_varlen (gpurec3.py) under each cap, gc 0.6 and default; "
                           "recorded: default (uncapped) and both settings at the coarse grid's choice",
                   "coarse": coarse, "fine": fine, "total_memory": total}, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
