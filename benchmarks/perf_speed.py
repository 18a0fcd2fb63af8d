"""Strategies evaluated per second by the vectorised performance estimator (and memory, when present).

Run: python benchmarks/perf_speed.py [n]
"""

from __future__ import annotations

import sys
import time

import numpy as np

from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.models.arch import ModelArch


def llama_70b() -> ModelArch:
    return ModelArch(name="llama-70b", family="llama", layers=80, hidden=8192, heads=64, kv_heads=8, ffn=28672,
                     vocab=128256, max_position=8192)


def random_strategies(n: int, seed: int = 0) -> Strategy:
    rng = np.random.default_rng(seed)
    tp = rng.choice([1, 2, 4, 8], n)
    pp = rng.choice([1, 2, 4, 8, 16], n)
    cp = rng.choice([1, 2], n)
    dp = np.maximum(1024 // (tp * pp * cp), 1)
    return Strategy(tp=tp, pp=pp, vpp=rng.choice([1, 2], n), dp=dp, cp=cp, ep=np.ones(n),
                    zero=rng.choice([0, 1, 3], n), micro_batch=rng.choice([1, 2, 4], n),
                    recompute=rng.choice([0, 1, 2], n), sequence_parallel=rng.choice([0, 1], n),
                    distributed_optimizer=rng.choice([0, 1], n))


def system() -> System:
    return System(accelerator="h100-sxm", gpus=1024, gpus_per_node=8, memory_gib=80,
                  peak_tflops={"bf16": 989.0, "fp8": 1979.0}, hbm_gb_s=3350.0, intra_node_gb_s=450.0,
                  nvls=True, inter_node_gb_s=50.0)


def measure(n: int = 1_000_000, repeats: int = 3) -> dict[str, float]:
    model, training, sysm = llama_70b(), Training(seq_len=8192, global_batch_seqs=1024), system()
    strat = random_strategies(n)
    step_time_arrays(model, training, sysm, random_strategies(10))  # warm caches
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        step_time_arrays(model, training, sysm, strat)
        best = min(best, time.perf_counter() - t0)
    result = {"n": float(n), "time_s": best, "per_s": n / best}
    try:  # memory estimator (another module); timed together when its vectorised function exists
        from trainsizer.estimate.memory import memory_per_gpu_bytes  # type: ignore[attr-defined]
    except ImportError:
        return result
    try:
        t0 = time.perf_counter()
        step_time_arrays(model, training, sysm, strat)
        memory_per_gpu_bytes(model, training, sysm, strat)
        both = time.perf_counter() - t0
        result.update(time_with_memory_s=both, per_s_with_memory=n / both)
    except Exception as exc:  # signature still moving; report instead of failing
        result["memory_error"] = repr(exc)  # type: ignore[assignment]
    return result


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    r = measure(n)
    print(f"{int(r['n']):,} strategies in {r['time_s']:.3f} s -> {r['per_s']:,.0f} strategies/s (time only)")
    if "per_s_with_memory" in r:
        print(f"time + memory: {r['time_with_memory_s']:.3f} s -> {r['per_s_with_memory']:,.0f} strategies/s")
    elif "memory_error" in r:
        print(f"memory estimator present but not callable this way: {r['memory_error']}")
    else:
        print("memory estimator's vectorised memory_per_gpu_bytes not available yet; time only")


if __name__ == "__main__":
    main()
