"""Held-out check of the NVFP4 recipe's speed against the FP8 recipes, at one layout: Megatron-Bridge's published
pre-training rows (26.04 and 26.06 NeMo containers, GB300 / GB200 NVL72, Llama 3 70B and Llama 3.1 405B) that list
NVFP4 beside MXFP8 or FP8 current scaling on the same system, GPUs, batch and parallel layout.

Only the ratio of the two rows is compared: the recipes' recompute, offload and CUDA graph settings are the same for
both rows and not read here, so the level of either row is not scored. The NVFP4 GEMM rate (perf_constants.yaml
fp8.recipes.nvfp4: 1.81x the part's per-tensor FP8 rate) was measured in Transformer Engine's pre-quantized GEMM
timings on B300, not on these rows; nothing is fitted on them. benchmarks/fp8_pairs.py holds these pairs beside every
other source's precision pairs. Both rows state the cuDNN release perf_mbridge26.py states for these releases'
Blackwell rows (CUDNN_26: 9.17, the attention of the images they build on).

Data: benchmarks/data/mbridge_nvfp4_pairs.csv (source, commit and table per row).

Run: python benchmarks/nvfp4_pairs.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from perf_mbridge26 import CUDNN_26
from trainsizer.catalog import load_catalog
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.scenario import resolve_job

DATA = Path(__file__).resolve().parent / "data" / "mbridge_nvfp4_pairs.csv"


def job(r: dict[str, str], recipe: str) -> dict:
    """The row's layout under one recipe (Megatron-Core with the distributed optimizer and bf16 gradient reduce, as
    the Megatron-Bridge performance recipes run it; FP8 primary weights as the style's FP8 default, off under
    NVFP4)."""
    slots = r["pipeline_slots"] == "1"
    return {
        "model": r["model"], "method": "pretrain", "seq_len": 8192, "data": {"tokens": 1e9},
        "global_batch": {"sequences": int(r["global_batch_seqs"])}, "precision": "fp8", "fp8_recipe": recipe,
        "hardware": {"accelerator": r["accelerator"], "count": int(r["gpu_count"]), "network": "ib-ndr400"},
        "strategy": {"tp": int(r["tp"]), "pp": int(r["pp"]), "cp": int(r["cp"]), "vpp": int(r["vpp"]),
                     "micro_batch": int(r["micro_batch"]), "recompute": "none", "framework": "megatron-core",
                     "distributed_optimizer": True, "grad_reduce_in_fp32": False,
                     "pipeline_embedding_layer": slots, "pipeline_loss_layer": slots, "cudnn_release": CUDNN_26},
    }


def tokens_per_gpu(r: dict[str, str], recipe: str, cat) -> float:
    sc = resolve_job(job(r, recipe), cat)
    o = step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)
    return sc.training.tokens_per_step / float(np.asarray(o["step_s"]).reshape(-1)[0]) / sc.system.gpus


def pairs() -> list[tuple[str, float, float]]:
    """(row id, measured ratio, predicted ratio) of NVFP4 over the row's baseline recipe."""
    cat = load_catalog()
    out = []
    for r in csv.DictReader(DATA.open(encoding="utf-8")):
        measured = float(r["tokens_per_sec_per_gpu"]) / float(r["baseline_tokens_per_sec_per_gpu"])
        predicted = tokens_per_gpu(r, r["recipe"], cat) / tokens_per_gpu(r, r["baseline_recipe"], cat)
        out.append((r["id"], measured, predicted))
    return out


def main() -> None:
    rows = pairs()
    print(f"{'NVFP4 over the FP8 recipe at one layout':48s} {'measured':>9s} {'predicted':>9s} {'err%':>7s}")
    for rid, m, p in rows:
        print(f"{rid:48s} {m:9.3f} {p:9.3f} {100 * (p - m) / m:+7.1f}")
    err = [abs(p - m) / m for _, m, p in rows]
    print(f"\nMegatron-Bridge 26.04 / 26.06 NVFP4 pairs (held out): n={len(rows)} mean |error| of the ratio "
          f"{100 * sum(err) / len(err):.1f}%, worst {100 * max(err):.1f}%")


if __name__ == "__main__":
    main()
