"""DTensor's eager dispatch under tensor parallelism without sequence parallelism, with and without LoRA adapters: the
DTensor ops and collectives one TP-sharded linear runs a pass, counted on this machine's CPU, and the estimate's charge
for them (step_time._dtensor_tp_host_s) on perf_heldout75's NeMo AutoModel rows (docs/known-gaps.md 313 (a)).

What runs (read: torch 2.13's torch/distributed/tensor/parallel/style.py ColwiseParallel / RowwiseParallel, the venv's;
NVIDIA-NeMo/Automodel nemo_automodel/components/distributed/parallel_styles.py as stored at 13994ba3, whose
ColwiseParallelLora / RowwiseParallelLora are the classes 309 (a) read at b3c51c328): ColwiseParallel makes the
replicated input a DTensor and shards the weight Shard(0); ColwiseParallelLora also shards lora_A and lora_B Shard(0)
and redistributes lora_A's rank-sharded output to Replicate in a forward hook (an all-gather); RowwiseParallel shards
the weight Shard(1) and reduces the Partial output (an all-reduce); RowwiseParallelLora shards lora_A and lora_B
Shard(1). The adapter is AutoModel's eager LinearLoRA in form (base F.linear, lora_B(lora_A(x)) * scale, the add), its
base weight frozen. Every aten op with a DTensor argument passes DTensor's dispatcher (unwrap, sharding propagation or
its cache, wrap); views and transposes launch no kernel but pass it as an mm does.

--count: two gloo ranks on this CPU; a TorchDispatchMode counts the ops with a DTensor argument, wrappers on
torch.distributed._functional_collectives count the collectives (DTensor's own redistributions included), per linear
and pass, against perf_constants.yaml dtensor_tp.ops_per_linear. Without it: the rows without the charge, with it (the
estimate) and with the adapters' collectives added to their GPU time (not charged by the estimate), and perf_modern's
torchtitan rows (development set) without and with the charge. --all: every held-out time row the charge moves.
--time: every op of the counted LoRA layer timed one by one as pytorch PR 159699's test times its add (a
TorchDispatchMode around the call), the DTensor ops against the same layer's ops on plain tensors: DTensor's own host
time an op on this CPU and the installed torch (2.13: the C++ dispatch fast path), beside the charged figure; a CPU host
is not the rows' CUDA host, so a size, not a figure to charge (docs/known-gaps.md 314 (a)).

Run: python benchmarks/dtensor_tp_lora_host.py [--count | --time | --all]   (--count, --time need torch; --all about a
minute)
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

import perf_heldout75 as p75
from trainsizer.estimate import comm, step_time
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.host_sync import host_figure
from trainsizer.estimate.model_states import lora_adapted_widths

OPS = load_constants().raw["dtensor_tp"]["ops_per_linear"]  # {kind: {forward, backward}} per TP-sharded linear
# collectives the adapters add per adapted linear and pass beyond the base's (--count: a column- and a row-parallel pair
# runs 3 forward and 4 backward against 1 and 1 without adapters; halved per linear); not charged by the estimate
ADAPTER_COLLECTIVES = {"forward": 1.0, "backward": 1.5}
HIDDEN = 64  # the counted layer's width: counts do not depend on it
WARMUP_PASSES, TIMED_PASSES = 3, 20  # --time: passes before timing (the sharding caches filled) and timed


def _eager_tp(x: Any) -> Any:
    """A DTensor-TP style (dtensor_tp) at TP > 1 without torch.compile."""
    return np.asarray(x.fw.dtensor_tp, bool) & (np.asarray(x.t) > 1) & (np.asarray(x.a["torch_compile"]) <= 0)


def adapter_collectives_s(x: Any) -> Any:
    """GPU seconds an average layer's adapter collectives would take a micro-batch (ADAPTER_COLLECTIVES per adapted
    linear, the forward's again under full recompute), each timed as an all-gather of the rank-wide adapter activation
    (tokens x LoRA rank x 16 bit) over the TP group (comm.all_gather_time: latency-bound at these sizes)."""
    n_lin = lora_adapted_widths(x.model, x.training)[4]
    calls = n_lin * (ADAPTER_COLLECTIVES["forward"] * (1.0 + x.full_share) + ADAPTER_COLLECTIVES["backward"])
    k_tp = comm.ranks_per_domain(x.t, 1.0, x.domain)
    one = comm.all_gather_time(x.tok * x.training.lora_rank * 2.0, x.t, k_tp, x.link(x.t, 1.0), x.system)
    return calls * one


@contextlib.contextmanager
def variant(dtensor: bool = True, collectives: bool = False) -> Iterator[None]:
    """The estimate without its DTensor dispatch charge (step_time._dtensor_tp_host_s) where not `dtensor`, and with
    adapter_collectives_s added to the adapters' GPU time (through step_time._lora_adapters) where `collectives`;
    restored after."""
    host, gpu = step_time._dtensor_tp_host_s, step_time._lora_adapters

    def with_collectives(x: Any, eval_forward: bool = False) -> Any:
        extra = 0.0 if eval_forward or not collectives else np.where(_eager_tp(x), adapter_collectives_s(x), 0.0)
        return gpu(x, eval_forward) + extra

    step_time._dtensor_tp_host_s = host if dtensor else (lambda x: 0.0)
    step_time._lora_adapters = with_collectives
    try:
        yield
    finally:
        step_time._dtensor_tp_host_s, step_time._lora_adapters = host, gpu


def rows_under(dtensor: bool = True, collectives: bool = False) -> list[tuple[str, float, float]]:
    """(row id, published, predicted) of perf_heldout75's AutoModel rows under variant(dtensor, collectives)."""
    with variant(dtensor, collectives):
        run = p75.run_all()
    return [(c.row_id, c.measured, c.predicted) for c, _, _ in run if c.row_id.startswith("am_") and not c.skipped]


