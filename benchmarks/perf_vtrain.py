"""Rank and time single-node strategies against vTrain's 1,440 measured iterations.

Data: benchmarks/data/vtrain_single_node.csv (vTrain project, KAIST VIA Research Group, MIT licence in
vtrain_LICENSE.txt): GPT-style models on one A100 node (NVLink), Megatron-DeepSpeed, 1F1B, activation
checkpointing on (full), fp16, no FlashAttention. Reports MAPE of the iteration time, the Spearman rank
correlation of predicted vs measured time within each model (hidden, layers, heads, seq), and whether the
strategy predicted fastest (per model and GPU count) is within 2% of the truly fastest.

Run: python benchmarks/perf_vtrain.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from fabrics import hdr200
from harness import usable_gib
from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.models.arch import ModelArch

DATA = Path(__file__).resolve().parent / "data"
VOCAB = 51200  # Megatron GPT-2 BPE vocabulary padded (50257 -> 51200); not in the CSV


def load(path: Path = DATA / "vtrain_single_node.csv") -> dict[str, np.ndarray]:
    rows = list(csv.DictReader(open(path, encoding="utf-8-sig")))
    cols = {
        "gpus": "# GPUs", "gbs": "global batch", "mb": "micro batch", "hidden": "hidden size",
        "heads": "attention heads", "layers": "# layers", "seq": "sequence length", "tp": "tensor parallelism",
        "dp": "data parallelism", "pp": "pipeline parallelism", "ms": "iteration time (ms)",
    }
    return {k: np.array([float(r[c]) for r in rows]) for k, c in cols.items()}


def system(gpus: int) -> System:
    """One A100-SXM4 node (NVLink3 300 GB/s per direction). vTrain does not say 40 or 80 GB; 80 GB assumed."""
    return System(accelerator="a100-sxm-80gb", gpus=gpus, gpus_per_node=8, memory_gib=usable_gib("a100-sxm-80gb"),
                  peak_tflops={"fp16": 312.0, "bf16": 312.0}, hbm_gb_s=2039.0, intra_node_gb_s=300.0,
                  scaleup_domain=8, inter_node_gb_s=hdr200(), tdp_w=400.0)


def predict(d: dict[str, np.ndarray]) -> np.ndarray:
    """Predicted iteration time (ms) for every row; rows grouped by (model, global batch) and vectorised."""
    pred = np.empty_like(d["ms"])
    keys = np.stack([d["hidden"], d["layers"], d["heads"], d["seq"], d["gbs"]], axis=1)
    for key in np.unique(keys, axis=0):
        sel = np.all(keys == key, axis=1)
        h, L, a, s, gbs = (int(x) for x in key)
        model = ModelArch(name=f"gpt-h{h}-l{L}", family="gpt", layers=L, hidden=h, heads=a, kv_heads=a,
                          ffn=4 * h, vocab=VOCAB, mlp="gelu", norm="layernorm", position="learned",
                          max_position=s, qkv_bias=True, out_bias=True, mlp_bias=True)
        training = Training(precision="fp16", seq_len=s, global_batch_seqs=gbs, flash_attention=False)
        strat = Strategy(tp=d["tp"][sel], pp=d["pp"][sel], dp=d["dp"][sel], micro_batch=d["mb"][sel],
                         recompute=np.full(sel.sum(), 2), sequence_parallel=np.zeros(sel.sum()),
                         framework="megatron")  # vTrain profiles Megatron-LM
        out = step_time_arrays(model, training, system(8), strat)
        pred[sel] = out["step_s"] * 1000.0
    return pred


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman rank correlation (average ranks for ties), computed with numpy."""
    def ranks(v: np.ndarray) -> np.ndarray:
        order = np.argsort(v, kind="mergesort")
        r = np.empty(len(v))
        r[order] = np.arange(len(v), dtype=float)
        for val in np.unique(v):  # average ties
            m = v == val
            if m.sum() > 1:
                r[m] = r[m].mean()
        return r
    rx, ry = ranks(x), ranks(y)
    return float(np.corrcoef(rx, ry)[0, 1])


