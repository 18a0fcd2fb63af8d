# Settles (not run yet: written 2026-12-04 for a lent H200, whose loans paused that session; docs/known-gaps.md 80 (b),
# (e)): (1) the HBM bandwidth eager PyTorch's element-wise kernel classes reach (dtype-converting copies, broadcast and
# mixed-dtype products: is 0.8 of HBM right for them?) and (2) whether the HF LoRA runs' idle GPU time (8B LoRA 0.07 of
# 0.44 s a step) is the host issuing PEFT's adapter ops (host vs GPU ms per Llama-8B layer, with and without PEFT LoRA).
# Run: python benchmarks/device/hf_kernels_host.py (needs torch, transformers, peft; --tiny on a CPU as a smoke test)
"""Host (CPU) time per HF Llama layer, plain vs PEFT LoRA r16 on all seven linears, and the GPU time beside it.

Llama 3.1 8B widths, random weights, bf16 autocast, no Trainer (fwd + bwd only, no optimizer): each case built at 2
and at 6 decoder layers, the per-layer figure = (t6 - t2) / 4, so the embedding, the LM head, the loss and the
per-step overheads cancel. Tokens: 1 x 16 (GPU work negligible: the step is the host issuing kernels) and 2 x 2048
(the real run's micro-batch: wall with a sync, and the GPU's kernel time from torch.profiler). Cases: full (bf16
weights, all trainable), lora (frozen bf16 base, PEFT adapters fp32 as get_peft_model leaves them), each without and
with non-reentrant gradient checkpointing. Prints one JSON line per case and size, then the per-layer summary.
Part 1 first: each eager op of the Llama / PEFT code timed alone with CUDA events (median of 20) on an 8 x 2048 x 4096
activation (Llama 3.1 8B's hidden; q / k as 8 x 32 x 2048 x 128), its counted bytes (read + write) over its time.
Budget on an H200: about a minute. --tiny: tiny widths on the CPU (a smoke test).
"""

import json
import sys
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM

TINY = "--tiny" in sys.argv
CUDA = torch.cuda.is_available() and not TINY
DEV = "cuda" if CUDA else "cpu"
W = (dict(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2, vocab_size=512)
     if TINY else dict(hidden_size=4096, intermediate_size=14336, num_attention_heads=32, num_key_value_heads=8,
                       vocab_size=128256))
SHAPES = [(1, 16), (2, 64)] if TINY else [(1, 16), (2, 2048)]
WARM, N = (1, 2) if TINY else (3, 10)
LAYERS = (2, 6)


def sync():
    if CUDA:
        torch.cuda.synchronize()


def build(layers, method, gc):
    cfg = LlamaConfig(**W, num_hidden_layers=layers, max_position_embeddings=8192, rope_theta=500000.0,
                      tie_word_embeddings=False, attn_implementation="sdpa")
    with torch.device(DEV):
        model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    if method == "lora":
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, task_type="CAUSAL_LM",
                                                 target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                                                 "up_proj", "down_proj"]))
    if gc:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    return model


def step(model, ids):
    with torch.autocast(DEV, dtype=torch.bfloat16):
        loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    model.zero_grad(set_to_none=True)


def timed(model, ids):
    """(wall per step with a sync at its end, host time until backward() returned, no sync)."""
    for _ in range(WARM):
        step(model, ids)
    sync()
    walls, hosts = [], []
    for _ in range(N):
        t0 = time.perf_counter()
        step(model, ids)
        hosts.append(time.perf_counter() - t0)
        sync()
        walls.append(time.perf_counter() - t0)
    return sorted(walls)[N // 2], sorted(hosts)[N // 2]


def gpu_time(model, ids):
    """GPU kernel seconds per step (torch.profiler over 2 steps)."""
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if CUDA else [])
    sync()
    with profile(activities=acts) as p:
        for _ in range(2):
            step(model, ids)
        sync()
    dev = torch.autograd.DeviceType.CUDA
    us = sum((e.device_time if hasattr(e, "device_time") else e.cuda_time) for e in p.events()
             if e.device_type == dev)
    return us / 1e6 / 2