def print_charge() -> None:
    """The per-layer charge for the Llama 3.3 70B rows and the rows' errors without and with it."""
    lora = OPS["lora"]
    ops = 7.0 * (2.0 * lora["forward"] + lora["backward"])  # q, k, v, o, gate, up, down adapted; full recompute
    net_s = host_figure("dtensor_dispatch_s", "nvidia") - step_time._launch_op_s("nvidia")
    print(f"Llama block, 7 adapted linears, full recompute: {ops:.0f} DTensor ops a layer and micro-batch, "
          f"{1e3 * ops * net_s:.1f} ms at {1e6 * net_s:.1f} us each (dtensor_dispatch_s less launch_bound_op_s)")
    figures = (("no DTensor", False, False), ("estimate", True, False), ("+ collectives", True, True))
    runs = {name: rows_under(d, c) for name, d, c in figures}
    print(f"  {'row':52s} {'published':>9s} " + " ".join(f"{n:>16s}" for n, _, _ in figures))
    for i, (row_id, measured, _) in enumerate(runs["estimate"]):
        cells = " ".join(f"{runs[n][i][2]:8.4g} ({100 * (runs[n][i][2] / measured - 1):+5.1f}%)" for n, _, _ in figures)
        print(f"  {row_id:52s} {measured:9.4g} {cells}")


def print_torchtitan() -> None:
    """perf_modern's torchtitan rows (a development source) without and with the charge; those at TP > 1 without
    compile one by one."""
    import perf_modern as pm

    rows = {r["id"]: r for r in pm.modern_rows() if pm.source_key(r) == "torchtitan"}
    eager = {i for i, r in rows.items() if (st := pm.configure(r)[3]).tp > 1 and not st.torch_compile}
    for name, on in (("no DTensor charge", False), ("estimate", True)):
        with variant(dtensor=on):
            tt = [c for c in pm.cases() if c.row_id in rows]
        print(f"perf_modern torchtitan, {name}: MAPE {100 * np.mean([abs(c.err) for c in tt]):.2f}% over {len(tt)}; "
              "eager TP: " + ", ".join(f"{100 * c.err:+.1f}%" for c in tt if c.row_id in eager))


def print_moved(threshold: float = 0.005) -> None:
    """Every held-out time row (accuracy_bands.collect) whose error moves more than `threshold` with the DTensor
    dispatch charge: the rows beyond perf_heldout75 it reaches."""
    import accuracy_bands as ab

    with variant(dtensor=False):
        before = {(r.benchmark, r.row_id, r.metric): r for r in ab.collect() if r.quantity == "time"}
    after = {(r.benchmark, r.row_id, r.metric): r for r in ab.collect() if r.quantity == "time"}
    moved = [(k, before[k].err, after[k].err) for k in before
             if k in after and abs(after[k].err - before[k].err) > threshold]
    print(f"held-out time rows moved by the DTensor dispatch charge: {len(moved)} of {len(before)}")
    for (bench, row_id, _), e0, e1 in sorted(moved):
        print(f"  {bench:22s} {row_id:60s} {100 * e0:+6.1f}% -> {100 * e1:+6.1f}%")


