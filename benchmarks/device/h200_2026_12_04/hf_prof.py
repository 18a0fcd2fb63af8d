"""Where an HF Trainer step's GPU time goes: torch.profiler over two steady steps, kernels grouped by kind."""

import collections
import json
import re
import sys
import time

import torch
from hf_bench import ARCH, CUDA, Tokens, build  # noqa: F401
from torch.profiler import ProfilerActivity, profile
from transformers import Trainer, TrainerCallback, TrainingArguments

TINY = "--tiny" in sys.argv
RUNS = [
    ("l8b_lora_gc_mb4_s2048", "llama-3.1-8b", "lora", 4, 2048, True),
    ("l8b_lora_nogc_mb2_s2048", "llama-3.1-8b", "lora", 2, 2048, False),
    ("l1b_full_nogc_mb8_s2048", "llama-3.2-1b", "full", 8, 2048, False),
    ("l3b_full_gc_mb8_s2048", "llama-3.2-3b", "full", 8, 2048, True),
]
if TINY:
    RUNS = [("tiny_lora", "tiny", "lora", 2, 64, True)]
KINDS = [
    ("attention", r"flash|fmha|attention|sdpa|cudnn.*(fprop|dgrad)"),
    ("gemm", r"gemm|cutlass|xmma|nvjet|sm90_|sm80_|cublas|matmul|splitk"),
    ("optimizer", r"multi_tensor|fused_adam|adam"),
    ("loss", r"log_softmax|softmax|nll|cross_entropy"),
    ("reduce", r"reduce"),
    ("copy_cast", r"copy|memcpy|memset|cat|to_copy|convert"),
    ("elementwise", r"elementwise|vectorized|unrolled|pointwise|index|fill"),
]


def kind(name):
    low = name.lower()
    for k, pat in KINDS:
        if re.search(pat, low):
            return k
    return "other"


class Prof(TrainerCallback):
    def __init__(self, start, stop):
        self.start, self.stop, self.p, self.t = start, stop, None, None

    def on_step_begin(self, args, state, control, **kw):
        if state.global_step == self.start:
            if CUDA:
                torch.cuda.synchronize()
            acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if CUDA else [])
            self.p = profile(activities=acts)
            self.p.__enter__()
            self.t = time.perf_counter()

    def on_step_end(self, args, state, control, **kw):
        if state.global_step == self.stop and self.p is not None:
            if CUDA:
                torch.cuda.synchronize()
            self.wall = time.perf_counter() - self.t
            self.p.__exit__(None, None, None)


def one(name, arch, method, mb, seq, gc_on):
    model = build(arch, method)
    steps = 6
    args = TrainingArguments(
        output_dir="/tmp/hfp", per_device_train_batch_size=mb, max_steps=steps, learning_rate=1e-5, bf16=CUDA,
        gradient_checkpointing=gc_on, logging_strategy="no", save_strategy="no", report_to="none",
        dataloader_num_workers=0, remove_unused_columns=False, disable_tqdm=True, use_cpu=not CUDA)
    cb = Prof(3, 5)  # steps 4 and 5 (global_step counts completed steps)
    tr = Trainer(model=model, args=args, train_dataset=Tokens(mb * steps, seq, ARCH[arch]["vocab_size"]),
                 callbacks=[cb])
    tr.train()
    by_kind, by_name = collections.Counter(), collections.Counter()
    counts = collections.Counter()
    for e in cb.p.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            us = e.device_time if hasattr(e, "device_time") else e.cuda_time
            by_kind[kind(e.name)] += us
            by_name[e.name[:120]] += us
            counts[e.name[:120]] += 1
    busy_s = sum(by_kind.values()) / 1e6 / 2
    out = dict(run=name, wall_per_step_s=cb.wall / 2, gpu_busy_per_step_s=busy_s,
               by_kind_per_step_s={k: v / 1e6 / 2 for k, v in by_kind.most_common()},
               top=[(n, v / 1e6 / 2, counts[n] // 2) for n, v in by_name.most_common(45)])
    del tr, model
    if CUDA:
        torch.cuda.empty_cache()
    return out


if __name__ == "__main__":
    for r in RUNS:
        try:
            print(json.dumps(one(*r)), flush=True)
        except Exception as e:
            print(json.dumps(dict(run=r[0], error=f"{type(e).__name__}: {e}"[:500])), flush=True)
