"""Host time of prime-rl's optimizer step over FSDP2's DTensor parameters, measured on this machine's CPU: a diagnostic
for the one-H100 constant of perf_heldout53 (docs/known-gaps.md 204 (b)); nothing here moves an estimate.

prime-rl (src/prime_rl/trainer/optim.py at d8f290ef0) builds torch.optim.AdamW without fused / foreach, so torch takes
its foreach path (torch/distributed/tensor/__init__.py appends DTensor to torch.optim's and torch.utils._foreach_utils'
_foreach_supported_types), and sft/train.py clips with torchtitan's clip_grad_norm_ (a1fdd7e,
torchtitan/distributed/utils.py: torch.nn.utils.get_total_norm, full_tensor, clip_grads_with_norm_). fully_shard makes
every parameter a DTensor even on one GPU (setup_fsdp runs whatever the world size). Each DTensor op pays the DTensor
dispatcher on the host (unwrap, sharding propagation or its cache, wrap); a foreach op pays it over the whole list.

Measured here, on CPU tensors of 64 elements (the arithmetic negligible, the host path the one CUDA tensors take up to
the kernel launch; AdamW given foreach=True, what torch picks on CUDA, where a CPU tensor would take the for-loop) on a
one-rank gloo mesh, one thread, the least of 20 timed calls, for the rows' parameter-tensor counts: the AdamW step and
the clip, plain tensors against DTensors, and one DTensor add against a plain one (the op pytorch PR 159699's
dispatch-overhead test times; its expected figure, 90 us a cached dispatch, is from the torch of 2025-08, the 2.9 line
the rows ran). The installed torch is not 2.9 (a C++ dispatch fast path, NativeShardingPropagatorCache, came later:
pytorch PR 178301 names it): the figures are this build's on a shared CPU, and the ratio of PR 159699's figure to this
build's one-add dispatch is printed as the scale between the two, not applied.

Run: python benchmarks/dtensor_step_host.py   (a few seconds; needs torch)
"""

from __future__ import annotations

import os
import time
from typing import Any

# parameter tensors of the rows' models under prime-rl (tied embeddings for the dense Qwen3 models, 11 tensors a
# layer: q, k, v, o, q_norm, k_norm, two norms, gate, up, down; the MoE: router gate and w1 / w2 / w3, untied head)
TENSORS = {"qwen3-0.6b": 28 * 11 + 2, "qwen3-4b": 36 * 11 + 2, "qwen3-30b-a3b": 48 * 12 + 3}
PR159699_CACHED_DISPATCH_US = 90.0  # test/distributed/tensor/test_dtensor_dispatch_overhead.py expected_dispatch_time
REPEATS = 20


def _mesh() -> Any:
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29531")
    if not dist.is_initialized():
        dist.init_process_group("gloo", rank=0, world_size=1)
    return init_device_mesh("cpu", (1,))


def _min_s(fn, repeats: int = REPEATS) -> float:
    """The least of `repeats` timed calls after two warm-up calls: host overhead on a shared CPU (as bnb_step_host)."""
    for _ in range(2):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def step_and_clip_s(n: int, mesh: Any, dtensor: bool) -> tuple[float, float]:
    """(AdamW step, clip) host seconds over `n` parameter tensors, DTensors on `mesh` or plain tensors."""
    import torch
    from torch.distributed.tensor import Shard, distribute_tensor

    def make() -> torch.Tensor:
        t = torch.randn(64)
        return distribute_tensor(t, mesh, [Shard(0)]) if dtensor else t

    params = [torch.nn.Parameter(make()) for _ in range(n)]
    for p in params:
        p.grad = torch.randn_like(p)
    # prime-rl gives neither fused nor foreach: on CUDA torch resolves that to foreach (DTensor included); on CPU it
    # would take the for-loop, so the CPU run states what CUDA picks
    opt = torch.optim.AdamW(params, lr=1e-4, foreach=True)

    def clip() -> None:  # torchtitan a1fdd7e clip_grad_norm_ without PP / EP
        total = torch.nn.utils.get_total_norm([p.grad for p in params], 2.0, False, None)
        if hasattr(total, "full_tensor"):
            total = total.full_tensor()
        torch.nn.utils.clip_grads_with_norm_(params, 1.0, total, None)

    return _min_s(opt.step), _min_s(clip)


def add_dispatch_s(mesh: Any, dtensor: bool) -> float:
    """Seconds of one a + a (PR 159699's op) on an 8 x 8 CPU tensor, DTensor or plain."""
    import torch
    from torch.distributed.tensor import Shard, distribute_tensor

    a = torch.rand(8, 8)  # PR 159699 adds 512 x 512 on CUDA, where the kernel runs async; on CPU a small one
    if dtensor:
        a = distribute_tensor(a, mesh, [Shard(0)])
    return _min_s(lambda: a + a, repeats=200)


def main() -> None:
    import torch

    torch.set_num_threads(1)
    mesh = _mesh()
    print(f"torch {torch.__version__}, CPU, one thread, one-rank gloo mesh; host ms a step (least of {REPEATS})")
    for model, n in TENSORS.items():
        (sp, cp), (sd, cd) = step_and_clip_s(n, mesh, False), step_and_clip_s(n, mesh, True)
        print(f"  {model:14s} {n:4d} tensors  AdamW plain {1e3 * sp:6.1f} DTensor {1e3 * sd:6.1f}  clip plain "
              f"{1e3 * cp:5.1f} DTensor {1e3 * cd:5.1f}  DTensor step + clip {1e3 * (sd + cd):6.1f} ms")
    plain, dt = add_dispatch_s(mesh, False), add_dispatch_s(mesh, True)
    print(f"one add: plain {1e6 * plain:.1f} us, DTensor {1e6 * dt:.1f} us (DTensor's own {1e6 * (dt - plain):.1f}); "
          f"PR 159699 expects {PR159699_CACHED_DISPATCH_US:.0f} us a cached DTensor dispatch on its 2025-08 torch: "
          f"{PR159699_CACHED_DISPATCH_US / (1e6 * dt):.1f}x this build's")


if __name__ == "__main__":
    main()
