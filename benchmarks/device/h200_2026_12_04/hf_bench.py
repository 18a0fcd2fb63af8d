"""HF Trainer (+ PEFT LoRA) step rate and peak memory on one GPU, random weights from a config (no download).

Each run: transformers' Trainer at its own defaults (fused AdamW, non-reentrant checkpointing in 5.x, SDPA), a
synthetic dataset of random token ids, grad accumulation 1; steady-state step time = mean of the steps after
WARMUP, each bracketed by torch.cuda.synchronize(). Prints one JSON object per run.
"""

import gc
import json
import sys
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainerCallback, TrainingArguments

TINY = "--tiny" in sys.argv
CUDA = torch.cuda.is_available()
WARMUP, STEPS = (1, 3) if TINY else (4, 14)

ARCH = {
    "llama-3.1-8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                         num_key_value_heads=8, vocab_size=128256, tie_word_embeddings=False, rope_theta=500000.0),
    "llama-3.2-3b": dict(hidden_size=3072, intermediate_size=8192, num_hidden_layers=28, num_attention_heads=24,
                         num_key_value_heads=8, vocab_size=128256, tie_word_embeddings=True, rope_theta=500000.0),
    "llama-3.2-1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
                         num_key_value_heads=8, vocab_size=128256, tie_word_embeddings=True, rope_theta=500000.0),
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, vocab_size=512, tie_word_embeddings=False),
}
# (name, arch, method, micro_batch, seq, gradient_checkpointing)
RUNS = [
    ("l8b_lora_gc_mb4_s2048", "llama-3.1-8b", "lora", 4, 2048, True),
    ("l8b_lora_nogc_mb2_s2048", "llama-3.1-8b", "lora", 2, 2048, False),
    ("l8b_lora_gc_mb1_s8192", "llama-3.1-8b", "lora", 1, 8192, True),
    ("l1b_full_nogc_mb8_s2048", "llama-3.2-1b", "full", 8, 2048, False),
    ("l3b_full_gc_mb8_s2048", "llama-3.2-3b", "full", 8, 2048, True),
]
if TINY:
    RUNS = [("tiny_lora", "tiny", "lora", 2, 64, True), ("tiny_full", "tiny", "full", 2, 64, False)]


class Tokens(torch.utils.data.Dataset):
    def __init__(self, n, seq, vocab):
        g = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, vocab, (n, seq), generator=g)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


class Clock(TrainerCallback):
    def __init__(self):
        self.times = []

    def on_step_begin(self, args, state, control, **kw):
        if CUDA:
            torch.cuda.synchronize()
        self.t0 = time.perf_counter()

    def on_step_end(self, args, state, control, **kw):
        if CUDA:
            torch.cuda.synchronize()
        self.times.append(time.perf_counter() - self.t0)


def build(arch, method):
    cfg = LlamaConfig(**ARCH[arch], max_position_embeddings=131072, attn_implementation="sdpa")
    # LoRA: the frozen base in bf16 (as PEFT scripts load it); full: fp32 weights under the Trainer's bf16 autocast
    dtype = torch.bfloat16 if method == "lora" else torch.float32
    with torch.device("cuda" if CUDA else "cpu"):
        model = LlamaForCausalLM(cfg).to(dtype)
    if method == "lora":
        from peft import LoraConfig, get_peft_model

        lcfg = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, task_type="CAUSAL_LM",
                          target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
        model = get_peft_model(model, lcfg)
    return model


def one(name, arch, method, mb, seq, gc_on):
    model = build(arch, method)
    n_params = sum(p.numel() for p in model.parameters())
    n_train = sum(p.numel() for p in model.parameters() if p.requires_grad)
    args = TrainingArguments(
        output_dir="/tmp/hfb", per_device_train_batch_size=mb, max_steps=STEPS, learning_rate=1e-5,
        bf16=CUDA, gradient_checkpointing=gc_on, logging_strategy="no", save_strategy="no", report_to="none",
        dataloader_num_workers=0, remove_unused_columns=False, disable_tqdm=True, use_cpu=not CUDA,
    )
    clock = Clock()
    tr = Trainer(model=model, args=args, train_dataset=Tokens(mb * STEPS, seq, ARCH[arch]["vocab_size"]),
                 callbacks=[clock])
    if CUDA:
        torch.cuda.reset_peak_memory_stats()
    tr.train()
    steady = clock.times[WARMUP:]
    step_s = sum(steady) / len(steady)
    out = dict(run=name, arch=arch, method=method, micro_batch=mb, seq=seq, gradient_checkpointing=gc_on,
               params=n_params, trainable=n_train, optim=str(args.optim), gc_kwargs=args.gradient_checkpointing_kwargs,
               step_s=step_s, step_s_min=min(steady), step_s_max=max(steady), tokens_per_s=mb * seq / step_s)
    if CUDA:
        out.update(max_allocated_gib=torch.cuda.max_memory_allocated() / 2**30,
                   max_reserved_gib=torch.cuda.max_memory_reserved() / 2**30)
    del tr, model
    gc.collect()
    if CUDA:
        torch.cuda.empty_cache()
    return out


def micro():
    """Launch cost of a tiny op, of op + sync, and cuBLAS bf16 GEMM rates at Llama 3.1 8B's layer shapes."""
    if not CUDA:
        return {}
    x = torch.ones(1, device="cuda")
    for _ in range(200):
        x.add_(1)
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(20000):
        x.add_(1)
    torch.cuda.synchronize()
    launch_us = (time.perf_counter() - t) / 20000 * 1e6
    t = time.perf_counter()
    for _ in range(5000):
        x.add_(1)
        torch.cuda.synchronize()
    sync_us = (time.perf_counter() - t) / 5000 * 1e6
    rates = {}
    for m, k, n in [(8192, 4096, 6144), (8192, 4096, 28672), (8192, 14336, 4096), (8192, 4096, 4096),
                    (8192, 8192, 8192), (2048, 4096, 128256)]:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        for _ in range(5):
            a @ b
        torch.cuda.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(20):
            a @ b
        e1.record()
        torch.cuda.synchronize()
        s = e0.elapsed_time(e1) / 1e3 / 20
        rates[f"{m}x{k}x{n}"] = 2 * m * k * n / s / 1e12
        del a, b
    return dict(launch_us=launch_us, launch_sync_us=sync_us, bf16_gemm_tflops=rates)


if __name__ == "__main__":
    import peft
    import transformers

    meta = dict(torch=torch.__version__, transformers=transformers.__version__, peft=peft.__version__,
                gpu=torch.cuda.get_device_name() if CUDA else "cpu")
    print(json.dumps(dict(meta=meta, micro=micro())), flush=True)
    for r in RUNS:
        try:
            print(json.dumps(one(*r)), flush=True)
        except Exception as e:  # one run out of memory must not lose the others
            print(json.dumps(dict(run=r[0], error=f"{type(e).__name__}: {e}"[:500])), flush=True)
            gc.collect()
            if CUDA:
                torch.cuda.empty_cache()
