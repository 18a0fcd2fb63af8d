# Settles (not run yet: written 2026-12-07 for whichever H100 a later session is lent; docs/known-gaps.md 332 (c)):
# whether Transformer Engine's grouped expert path gains less from FP8 on Hopper than its dense path at the same GEMM
# work. The held-out MoE pairs (benchmarks/fp8_pairs.py, MoE section) measure an FP8 / BF16 step gain 5-21% under the
# estimate's on H100 (Mixtral 8x22B under Megatron-Core, Grok-1 and Llama 4 Maverick under NeMo) where the same
# releases' dense pairs are within 2.5-4%, and the estimate times the routed experts' FP8 GEMMs at the dense FP8 rate.
# (Grok-1 ran SequentialMLP, a te.Linear pair a local expert: at one local expert the linear path is the rows' own; the
# dense Llama 3.1 405B case is the control for its linear gain at expert shapes.) Per case, the routed
# experts of one rank and layer as Megatron-Core's TEGroupedMLP runs them (fc1 gate + up, a bf16
# SwiGLU, fc2; TE GroupedLinear with fuse_wgrad_accumulation into an fp32 main_grad, the FP8 weights cached after the
# first micro-batch: is_first_microbatch True then False) and, as the control, the same rows through two te.Linear of
# the same shapes (one GEMM a linear: the dense path), each forward + backward in bf16 and under fp8_autocast with
# NeMo's delayed scaling (E4M3 forward / E5M2 backward "hybrid", amax history 1,024, max). The line to read is
# grouped_gain / linear_gain: 1 means the grouped path gains what the dense one does (the estimate's assumption).
# Run: python benchmarks/device/te_grouped_fp8.py [--tiny]   (--tiny: tiny shapes on the CPU through a torch.mm
# loop, FP8 and Transformer Engine skipped, a smoke test; a few minutes on an H100)
"""One JSON line a (case, path, precision) with its forward + backward milliseconds, then one line a case with each
path's FP8 / BF16 gain and their ratio, then the device."""

import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import median_ms  # noqa: E402

