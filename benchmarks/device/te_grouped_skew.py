# Settles (not run yet: written 2026-12-07; no GPU is lent here; docs/known-gaps.md 305 (d)): what natural routing
# costs one rank's routed experts with no other rank to wait for. The H100 Megatron-Core MoE rows that miss (perf_heldout72,
# perf_heldout60's natural-routing items) all route naturally; the forced-balance item lands. Two costs a balanced load
# hides: uneven per-expert rows (small GEMMs run below the GPU's rate) and rows that change every call (Transformer
# Engine asks cuBLASLt for an algorithm on every GEMM, transformer_engine/common/gemm/cublaslt_gemm.cu at d0067d0d, and
# cuBLASLt's heuristics cache is keyed by the problem). Run it on one H100 (the rows' part, BF16) and, if time allows,
# once more with CUBLASLT_HEURISTICS_CACHE_CAPACITY=0 (every query a miss): the skewed-fixed line against the balanced
# one is the uneven-rows cost (GPU ms), the skewed-varying line against the skewed-fixed one the per-call cost of new
# rows (exposed ms).
# Run: python benchmarks/device/te_grouped_skew.py (--tiny on a CPU as a smoke test)
"""One MoE layer's routed experts on one rank at a fixed routed-row count, forward and backward through TE's
GroupedLinear as benchmarks/device/te_grouped_host.py runs them (the token counts copied to the host first, then fc1,
the activation and fc2; MXFP8 where the part supports it, else bf16; a per-expert torch.mm loop without TE), under three
routings: balanced (equal rows, the same every call), skewed-fixed (Zipf-weighted rows, exponent 1, one draw reused)
and skewed-varying (a fresh Zipf draw every call, cycling through DRAWS precomputed ones). Rows are rounded to ALIGN a
split (the FP8 padding's multiple) and always sum to the rank's routed rows. Shapes: GPT-OSS 20B's expert (2,880 -> 2 x
2,880 gated -> 2,880; 2,048 tokens x top-4 a rank) at 4 and 32 local experts (perf_heldout72's EP 8 SFT and one-GPU
LoRA), Qwen3-30B-A3B's (2,048 -> 2 x 768 -> 2,048; 2,048 x top-8) at 8 and 32 (its EP 16 SFT and EP 4 LoRA). Per
(shape, local experts, routing) one JSON line: synced wall ms, the kernels' GPU ms (_timing.kernel_ms), exposed ms and the busiest expert's rows over the
mean; per (shape, local experts) a line with the uneven-rows GPU cost and the new-rows exposed cost."""

import itertools
import json
import math
import os
import random
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import kernel_ms  # noqa: E402
from te_grouped_host import experts_fn, wall_ms  # noqa: E402

TINY = "--tiny" in sys.argv
DEV = "cuda" if torch.cuda.is_available() and not TINY else "cpu"
# (name, input width, FFN width, gated, routed rows a rank and layer, local-expert counts)
SHAPES = ([("tiny", 32, 24, True, 256, (2, 4))] if TINY else
          [("gpt-oss-20b", 2880, 2880, True, 2048 * 4, (4, 32)), ("qwen3-30b-a3b", 2048, 768, True, 2048 * 8, (8, 32))])
ALIGN = 8 if TINY else 32
DRAWS = 8 if TINY else 48  # more than the calls a routing makes (13 wall, 11 GPU): no draw repeats
ROUTINGS = ("balanced", "skewed-fixed", "skewed-varying")
ENV = ("CUBLASLT_HEURISTICS_CACHE_CAPACITY", "NVTE_GROUPED_LINEAR_USE_FUSED_GROUPED_GEMM", "CUDA_DEVICE_MAX_CONNECTIONS")


def zipf_splits(experts: int, rows: int, rng: random.Random) -> list[int]:
    """Rows a local expert under Zipf weights 1/k (exponent 1), each times a log-normal factor (sigma 0.5, so the rows
    differ draw to draw, not only their order) in a random expert order, each a multiple of ALIGN, summing to `rows`
    (a multiple of ALIGN x experts); the rounding's remainder goes to the busiest expert."""
    weights = [math.exp(rng.gauss(0.0, 0.5)) / (k + 1) for k in range(experts)]
    rng.shuffle(weights)
    total = sum(weights)
    out = [int(rows * w / total) // ALIGN * ALIGN for w in weights]
    out[max(range(experts), key=lambda e: weights[e])] += rows - sum(out)
    return out


def split_plan(routing: str, experts: int, rows: int, seed: int = 0) -> list[list[int]]:
    """The per-call splits a routing cycles through: one list (balanced, skewed-fixed) or DRAWS lists (varying)."""
    if routing == "balanced":
        return [[rows // experts] * experts]
    rng = random.Random(seed)
    return [zipf_splits(experts, rows, rng) for _ in range(1 if routing == "skewed-fixed" else DRAWS)]


def layer_fn(experts: int, width: int, ffn: int, gated: bool, plan: list[list[int]]):
    """A callable running the routed experts forward and backward after the host copy of this call's token counts
    (the plan's lists in turn; te_grouped_host.experts_fn); and the path's name."""
    x = torch.randn(sum(plan[0]), width, dtype=torch.bfloat16, device=DEV, requires_grad=True)
    counts = [torch.tensor(s, dtype=torch.int64, device=DEV) for s in plan]
    step = itertools.count()
    return experts_fn(experts, width, ffn, gated, x, lambda: counts[next(step) % len(counts)].tolist())


def main() -> None:
    name = torch.cuda.get_device_name(0) if DEV == "cuda" else DEV
    print(json.dumps({"torch": torch.__version__, "device": name, "env": {k: os.environ.get(k) for k in ENV}}))
    for shape, width, ffn, gated, rows, local in SHAPES:
        for experts in local:
            got = {}
            for routing in ROUTINGS:
                plan = split_plan(routing, experts, rows)
                fn, path = layer_fn(experts, width, ffn, gated, plan)
                wall, gpu = wall_ms(fn), kernel_ms(fn, DEV, 1, 3 if TINY else 10)
                got[routing] = {"wall_ms": round(wall, 4), "gpu_ms": round(gpu, 4),
                                "exposed_ms": round(max(wall - gpu, 0.0), 4)}
                load = max(max(s) for s in plan) * experts / rows
                print(json.dumps({"shape": shape, "path": path, "local_experts": experts, "routing": routing,
                                  "busiest_over_mean": round(load, 3), **got[routing]}))
            print(json.dumps({"shape": shape, "local_experts": experts,
                              "uneven_rows_gpu_ms": round(got["skewed-fixed"]["gpu_ms"] - got["balanced"]["gpu_ms"], 4),
                              "new_rows_exposed_ms": round(got["skewed-varying"]["exposed_ms"]
                                                           - got["skewed-fixed"]["exposed_ms"], 4)}))


if __name__ == "__main__":
    main()
