# Settles (not run yet: written 2026-12-05; no AMD part is lent here; docs/known-gaps.md 187 (a), (b)): the time
# Megatron-Core's unfused MoE permutation costs a MoE layer on a CDNA 4 part under the rows' PyTorch 2.9, above all its
# gradient: index_select's backward is index_add_, whose bf16 add is a 32-bit compare-and-swap loop on gfx950 before
# pytorch PR 170330 (torch 2.10), a packed hardware add on gfx942 and after it. Run it under torch 2.9 and >= 2.10 on
# one MI355X (and one MI300X as the packed-add control); ps an element of the bf16 index_add_ is the term's rate.
# Run: python benchmarks/device/rocm_permute_atomics.py (--tiny on a CPU as a smoke test)
"""Megatron-Core's unfused permute / unpermute (moe_utils.permute / unpermute with fused false, core_r0.14 and the
Primus rows' 847781764f) at DeepSeek-V2-Lite's shapes (hidden 2,048, 64 experts, top-6, 4,096 tokens a sequence), one
MoE layer's worth a micro-batch: permute = tokens.index_select(0, sorted_indices) (backward: zeros + index_add_),
unpermute = zeros.scatter_add_(0, idx, permuted) (backward: gather). Round-robin routing as Primus forces it (token i
-> experts 6 i ... 6 i + 5 mod 64). Each op timed alone with CUDA (HIP) events, median of N, in bf16 and fp32; one JSON
line per op, dtype and micro-batch: ms and ps an element (rows x hidden)."""

import json
import sys

import torch
from _timing import median_ms

TINY = "--tiny" in sys.argv
DEV = "cuda" if torch.cuda.is_available() and not TINY else "cpu"
HIDDEN, EXPERTS, TOPK, SEQ = (64, 8, 2, 32) if TINY else (2048, 64, 6, 4096)
MICRO_BATCHES = (1, 2) if TINY else (1, 4, 12)
WARM, N = (1, 3) if TINY else (3, 20)


def timed(fn) -> float:
    """Median milliseconds of fn() over N runs after WARM (_timing.median_ms)."""
    return median_ms(fn, DEV, WARM, N)


def sorted_indices(tokens: int) -> torch.Tensor:
    """Megatron's expert-major order of the routed copies under round-robin routing (routing_map.T masked_select)."""
    experts = (torch.arange(tokens).unsqueeze(1) * TOPK + torch.arange(TOPK)) % EXPERTS
    routing_map = torch.zeros(tokens, EXPERTS, dtype=torch.bool).scatter_(1, experts, True).T.contiguous()
    return torch.arange(tokens).unsqueeze(0).expand(EXPERTS, -1).masked_select(routing_map).to(DEV)


def cases(mbs: int, dtype: torch.dtype) -> tuple[dict, int]:
    """The four ops at one micro-batch and dtype, and the routed elements (copies x hidden) each touches."""
    tokens = mbs * SEQ
    idx = sorted_indices(tokens)
    x = torch.randn(tokens, HIDDEN, dtype=dtype, device=DEV)
    grad = torch.randn(idx.numel(), HIDDEN, dtype=dtype, device=DEV)
    idx2 = idx.unsqueeze(1).expand(-1, HIDDEN)
    return {"permute_fwd index_select": lambda: x.index_select(0, idx),
            "permute_bwd index_add_": lambda: torch.zeros_like(x).index_add_(0, idx, grad),
            "unpermute_fwd scatter_add_": lambda: torch.zeros_like(x).scatter_add_(0, idx2, grad),
            "unpermute_bwd gather": lambda: x.gather(0, idx2)}, idx.numel() * HIDDEN


def main() -> None:
    arch = torch.cuda.get_device_properties(0).gcnArchName if DEV == "cuda" and torch.version.hip else DEV
    print(json.dumps({"torch": torch.__version__, "hip": torch.version.hip, "device": arch}))
    for mbs in MICRO_BATCHES:
        for dtype in (torch.bfloat16, torch.float32):
            ops, elements = cases(mbs, dtype)
            for name, fn in ops.items():
                ms = timed(fn)
                print(json.dumps({"op": name, "dtype": str(dtype), "mbs": mbs, "elements": elements,
                                  "ms": round(ms, 4), "ps_per_element": round(ms * 1e9 / elements, 3)}))


if __name__ == "__main__":
    main()
