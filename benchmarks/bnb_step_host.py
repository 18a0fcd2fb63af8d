"""Host time of bitsandbytes' optimizer step per parameter tensor (perf_constants.yaml optimizer.bnb_host_s_per_tensor;
docs/known-gaps.md 162).

bitsandbytes' Optimizer8bit.step runs torch.cuda.synchronize() after every parameter's update (optim/optimizer.py,
0.39 to 0.49), so the Python that prepares the next parameter's update runs while the GPU idles. This script runs
bitsandbytes' own AdamW8bit.step (Optimizer8bit.step -> Optimizer2State.update_step ->
functional.optimizer_update_8bit_blockwise) over 291 bf16 tensors (Llama 2 7B's count) on the CPU, with the CUDA
library's entry point replaced by a C function taking the same arguments through ctypes and torch.cuda's
current_device / set_device / synchronize stubbed, and prints the seconds a tensor (min of 30 steps) beside a
1-element torch.add on the same CPU. Not in the figure: the launch itself, cudaSetDevice and the synchronize's
return.

Needs bitsandbytes 0.44.1 (not a project dependency; `pip install --no-deps --target DIR bitsandbytes==0.44.1`,
then PYTHONPATH=DIR). It says so and exits 0 where bitsandbytes is not importable.

Run: python benchmarks/bnb_step_host.py [tensors]
"""

from __future__ import annotations

import ctypes
import sys
import time

import torch

REPS = 30


def _stub_cuda(functional) -> None:
    """The CUDA library's entry points as a real C call through ctypes (labs: the arguments converted as for the
    library); torch.cuda's device calls as no-ops; bitsandbytes' is_on_gpu loop kept, checking "cpu"."""
    cfun = ctypes.CDLL(None).labs

    class Lib:
        compiled_with_cuda = True

        def __getattr__(self, name):
            return cfun

    functional.lib = Lib()
    functional.str2optimizer8bit_blockwise = {name: (cfun, cfun, cfun) for name in (
        "adam", "momentum", "rmsprop", "lion", "adagrad", "ademamix")}
    torch.cuda.current_device = lambda: 0
    torch.cuda.set_device = lambda device: None
    torch.cuda.synchronize = lambda *args: None

    def is_on_gpu(tensors):
        on_gpu, gpu_ids = True, set()
        for t in tensors:
            if t is None:
                continue
            is_paged = getattr(t, "is_paged", False)
            on_gpu &= t.device.type == "cpu" or is_paged
            if not is_paged:
                gpu_ids.add(t.device.index)
        return on_gpu

    functional.is_on_gpu = is_on_gpu


def per_tensor_s(bnb, n: int) -> tuple[float, float]:
    """(min, median) seconds a tensor of AdamW8bit.step over `n` 8,192-element bf16 tensors."""
    params = [torch.nn.Parameter(torch.zeros(8192, dtype=torch.bfloat16)) for _ in range(n)]
    for p in params:
        p.grad = torch.zeros_like(p)
    opt = bnb.optim.AdamW8bit(params, lr=1e-5)
    opt.step()  # states created
    times = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        opt.step()
        times.append(time.perf_counter() - t0)
    return min(times) / n, sorted(times)[REPS // 2] / n


def add_op_s(n: int) -> float:
    """Seconds of a 1-element torch.add(out=) on this CPU (min of REPS loops of n): the host's speed."""
    a, b, c = torch.zeros(1), torch.zeros(1), torch.zeros(1)
    best = float("inf")
    for _ in range(REPS):
        t0 = time.perf_counter()
        for _ in range(n):
            torch.add(a, b, out=c)
        best = min(best, time.perf_counter() - t0)
    return best / n


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 291
    try:
        import bitsandbytes as bnb
        import bitsandbytes.functional as functional
    except ImportError:
        print("bitsandbytes is not installed: nothing measured (see the module docstring)")
        return
    _stub_cuda(functional)
    low, mid = per_tensor_s(bnb, n)
    print(f"bitsandbytes {bnb.__version__} AdamW8bit.step, {n} tensors: {1e6 * low:.1f} us a tensor (min of {REPS}), "
          f"median {1e6 * mid:.1f}")
    print(f"1-element torch.add(out=) on this CPU: {1e6 * add_op_s(n):.2f} us")


if __name__ == "__main__":
    main()