def _tp_layer(kind: str, mesh: Any, parallel: bool = True) -> Any:
    """A layer of two column- and two row-parallel linears (`kind`: lora, frozen, trained) on `mesh` (TP-sharded where
    `parallel`, else the same layer on plain tensors)."""
    import torch
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    class Adapted(torch.nn.Linear):  # AutoModel's LinearLoRA in form: base + lora_B(lora_A(x)) * scale
        def __init__(self, d_in: int, d_out: int) -> None:
            super().__init__(d_in, d_out, bias=False)
            self.lora_A, self.lora_B = torch.nn.Linear(d_in, 4, bias=False), torch.nn.Linear(4, d_out, bias=False)

        def forward(self, x: Any) -> Any:
            return torch.nn.functional.linear(x, self.weight) + self.lora_B(self.lora_A(x)) * 2.0

    def shard(mod: Any, placement: Any) -> None:
        for owner, name in ((mod, "weight"), (mod.lora_A, "weight"), (mod.lora_B, "weight")):
            p = getattr(owner, name)
            owner.register_parameter(name, torch.nn.Parameter(distribute_tensor(p.data, mesh, [placement]),
                                                              requires_grad=p.requires_grad))

    def gather_hook(_m: Any, _i: Any, o: Any) -> Any:  # ColwiseParallelLora's lora_A output hook
        return o.redistribute(o.device_mesh, [Replicate()]) if any(isinstance(p, Shard) for p in o.placements) else o

    class Col(ColwiseParallel):
        def _partition_linear_fn(self, name: str, module: Any, device_mesh: Any) -> None:
            if hasattr(module, "lora_A"):
                shard(module, Shard(0))
                module.lora_A.register_forward_hook(gather_hook)

    class Row(RowwiseParallel):
        def _partition_linear_fn(self, name: str, module: Any, device_mesh: Any) -> None:
            if hasattr(module, "lora_A"):
                shard(module, Shard(1))

    def linear(d_in: int, d_out: int) -> Any:
        lin = Adapted(d_in, d_out) if kind == "lora" else torch.nn.Linear(d_in, d_out, bias=False)
        lin.weight.requires_grad_(kind == "trained")
        return lin

    h = HIDDEN
    layer = torch.nn.ModuleDict({"q": linear(h, h), "o": linear(h, h), "g": linear(h, 2 * h), "d": linear(2 * h, h)})
    styles = (Col, Row) if kind == "lora" else (ColwiseParallel, RowwiseParallel)
    if parallel:
        parallelize_module(layer, mesh, {"q": styles[0](), "o": styles[1](), "g": styles[0](), "d": styles[1]()})
    return layer


def _pass(layer: Any, x: Any, phase: list[str]) -> None:
    """One forward and backward of the counted layer, `phase` naming the pass under way."""
    phase[0] = "forward"
    y = layer["d"](layer["g"](x + layer["o"](layer["q"](x))))
    phase[0] = "backward"
    y.sum().backward()


