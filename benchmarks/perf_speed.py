"""Strategies evaluated per second by `estimate.batch.evaluate_batch` (the search's entry point).

Reports validity (the rules), memory, time, and all three together (the combined rate is the one the issue
targets: >= 1,000,000 strategies/s), each the best of a few repeats on n random Llama-70B strategies.

Run: python benchmarks/perf_speed.py [n] [threads]
"""

from __future__ import annotations

import sys
import time

import numpy as np

from fabrics import ndr400
from trainsizer.estimate.batch import PARTS, evaluate_batch
from trainsizer.estimate.inputs import Strategy, System, Training
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
                  nvls=True, inter_node_gb_s=ndr400())


def measure(n: int = 1_000_000, repeats: int = 3, threads: int | None = None) -> dict[str, float]:
    """Seconds (best of `repeats`) and strategies/s for each part alone and for all parts together."""
    model, training, sysm = llama_70b(), Training(seq_len=8192, global_batch_seqs=1024), system()
    strat = random_strategies(n)
    evaluate_batch(model, training, sysm, random_strategies(10))  # warm caches
    result: dict[str, float] = {"n": float(n)}
    for name, parts in (*((p, (p,)) for p in PARTS), ("combined", PARTS)):
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            evaluate_batch(model, training, sysm, strat, parts=parts, threads=threads)
            best = min(best, time.perf_counter() - t0)
        result[f"{name}_s"] = best
        result[f"{name}_per_s"] = n / best
    # evaluate_batch skips memory and time of strategies that break a rule: also time a batch where every
    # strategy is valid (the rate a search sees when it only proposes legal layouts)
    ok = evaluate_batch(model, training, sysm, strat, parts=("valid",))["valid"]
    result["valid_share"] = float(ok.mean())
    fields = ("tp", "pp", "vpp", "dp", "cp", "ep", "zero", "micro_batch", "recompute", "sequence_parallel",
              "distributed_optimizer")
    legal = strat.with_(**{f: np.resize(np.asarray(getattr(strat, f))[ok], n) for f in fields})
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        evaluate_batch(model, training, sysm, legal, threads=threads)
        best = min(best, time.perf_counter() - t0)
    result["combined_all_valid_s"] = best
    result["combined_all_valid_per_s"] = n / best
    return result


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else None
    r = measure(n, threads=threads)
    print(f"{int(r['n']):,} strategies, evaluate_batch (threads={threads or 'all cores'}):")
    labels = {"valid": "validity", "memory": "memory", "time": "time",
              "combined": f"valid+memory+time ({r['valid_share']:.0%} valid)",
              "combined_all_valid": "valid+memory+time (all valid)"}
    for name, label in labels.items():
        print(f"  {label:34s} {r[name + '_s']:.3f} s -> {r[name + '_per_s'] / 1e6:.2f} M strategies/s")


if __name__ == "__main__":
    main()
