# Settles (not run yet: written 2026-12-07, no GPU lent that session; docs/known-gaps.md 292 (f), 255 (c)) what
# fms-acceleration's granite-3.0-3b-a800m one-GPU peaks (nvidia-smi 69.5-75.9 GiB, the estimate 46.4) hold beyond live
# tensors: the allocated peak, the caching allocator's reserve and the device's use, step by step, with and without
# expandable segments, on the run's model, optimizer and micro-batches of varying padded length.
# Run: python benchmarks/device/granitemoe_memory.py (needs torch only; --tiny on a CPU as a smoke test). Budget on an
# A100 / H100 80 GB: about 3-6 minutes (two runs of 6 steps x 16 micro-batches).
"""granite-3.0-3b-a800m's full fine-tuning as fms-acceleration's accelerated-moe-full scenario ran it on one GPU
(perf_heldout66's rows): the model in bf16 (32 layers, hidden 1536, 24 heads / 8 KV heads of 64, 40 experts top-8 of
SwiGLU width 512, vocabulary 49,155 tied; the multipliers of the Granite 3.0 config: embedding 12, residual 0.22, logits
1/6), each layer under torch.utils.checkpoint(use_reentrant=True) as transformers 4.45's gradient checkpointing runs
it, the MoE block as transformers writes it (granitemoe_expert_loop.Block: one F.linear an expert), SDPA causal
attention over the padded rows, the 4.45 loss (logits scaled, .float(), the shifted logits made contiguous,
cross-entropy ignoring the padding), torch.optim.AdamW(foreach) on the bf16 parameters with the Trainer's max_grad_norm
1.0 and zero_grad(set_to_none) after each step; micro-batches of 8 samples padded to their longest, lengths drawn as the
rows state them (lognormal, mean 125 tokens, sigma 0.51, at most 1,304), one micro-batch at the longest 1,304 in step 3
(the record a run of 12,800 samples meets), 16 micro-batches a step.

One JSON line a step and allocator setting (default; expandable_segments:True, each in its own process): the step's
longest padded length, torch.cuda.max_memory_allocated / max_memory_reserved, the device's use (mem_get_info: total
less free, the figure nvidia-smi shows but for other processes), the peak of inactive split blocks, cudaMalloc retries
and segments; then one line of the model's parameter and optimizer-state GiB. The estimate for the same job: reserved
46.4 GiB (docs/known-gaps.md 255 (c)); the rows measured 69.5 / 70.4 / 75.9 GiB on three releases.
"""

import json
import math
import os
import random
import subprocess
import sys

import torch
import torch.nn.functional as F
from granitemoe_expert_loop import Block
from torch.utils.checkpoint import checkpoint

TINY = "--tiny" in sys.argv
CUDA = torch.cuda.is_available() and not TINY
DEV = "cuda" if CUDA else "cpu"
DT = torch.bfloat16 if CUDA else torch.float32
H, HEADS, KV, HD, LAYERS, VOCAB = (32, 4, 2, 8, 2, 97) if TINY else (1536, 24, 8, 64, 32, 49155)
MB, ACCUM, STEPS, RECORD_STEP = (2, 2, 2, 1) if TINY else (8, 16, 6, 3)
LONGEST, MEAN, SIGMA = (24, 6.0, 0.51) if TINY else (1304, 125.0, 0.51)
EMB_MULT, RES_MULT, LOGITS_SCALE = 12.0, 0.22, 6.0
GIB = 2**30


def rms(x, w, eps=1e-6):
    """transformers' GraniteMoeRMSNorm: the variance in fp32, the weight times the input's dtype."""
    xf = x.float()
    return w * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