TINY = "--tiny" in sys.argv
DEV = "cuda" if torch.cuda.is_available() and not TINY else "cpu"
# (case, hidden, fc1 output width on the rank (gate + up), fc2 input width on the rank, local experts, rows an expert):
# the routed rows a local expert are the estimate's (compute._moe_layer at the rows' layouts)
CASES = ([("tiny", 32, 48, 24, 2, 64)] if TINY else [
    # perf_heldout77 Table 2: Mixtral 8x22B (hidden 6,144, expert FFN 16,384), MCore TP 2 x EP 4 (expert TP 2)
    ("mixtral-8x22b mcore etp2", 6144, 16384, 8192, 2, 4096),
    # the same under MoE Parallel Folding: EP 8, expert TP 1, one whole expert a rank
    ("mixtral-8x22b folding etp1", 6144, 32768, 16384, 1, 4096),
    # perf_heldout62 dgxc v24.11 Grok-1 (hidden 6,144, expert FFN 32,768) at 8 GPUs: EP 2 x expert TP 4, 4 local experts
    ("grok-1 v24.11 ep2 etp4", 6144, 16384, 8192, 4, 2048),
    # the same at 32 GPUs: EP 8, one local expert of 8,192 rows
    ("grok-1 v24.11 ep8 etp4", 6144, 16384, 8192, 1, 8192),
    # dense control: Llama 3.1 405B's MLP at dgxc's TP 8 x CP 2 (hidden 16,384, FFN 53,248; 8,192 / 2 rows), whose
    # FP8 / BF16 pair the estimate gets right (fp8_pairs: dgxc 25.04 405B -1.0..-2.3%)
    ("llama3.1-405b dense tp8 cp2", 16384, 2 * 53248 // 8, 53248 // 8, 1, 4096),
])
WARM, N = (1, 2) if TINY else (5, 20)


def _te():
    """transformer_engine.pytorch, or None (a CPU smoke run, or a machine without it)."""
    if DEV != "cuda":
        return None
    try:
        import transformer_engine.pytorch as te
    except ImportError:
        return None
    return te


def _main_grads(module) -> None:
    """An fp32 main_grad on every weight, which fuse_wgrad_accumulation accumulates into (Megatron-Core's)."""
    for p in module.parameters():
        p.main_grad = torch.zeros(p.shape, dtype=torch.float32, device=p.device)


def _modules(te, hidden: int, up: int, down: int, local: int, grouped: bool):
    """(fc1, fc2) as TE GroupedLinear (`grouped`: one weight an expert) or te.Linear (one weight: the dense control)."""
    kw = dict(bias=False, params_dtype=torch.bfloat16, device="cuda", fuse_wgrad_accumulation=True)
    if grouped:
        fc1, fc2 = te.GroupedLinear(local, hidden, up, **kw), te.GroupedLinear(local, down, hidden, **kw)
    else:
        fc1, fc2 = te.Linear(hidden, up, **kw), te.Linear(down, hidden, **kw)
    _main_grads(fc1)
    _main_grads(fc2)
    return fc1, fc2


def _step_fn(te, fc1, fc2, x, splits, grouped: bool, fp8: bool):
    """One forward + backward of fc1 -> SwiGLU -> fc2, FP8 weights cached after the first call (is_first_microbatch)."""
    from transformer_engine.common.recipe import DelayedScaling, Format

    recipe = DelayedScaling(fp8_format=Format.HYBRID, amax_history_len=1024, amax_compute_algo="max")
    first = [True]

    def step():
        with te.fp8_autocast(enabled=fp8, fp8_recipe=recipe):
            args = (splits,) if grouped else ()
            h = fc1(x, *args, is_first_microbatch=first[0])
            a, b = h.chunk(2, dim=-1)
            y = fc2(torch.nn.functional.silu(a) * b, *args, is_first_microbatch=first[0])
        y.backward(torch.ones_like(y))
        first[0] = False
    return step


def _torch_step(hidden: int, up: int, down: int, local: int, rows: int):
    """The CPU smoke run's stand-in: a per-expert torch.mm loop of the same shapes (fp32), forward + backward."""
    w1 = [torch.randn(hidden, up, requires_grad=True) for _ in range(local)]
    w2 = [torch.randn(down, hidden, requires_grad=True) for _ in range(local)]
    xs = [torch.randn(rows, hidden, requires_grad=True) for _ in range(local)]

    def step():
        for x, a, b in zip(xs, w1, w2, strict=True):
            g, u = (x @ a).chunk(2, dim=-1)
            (torch.nn.functional.silu(g) * u @ b).sum().backward()
    return step


def case_lines(case: str, hidden: int, up: int, down: int, local: int, rows: int) -> None:
    te = _te()
    if te is None:
        ms = median_ms(_torch_step(hidden, up, down, local, rows), DEV, WARM, N)
        print(json.dumps(dict(case=case, path="torch-loop", precision="fp32", ms=round(ms, 4))), flush=True)
        return
    x = torch.randn(rows * local, hidden, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    out = {}
    for path in ("grouped", "linear"):
        for fp8 in (False, True):
            fc1, fc2 = _modules(te, hidden, up, down, local, path == "grouped")
            ms = median_ms(_step_fn(te, fc1, fc2, x, [rows] * local, path == "grouped", fp8), DEV, WARM, N)
            out[path, fp8] = ms
            print(json.dumps(dict(case=case, path=path, precision="fp8" if fp8 else "bf16", local=local, rows=rows,
                                  ms=round(ms, 4))), flush=True)
            del fc1, fc2
    gain = {p: out[p, False] / out[p, True] for p in ("grouped", "linear")}
    print(json.dumps(dict(case=case, grouped_gain=round(gain["grouped"], 4), linear_gain=round(gain["linear"], 4),
                          grouped_over_linear=round(gain["grouped"] / gain["linear"], 4))), flush=True)


def main():
    for c in CASES:
        case_lines(*c)
    if DEV == "cuda":
        p = torch.cuda.get_device_properties(0)
        version = None
        if _te() is not None:
            import transformer_engine

            version = getattr(transformer_engine, "__version__", None)
        print(json.dumps(dict(device=p.name, sms=p.multi_processor_count, torch=torch.__version__,
                              cuda=torch.version.cuda, transformer_engine=version)))


if __name__ == "__main__":
    main()