def _count_rank(rank: int, world: int, port: int, kind: str, out: Any) -> None:
    """One gloo rank: _tp_layer(kind), one forward and backward; rank 0 puts {pass: (DTensor ops, collectives)} per
    linear on `out`."""
    import torch
    import torch.distributed as dist
    import torch.distributed._functional_collectives as funcol
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    layer = _tp_layer(kind, init_device_mesh("cpu", (world,)))
    counts = {"forward": [0, 0], "backward": [0, 0]}
    phase = ["forward"]

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            counts[phase[0]][0] += any(isinstance(a, DTensor) for a in tree_flatten((args, kwargs or {}))[0])
            return func(*args, **(kwargs or {}))

    def counted(fn: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            counts[phase[0]][1] += 1
            return fn(*args, **kwargs)
        return call

    for name in [n for n in dir(funcol) if n.startswith(("all_gather", "all_reduce", "reduce_scatter", "all_to_all"))]:
        setattr(funcol, name, counted(getattr(funcol, name)))
    with Count():
        _pass(layer, torch.randn(2, 8, HIDDEN, requires_grad=True), phase)
    if rank == 0:
        out.put({p: (c[0] / 4, c[1] / 4) for p, c in counts.items()})
    dist.barrier()  # neither rank tears the group down while the other still uses it
    dist.destroy_process_group()


def _time_rank(rank: int, world: int, port: int, kind: str, passes: int, out: Any) -> None:
    """One gloo rank: every aten op of _tp_layer(kind)'s forward and backward timed one by one as pytorch PR 159699's
    test times its add (a TorchDispatchMode around the call: DTensor's dispatch, the local op and its wrap), the
    TP-sharded layer's ops with a DTensor argument against the plain layer's ops; rank 0 puts {layer: [op seconds]}
    over `passes` timed passes on `out`."""
    import time

    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    mesh, times, phase = init_device_mesh("cpu", (world,)), [], ["forward"]

    class Time(TorchDispatchMode):
        def __init__(self, dtensor: bool) -> None:
            super().__init__()
            self.dtensor = dtensor

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            if self.dtensor != any(isinstance(a, DTensor) for a in tree_flatten((args, kwargs))[0]):
                return func(*args, **kwargs)
            start = time.perf_counter()
            result = func(*args, **kwargs)
            times.append(time.perf_counter() - start)
            return result

    found = {}
    for name, parallel in (("DTensor", True), ("plain", False)):
        layer, x = _tp_layer(kind, mesh, parallel), torch.randn(2, 8, HIDDEN, requires_grad=True)
        for _ in range(WARMUP_PASSES):
            _pass(layer, x, phase)
        times.clear()
        with Time(dtensor=parallel):
            for _ in range(passes):
                _pass(layer, x, phase)
        found[name] = list(times)
    if rank == 0:
        out.put(found)
    dist.barrier()
    dist.destroy_process_group()


def time_ops(kind: str = "lora", world: int = 2, port: int = 29571, passes: int = TIMED_PASSES) -> dict[str, list[float]]:
    """{"DTensor" | "plain": [seconds an aten op]} over `passes` forward and backward passes of a TP-sharded layer of
    `kind` (and the same layer on plain tensors) on `world` gloo ranks (spawned)."""
    import torch.multiprocessing as mp

    queue = mp.get_context("spawn").SimpleQueue()
    mp.spawn(_time_rank, args=(world, port, kind, passes, queue), nprocs=world, join=True)
    return queue.get()


def print_times() -> None:
    """Per-op host time of the counted LoRA layer's DTensor ops on this CPU and torch, beside the charged figure."""
    import torch

    found = time_ops()
    med = {k: float(np.median(v)) for k, v in found.items()}
    net_s = host_figure("dtensor_dispatch_s", "nvidia") - step_time._launch_op_s("nvidia")
    lora = OPS["lora"]
    ops = 7.0 * (2.0 * lora["forward"] + lora["backward"])
    own = max(med["DTensor"] - med["plain"], 0.0)
    print(f"torch {torch.__version__}, this CPU, one thread, two gloo ranks, {TIMED_PASSES} passes of a LoRA layer "
          f"(PR 159699's per-op timing): DTensor op median {1e6 * med['DTensor']:.1f} us "
          f"(mean {1e6 * np.mean(found['DTensor']):.1f}, {len(found['DTensor'])} ops), plain op median "
          f"{1e6 * med['plain']:.1f} us; DTensor's own {1e6 * own:.1f} us an op against the {1e6 * net_s:.1f} us "
          f"charged: {1e3 * ops * own:.1f} ms a Llama layer and micro-batch against {1e3 * ops * net_s:.1f} ms")


def count(kind: str, world: int = 2, port: int = 29561) -> dict[str, tuple[float, float]]:
    """{pass: (DTensor ops, collectives)} a TP-sharded linear of `kind` runs on `world` gloo ranks (spawned)."""
    import torch.multiprocessing as mp

    queue = mp.get_context("spawn").SimpleQueue()
    mp.spawn(_count_rank, args=(world, port, kind, queue), nprocs=world, join=True)
    return queue.get()


def main() -> None:
    if "--all" in sys.argv:
        print_moved()
        return
    if "--time" in sys.argv:
        print_times()
        return
    if "--count" in sys.argv:
        print("per TP-sharded linear and pass, two gloo ranks on this CPU: (DTensor ops, collectives)")
        for i, kind in enumerate(OPS):
            print(f"  {kind:8s} {count(kind, port=29561 + i)}   perf_constants.yaml: {OPS[kind]}")
    print_charge()
    print_torchtitan()


if __name__ == "__main__":
    main()