def evaluate(d: dict[str, np.ndarray] | None = None) -> dict:
    d = d or load()
    pred = predict(d)
    meas = d["ms"]
    ape = np.abs(pred - meas) / meas
    models = np.stack([d["hidden"], d["layers"], d["heads"], d["seq"]], axis=1)
    per_model = {}
    for key in np.unique(models, axis=0):
        sel = np.all(models == key, axis=1)
        per_model[tuple(int(x) for x in key)] = (spearman(pred[sel], meas[sel]), float(100 * ape[sel].mean()))
    # top-1: within each (model, GPU count, global batch) group, is the predicted-fastest within 2% of best?
    groups = np.stack([d["hidden"], d["layers"], d["heads"], d["seq"], d["gpus"], d["gbs"]], axis=1)
    hits, total, regrets = 0, 0, []
    for key in np.unique(groups, axis=0):
        sel = np.where(np.all(groups == key, axis=1))[0]
        if len(sel) < 2:
            continue
        total += 1
        chosen = sel[np.argmin(pred[sel])]
        hits += meas[chosen] <= 1.02 * meas[sel].min()
        regrets.append(meas[chosen] / meas[sel].min() - 1.0)
    # what the search ranks by: per model, the layout with the best throughput (time per sequence) and the
    # cheapest (GPU-time per sequence), over every GPU count and batch; regret of the predicted best
    search_regret = {}
    for metric, scale in (("throughput", 1.0 / d["gbs"]), ("cost", d["gpus"] / d["gbs"])):
        worst = 0.0
        for key in np.unique(models, axis=0):
            sel = np.where(np.all(models == key, axis=1))[0]
            p, m = pred[sel] * scale[sel], meas[sel] * scale[sel]
            worst = max(worst, float(m[np.argmin(p)] / m.min() - 1.0))
        search_regret[metric] = 100 * worst
    return {
        "search_regret_pct": search_regret,
        "rows": len(meas),
        "mape": float(100 * ape.mean()),
        "max_ape": float(100 * ape.max()),
        "per_model": per_model,
        "spearman_min": min(v[0] for v in per_model.values()),
        "spearman_mean": float(np.mean([v[0] for v in per_model.values()])),
        "top1_hits": hits,
        "top1_groups": total,
        "regret_median_pct": float(100 * np.median(regrets)),
        "regret_max_pct": float(100 * np.max(regrets)),
        "pred": pred,
    }


def main() -> None:
    r = evaluate()
    print(f"vTrain single-node: {r['rows']} rows, MAPE {r['mape']:.1f}% (max {r['max_ape']:.0f}%)")
    print(f"{'hidden':>6s} {'layers':>6s} {'heads':>5s} {'seq':>5s} {'spearman':>9s} {'MAPE%':>6s}")
    for (h, L, a, s), (rho, e) in r["per_model"].items():
        print(f"{h:6d} {L:6d} {a:5d} {s:5d} {rho:9.3f} {e:6.1f}")
    print(f"Spearman min {r['spearman_min']:.3f}, mean {r['spearman_mean']:.3f}")
    print(f"predicted-fastest within 2% of measured-fastest: {r['top1_hits']}/{r['top1_groups']} groups "
          "(model x GPU count x global batch)")
    print(f"regret of the predicted-fastest (measured time / measured best - 1): median "
          f"{r['regret_median_pct']:.1f}%, max {r['regret_max_pct']:.1f}%")
    sr = r["search_regret_pct"]
    print(f"per model, the layout predicted best vs the measured best (what a search ranks by): worst regret "
          f"{sr['throughput']:.1f}% on throughput (time per sequence), {sr['cost']:.1f}% on cost (GPU-time per "
          "sequence)")


if __name__ == "__main__":
    main()