class Layer(torch.nn.Module):
    """One GraniteMoeDecoderLayer: norm, GQA attention (SDPA, causal), the residual multiplier, norm, the MoE block."""

    def __init__(self):
        super().__init__()
        self.n1, self.n2 = torch.nn.Parameter(torch.ones(H)), torch.nn.Parameter(torch.ones(H))
        self.q, self.o = torch.nn.Linear(H, H, bias=False), torch.nn.Linear(H, H, bias=False)
        self.k, self.v = torch.nn.Linear(H, KV * HD, bias=False), torch.nn.Linear(H, KV * HD, bias=False)
        self.moe = Block("loop")

    def forward(self, x):
        b, s, _ = x.shape
        h = rms(x, self.n1)
        q = self.q(h).view(b, s, HEADS, HD).transpose(1, 2)
        k = self.k(h).view(b, s, KV, HD).transpose(1, 2).repeat_interleave(HEADS // KV, dim=1)
        v = self.v(h).view(b, s, KV, HD).transpose(1, 2).repeat_interleave(HEADS // KV, dim=1)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, s, H)
        x = x + self.o(a) * RES_MULT
        h = rms(x, self.n2)
        return x + (self.moe(h) - h) * RES_MULT  # Block returns its input plus the experts' output


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB, H)
        self.layers = torch.nn.ModuleList(Layer() for _ in range(LAYERS))
        self.norm = torch.nn.Parameter(torch.ones(H))

    def forward(self, ids, labels):
        x = self.emb(ids) * EMB_MULT
        for layer in self.layers:
            x = checkpoint(layer, x, use_reentrant=True)
        logits = F.linear(rms(x, self.norm), self.emb.weight) / LOGITS_SCALE
        logits = logits.float()  # transformers 4.45 GraniteMoeForCausalLM
        shift = logits[..., :-1, :].contiguous()
        return F.cross_entropy(shift.view(-1, VOCAB), labels[..., 1:].contiguous().view(-1), ignore_index=-100)


def lengths(rng: random.Random) -> list[list[int]]:
    """Each step's micro-batches as lists of sample lengths (lognormal of the stated mean and sigma, at most LONGEST),
    one sample of LONGEST in the first micro-batch of step RECORD_STEP."""
    mu = math.log(MEAN) - SIGMA**2 / 2
    out = [[[min(LONGEST, max(2, round(rng.lognormvariate(mu, SIGMA)))) for _ in range(MB)] for _ in range(ACCUM)]
           for _ in range(STEPS)]
    out[RECORD_STEP][0][0] = LONGEST
    return out


def stats() -> dict:
    """The CUDA allocator's and the device's figures so far, GiB (None on the CPU)."""
    if not CUDA:
        return dict.fromkeys(("max_allocated_gib", "max_reserved_gib", "device_used_gib", "inactive_split_peak_gib",
                              "alloc_retries", "segments"))
    s = torch.cuda.memory_stats()
    free, total = torch.cuda.mem_get_info()
    return {"max_allocated_gib": round(torch.cuda.max_memory_allocated() / GIB, 2),
            "max_reserved_gib": round(torch.cuda.max_memory_reserved() / GIB, 2),
            "device_used_gib": round((total - free) / GIB, 2),
            "inactive_split_peak_gib": round(s.get("inactive_split_bytes.all.peak", 0) / GIB, 2),
            "alloc_retries": s.get("num_alloc_retries", 0), "segments": s.get("segment.all.current", 0)}


def run(setting: str) -> None:
    """One training run on this process's allocator; a JSON line a step, then the model states' line."""
    torch.manual_seed(0)
    with torch.device(DEV):
        model = Model().to(DT)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, weight_decay=0.01, foreach=True)
    if CUDA:
        torch.cuda.empty_cache()  # the fp32 init's cached blocks out of the run's reserve
        torch.cuda.reset_peak_memory_stats()
    loss = torch.zeros(())
    for step, mbs in enumerate(lengths(random.Random(0))):
        for sample_lengths in mbs:
            s = max(sample_lengths)
            ids = torch.randint(0, VOCAB, (MB, s), device=DEV)
            labels = ids.clone()
            for row, n in enumerate(sample_lengths):
                labels[row, n:] = -100
            loss = model(ids, labels) / ACCUM
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        print(json.dumps({"setting": setting, "step": step, "longest": max(max(m) for m in mbs),
                          "loss_finite": bool(torch.isfinite(loss).item())} | stats()), flush=True)
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    states = sum(t.numel() * t.element_size() for st in opt.state.values() for t in st.values() if t.dim() > 0)
    print(json.dumps({"setting": setting, "params_gib": round(params / GIB, 3), "optimizer_states_gib":
                      round(states / GIB, 3), "device": torch.cuda.get_device_name() if CUDA else "cpu"}), flush=True)


def main() -> None:
    if TINY or "--child" in sys.argv:
        run(os.environ.get("PYTORCH_CUDA_ALLOC_CONF") or "default")
        return
    for conf in ("", "expandable_segments:True"):  # the allocator reads its setting once, at CUDA's first use
        env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF=conf)
        subprocess.run([sys.executable, __file__, "--child"], env=env, check=True)


if __name__ == "__main__":
    main()
