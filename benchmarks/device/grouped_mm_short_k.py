# Settles (not run yet: written 2026-12-07; no GPU is lent this session; docs/known-gaps.md 294 (d), (e)): whether
# torch._grouped_mm on a B200 loses rate as the routed experts' inner dimension K shrinks (a per-output-tile cost the
# sm100 kernel's 64 x 128 x 128 tile pays whatever K) at the same FLOPs and rows a group, the lead for the
# Qwen3-30B-A3B torchtitan rows (experts of 768: +29..+41% too fast on B200). Run it on one B200 (any torch >= 2.9
# with torch._grouped_mm on sm100); the GB200 / B300 the same.
# Run: python benchmarks/device/grouped_mm_short_k.py (--tiny on a CPU as a smoke test)
"""torch._grouped_mm at fixed FLOPs a call across K, and at the shapes of the rows and benches of known-gaps 294.

Each case: G groups of M rows (the offsets of a balanced routing), weights [G, N, K] bf16, timed with CUDA events
(median of N runs) in its forward form (2d x 3d: [G M, K] x [G, K, N]) and its weight-gradient form (2d x 2d over the
offsets: [N, G M] x [G M, K] -> [G, N, K], K running over the rows), against one plain torch.mm of the same FLOPs
([G M, K] x [K, N]: the dense rate). One JSON line a case and form: ms, TFLOP/s, the plain mm's, their ratio.

- K sweep: G 128, M 4,096, N 2,048 (Qwen3-30B-A3B's w2 at Lambda's batch 8, EP 1), K from 256 to 7,168, and the same
  at M 2,048 and G 16 (Nous's EP 8).
- Qwen3-30B-A3B's w1 (N 768, K 2,048) and w2 (N 2,048, K 768) at both layouts.
- DeepSeek-V3 16B's experts (G 8, M 16,384; 1,408 / 2,048: TorchAO's bench_moe_layer row of torchtitan issue 2086)
  and DeepSeek-V3 671B's (G 8, M 16,000; 2,048 / 7,168: TorchAO's README table), the published anchors.
The estimate times every grouped case at grouped_mm_over_dense (0.453) x the dense rate whatever K: a ratio that
falls with K at fixed FLOPs is the per-tile term 294 (d) bounds.

Then the routed copies' combine into their tokens at top-k contention (294 (d)'s other reading): T tokens of width h,
T k copies in a random expert-major order, each op timed alone: the forward gather x[idx] (the streaming reference),
out.scatter_add_(0, idx, copies), out.index_add_(0, idx, copies) and out.index_put_((idx,), copies, accumulate=True)
(what torchtitan's combine and the gather's backward run), at k 1 / 4 / 8: elements a second (copies x h over the
time). The estimate charges these as streaming copies at any k.
"""

import json
import sys

import torch
from _timing import median_ms

TINY = "--tiny" in sys.argv
DEV = "cuda" if torch.cuda.is_available() and not TINY else "cpu"
WARM, N = (1, 2) if TINY else (3, 20)
BF16 = torch.bfloat16
SCALE = 64 if TINY else 1  # --tiny: every dimension over 64 (rows over 512), on the CPU