def kernel_bandwidths():
    """GB/s each eager op class reaches: (name, counted bytes, fn)."""
    T, h = (64, 64) if TINY else (8 * 2048, 4096)
    b, nh, s, d = (2, 4, 32, 16) if TINY else (8, 32, 2048, 128)
    bf, f32 = torch.bfloat16, torch.float32
    x16 = torch.randn(T, h, device=DEV, dtype=bf)
    y16 = torch.randn(T, h, device=DEV, dtype=bf)
    x32 = torch.randn(T, h, device=DEV, dtype=f32)
    r32 = torch.randn(T, 1, device=DEV, dtype=f32)
    w32 = torch.randn(h, device=DEV, dtype=f32)
    w16 = w32.to(bf)
    q16 = torch.randn(b, nh, s, d, device=DEV, dtype=bf)
    cos32 = torch.randn(b, 1, s, d, device=DEV, dtype=f32)
    cos16 = cos32.to(bf)
    n = T * h
    nq = b * nh * s * d
    ops = [
        ("copy bf16->fp32 (.float(), PEFT input cast)", 6 * n, lambda: x16.float()),
        ("copy fp32->bf16 (.to(bf16), autocast cast)", 6 * n, lambda: x32.to(bf)),
        ("copy bf16->bf16 (.clone())", 4 * n, lambda: x16.clone()),
        ("add bf16 + bf16 (residual, LoRA add)", 6 * n, lambda: x16 + y16),
        ("add fp32 + bf16 -> fp32 (AMP residual)", 10 * n, lambda: x32 + y16),
        ("mul fp32 * [T,1] fp32 (x * rsqrt)", 8 * n, lambda: x32 * r32),
        ("mul [h] fp32 * fp32 (norm weight, fp32)", 8 * n, lambda: w32 * x32),
        ("mul [h] bf16 * bf16 (norm weight, bf16)", 4 * n, lambda: w16 * x16),
        ("pow fp32 ^ 2", 8 * n, lambda: x32.pow(2)),
        ("mean fp32 over h (keepdim)", 4 * n, lambda: x32.mean(-1, keepdim=True)),
        ("mul bf16 * scalar (LoRA scaling)", 4 * n, lambda: x16 * 2.0),
        ("silu bf16", 4 * n, lambda: torch.nn.functional.silu(x16)),
        ("rotate_half bf16 (neg half + cat)", 6 * nq, lambda: torch.cat((-q16[..., d // 2:], q16[..., : d // 2]), dim=-1)),
        ("mul q bf16 * cos bf16 [b,1,s,d]", 4 * nq, lambda: q16 * cos16),
        ("mul q bf16 * cos fp32 -> fp32 (AMP RoPE)", 6 * nq, lambda: q16 * cos32),
    ]
    out = []
    for name, nbytes, fn in ops:
        for _ in range(3):
            fn()
        if CUDA:
            ts = []
            for _ in range(20):
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                fn()
                e1.record()
                torch.cuda.synchronize()
                ts.append(e0.elapsed_time(e1) / 1e3)
            t = sorted(ts)[len(ts) // 2]
        else:
            t0 = time.perf_counter()
            fn()
            t = time.perf_counter() - t0
        rec = dict(kernel=name, bytes=nbytes, s=t, gb_s=nbytes / t / 1e9)
        out.append(rec)
        print(json.dumps(rec), flush=True)
    return out


def main():
    kernel_bandwidths()
    res = {}
    for method in ("full", "lora"):
        for gc in (False, True):
            for layers in LAYERS:
                model = build(layers, method, gc)
                for b, s in SHAPES:
                    ids = torch.randint(0, W["vocab_size"], (b, s), device=DEV)
                    wall, host = timed(model, ids)
                    gpu = gpu_time(model, ids) if (b, s) == SHAPES[-1] else None
                    rec = dict(method=method, gc=gc, layers=layers, mb=b, seq=s, wall_s=wall, host_s=host, gpu_s=gpu)
                    res[(method, gc, layers, b, s)] = rec
                    print(json.dumps(rec), flush=True)
                del model
                if CUDA:
                    torch.cuda.empty_cache()
    d = LAYERS[1] - LAYERS[0]
    for method in ("full", "lora"):
        for gc in (False, True):
            for b, s in SHAPES:
                lo, hi = res[(method, gc, LAYERS[0], b, s)], res[(method, gc, LAYERS[1], b, s)]
                per = {k: ((hi[k] - lo[k]) / d * 1e3 if hi[k] is not None else None) for k in ("wall_s", "host_s", "gpu_s")}
                print(json.dumps(dict(summary="per_layer_ms", method=method, gc=gc, mb=b, seq=s,
                                      wall_ms=per["wall_s"], host_ms=per["host_s"], gpu_ms=per["gpu_s"])), flush=True)


if __name__ == "__main__":
    print(json.dumps(dict(torch=torch.__version__, device=torch.cuda.get_device_name() if CUDA else "cpu")), flush=True)
    main()
