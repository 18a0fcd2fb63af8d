"""The kernels one transformers decoder layer issues in eager PyTorch, and its host microseconds on this machine's CPU,
against the estimate's per-layer host floor (docs/known-gaps.md 279 (b)).

A transformers LlamaDecoderLayer (bf16, SDPA; Mistral's and Qwen2's layers run the same ops) at widths small enough
that every op is host-bound: the aten ops that launch a kernel (a TorchDispatchMode count, views and allocations left
out; on a GPU FlashAttention-2 replaces SDPA one call for one) in a forward and in a backward, and the process CPU time
of a forward (no_grad) and of a forward + backward, least of several runs. The CPU runs each op's arithmetic too, on
tensors of a few hundred elements, and none of CUDA's launch calls: a check of the per-layer floor's size, not a GPU
host's figure. Printed beside the estimate's charge for an eager layer: perf_constants.yaml host_s_per_layer_pass
per pass (forward 1, backward 2, a recomputed forward 1 more) and the count at host_sync launch_bound_op_s (NVIDIA's).
transformers is not a project dependency: without it the script says so and times nothing.

    PYTHONPATH=/path/to/transformers-4.44.2 python benchmarks/hf_layer_host.py
"""

from __future__ import annotations

import time
import warnings
from collections import Counter
from collections.abc import Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.host_sync import host_figure

# aten ops that launch no kernel: views, aliases and bare allocations (their host cost is the dispatcher's alone)
NO_KERNEL = frozenset({"view", "_unsafe_view", "t", "transpose", "expand", "slice", "select", "unsqueeze", "squeeze",
                       "permute", "alias", "as_strided", "split", "split_with_sizes", "chunk", "unbind", "reshape",
                       "detach", "_reshape_alias", "view_as", "lift_fresh", "empty", "empty_like", "new_empty",
                       "empty_strided"})


class OpCount(TorchDispatchMode):
    """Counts the aten ops dispatched inside the mode, by name."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))


def kernel_ops(ops: Counter[str]) -> Counter[str]:
    """The ops of a count that launch a kernel (NO_KERNEL left out)."""
    return Counter({k: v for k, v in ops.items() if k not in NO_KERNEL})


def count_pass(forward: Callable[[], torch.Tensor]) -> tuple[Counter[str], Counter[str]]:
    """(forward, backward) kernel ops of one forward of `forward` and of its backward from a gradient of ones (made
    outside the count)."""
    with OpCount() as fwd:
        out = forward()
    grad = torch.ones_like(out)
    with OpCount() as bwd:
        out.backward(grad)
    return kernel_ops(fwd.ops), kernel_ops(bwd.ops)


def host_us(fn: Callable[[], object], calls: int, runs: int = 5) -> float:
    """Process CPU microseconds a call of `fn`, least of `runs` runs of `calls` calls (wall time varies on a shared
    machine; CPU time of one thread does not count the waits)."""
    best = float("inf")
    for _ in range(runs):
        t0 = time.process_time()
        for _ in range(calls):
            fn()
        best = min(best, (time.process_time() - t0) / calls)
    return 1e6 * best


def llama_layer():
    """A host-bound transformers LlamaDecoderLayer (hidden 64, 4 heads, 1 K/V head, SDPA, bf16), its input (16
    positions) and position ids; None where transformers does not import."""
    try:
        from transformers.models.llama.modeling_llama import LlamaConfig, LlamaDecoderLayer
        from transformers.utils import logging as hf_logging
    except ImportError:
        return None
    hf_logging.set_verbosity_error()  # 4.44's notice on position_ids, once a layer
    cfg = LlamaConfig(hidden_size=64, intermediate_size=224, num_attention_heads=4, num_key_value_heads=1,
                      num_hidden_layers=1)
    cfg._attn_implementation = "sdpa"
    layer = LlamaDecoderLayer(cfg, 0).to(torch.bfloat16)
    x = torch.randn(1, 16, 64, dtype=torch.bfloat16, requires_grad=True)
    return layer, x, torch.arange(16)[None]


def charged_ms(fwd_kernels: int, bwd_kernels: int, recompute: bool) -> tuple[float, float]:
    """(the estimate's per-layer floor, the count at NVIDIA's launch-bound op) ms a layer and micro-batch."""
    passes = 3.0 + (1.0 if recompute else 0.0)
    op_s = host_figure("launch_bound_op_s", "nvidia") or 0.0
    kernels = fwd_kernels * (2 if recompute else 1) + bwd_kernels
    return 1e3 * load_constants().host_s_per_layer_pass * passes, 1e3 * kernels * op_s


def main() -> None:
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    built = llama_layer()
    if built is None:
        print("transformers: not installed (PYTHONPATH to a release), nothing to time")
        return
    import transformers

    layer, x, pos = built
    fwd, bwd = count_pass(lambda: layer(x, position_ids=pos)[0])
    print(f"transformers {transformers.__version__} LlamaDecoderLayer, torch {torch.__version__}: kernels a forward "
          f"{sum(fwd.values())}, a backward {sum(bwd.values())}")
    print("  forward: " + ", ".join(f"{k} {v}" for k, v in sorted(fwd.items())))
    print("  backward: " + ", ".join(f"{k} {v}" for k, v in sorted(bwd.items())))

    def run_fwd() -> None:
        with torch.no_grad():
            layer(x, position_ids=pos)

    def run_fb() -> None:
        out = layer(x, position_ids=pos)[0]
        out.backward(torch.ones_like(out))

    a = torch.randn(64, 64, dtype=torch.bfloat16)
    mm, f_us, fb_us = host_us(lambda: torch.mm(a, a), 20000), host_us(run_fwd, 2000), host_us(run_fb, 1000)
    n_f, n_b = sum(fwd.values()), sum(bwd.values())
    print(f"host on this CPU (one thread, process time): torch.mm 64^3 {mm:.1f} us; forward {f_us:.0f} us "
          f"({f_us / n_f:.1f} a kernel), backward {fb_us - f_us:.0f} us ({(fb_us - f_us) / n_b:.1f} a kernel)")
    for recompute in (False, True):
        floor, counted = charged_ms(n_f, n_b, recompute)
        here = (f_us * (2 if recompute else 1) + fb_us - f_us) / 1e3
        print(f"  a layer and micro-batch{' with full recompute' if recompute else ''}: this CPU {here:.2f} ms; "
              f"the estimate's floor {floor:.2f} ms; the count at NVIDIA's launch-bound op {counted:.2f} ms")


if __name__ == "__main__":
    main()