def _eight(x: int) -> int:
    return max(8, -(-x // 8) * 8)


def cases() -> list[tuple[str, int, int, int, int]]:
    """(name, groups, rows a group, N, K)."""
    out = []
    for g, m in ((128, 4096), (16, 2048)):
        out += [(f"k sweep G{g} M{m} K{k}", g, m, 2048, k) for k in (256, 512, 768, 1024, 1408, 2048, 4096, 7168)]
        out += [(f"qwen3_30b_a3b w1 G{g} M{m}", g, m, 768, 2048), (f"qwen3_30b_a3b w2 G{g} M{m}", g, m, 2048, 768)]
    out += [("dsv3_16b w1", 8, 16384, 1408, 2048), ("dsv3_16b w2", 8, 16384, 2048, 1408),
            ("dsv3_671b w1", 8, 16000, 2048, 7168), ("dsv3_671b w2", 8, 16000, 7168, 2048)]
    if TINY:  # every fourth case, its widths over SCALE rounded up to 8 (torch._grouped_mm's 16-byte strides)
        out = [(n, max(2, g // 16), max(8, m // 512), _eight(nn // SCALE), _eight(k // SCALE))
               for n, g, m, nn, k in out[::4]]
    return out


def run(name: str, g: int, m: int, n: int, k: int) -> list[dict]:
    gen = torch.Generator(device=DEV).manual_seed(0)
    a = torch.randn(g * m, k, device=DEV, dtype=BF16, generator=gen)
    w = torch.randn(g, n, k, device=DEV, dtype=BF16, generator=gen)
    dy = torch.randn(g * m, n, device=DEV, dtype=BF16, generator=gen)
    offs = torch.arange(m, g * m + 1, m, device=DEV, dtype=torch.int32)
    plain_w = w[0].t().contiguous()
    flops = 2.0 * g * m * n * k
    forms = {"fwd": lambda: torch._grouped_mm(a, w.transpose(-2, -1), offs=offs),
             "wgrad": lambda: torch._grouped_mm(dy.t(), a, offs=offs)}
    plain = median_ms(lambda: torch.mm(a, plain_w), DEV, WARM, N)
    out = []
    for form, fn in forms.items():
        ms = median_ms(fn, DEV, WARM, N)
        out.append({"case": name, "form": form, "groups": g, "rows_a_group": m, "n": n, "k": k, "ms": ms,
                    "tflops": flops / ms / 1e9, "plain_mm_ms": plain, "plain_tflops": flops / plain / 1e9,
                    "grouped_over_plain": plain / ms})
    return out


def combine_cases() -> list[tuple[str, int, int, int]]:
    """(name, tokens, top-k, hidden): Lambda's Qwen3-30B-A3B micro-batch a GPU at top-1 / 4 / 8, GPT-OSS-20B's width at
    top-4, prime-rl's 16,384 tokens at top-8."""
    out = [(f"T65536 h2048 k{k}", 65536, k, 2048) for k in (1, 4, 8)]
    out += [("T65536 h2880 k4", 65536, 4, 2880), ("T16384 h2048 k8", 16384, 8, 2048)]
    return [(n, 64, k, 16) for n, _, k, _ in out] if TINY else out


def run_combine(name: str, tokens: int, k: int, h: int) -> list[dict]:
    gen = torch.Generator().manual_seed(0)
    idx = (torch.randperm(tokens * k, generator=gen) // k).to(DEV)  # each token k times, in a shuffled order
    x = torch.randn(tokens, h, device=DEV, dtype=BF16)
    copies = torch.randn(tokens * k, h, device=DEV, dtype=BF16)
    wide = idx.unsqueeze(1).expand(-1, h)
    ops = {"gather": lambda: x[idx],
           "scatter_add": lambda: torch.zeros_like(x).scatter_add_(0, wide, copies),
           "index_add": lambda: torch.zeros_like(x).index_add_(0, idx, copies),
           "index_put accumulate": lambda: torch.zeros_like(x).index_put_((idx,), copies, accumulate=True)}
    out = []
    for op, fn in ops.items():
        ms = median_ms(fn, DEV, WARM, N)
        out.append({"combine": name, "op": op, "tokens": tokens, "top_k": k, "hidden": h, "ms": ms,
                    "gelem_s": tokens * k * h / ms / 1e6})
    return out


def check() -> float:
    """Max |grouped - per-group loop| of a small forward and weight gradient (the offsets read as intended)."""
    g, m, n, k = 3, 8, 16, 16
    a, w, dy = torch.randn(g * m, k, dtype=BF16), torch.randn(g, n, k, dtype=BF16), torch.randn(g * m, n, dtype=BF16)
    offs = torch.arange(m, g * m + 1, m, dtype=torch.int32)
    a, w, dy, offs = (t.to(DEV) for t in (a, w, dy, offs))
    y = torch._grouped_mm(a, w.transpose(-2, -1), offs=offs).float()
    dw = torch._grouped_mm(dy.t(), a, offs=offs).float()
    ref_y = torch.cat([a[i * m:(i + 1) * m].float() @ w[i].float().t() for i in range(g)])
    ref_dw = torch.stack([dy[i * m:(i + 1) * m].float().t() @ a[i * m:(i + 1) * m].float() for i in range(g)])
    return max(float((y - ref_y).abs().max()), float((dw - ref_dw).abs().max()))


def main() -> None:
    name = torch.cuda.get_device_name() if DEV == "cuda" else "cpu"
    print(json.dumps({"device": DEV, "name": name, "torch": torch.__version__, "check_max_abs_err": check()}))
    for c in cases():
        for line in run(*c):
            print(json.dumps(line))
    for c in combine_cases():
        for line in run_combine(*c):
            print(json.dumps(line))


if __name__ == "__main__":
    main()
