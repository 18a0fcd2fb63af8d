"""How good is the layout the plan would pick? Regret against vTrain's 1,440 measured single-node runs.

Data: benchmarks/data/vtrain_single_node.csv (vTrain, KAIST VIA Research Group, MIT licence; GPT-style
models on one 8x A100 node, Megatron, fp16, full recompute). A plan fixes the model, the global batch and
the hardware, then ranks layouts; so a group here is (model, GPU count, global batch) and its candidates are
the layouts vTrain measured for it. Within a group the plan's rule is applied: layouts that do not fit
(trainsizer's memory model, A100 80 GB as perf_vtrain assumes) are dropped, the predicted-fastest is the
pick, and layouts predicted within the plan's tie fraction of it are ties (plan.searched.tie_fraction_of: the runs'
class's held-out spread about its median, at least search.yaml `tie_fraction`).

Reported, per model and GPU count (over its global batches) and overall:
- regret of the pick: measured time of the pick / measured best - 1; how often it is within 2%;
- tie-aware: how often the measured best is among the predicted ties (the plan shows them as equals), the
  mean size of the tie set, and the worst regret of any tied layout (what a user risks taking any of them).

Run: python benchmarks/plan_regret_vtrain.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import perf_vtrain as pvt  # noqa: E402
from trainsizer.estimate import evaluate_batch  # noqa: E402
from trainsizer.estimate.inputs import Strategy, Training  # noqa: E402
from trainsizer.models.arch import ModelArch  # noqa: E402
from trainsizer.plan.searched import tie_fraction_of  # noqa: E402
from trainsizer.search import load_config  # noqa: E402


def plan_tie_fraction() -> float:
    """The tie fraction a plan for these runs uses: their job class's (estimate.accuracy.job_class on the runs'
    model kind, A100 part, one-host scale and the Megatron stack perf_vtrain models)."""
    from trainsizer.catalog import load_catalog
    from trainsizer.estimate.accuracy import STACK_FAMILY, JobClass, gpu_family, job_scale

    arch = load_catalog().accelerator(pvt.system(8).accelerator).arch
    cls = JobClass(STACK_FAMILY["megatron"], "dense", gpu_family(arch), job_scale(8, 8, 8))
    return tie_fraction_of(cls, load_config().tie_fraction)


def fits(d: dict[str, np.ndarray]) -> np.ndarray:
    """trainsizer's memory verdict for every row (the search drops layouts that do not fit)."""
    out = np.zeros(len(d["ms"]), dtype=bool)
    keys = np.stack([d["hidden"], d["layers"], d["heads"], d["seq"], d["gbs"], d["gpus"]], axis=1)
    for key in np.unique(keys, axis=0):
        sel = np.all(keys == key, axis=1)
        h, L, a, s, gbs, g = (int(x) for x in key)
        model = ModelArch(name=f"gpt-h{h}-l{L}", family="gpt", layers=L, hidden=h, heads=a, kv_heads=a,
                          ffn=4 * h, vocab=pvt.VOCAB, mlp="gelu", norm="layernorm", position="learned",
                          max_position=s, qkv_bias=True, out_bias=True, mlp_bias=True)
        training = Training(precision="fp16", seq_len=s, global_batch_seqs=gbs, flash_attention=False)
        n = int(sel.sum())
        strat = Strategy(tp=d["tp"][sel], pp=d["pp"][sel], dp=d["dp"][sel], micro_batch=d["mb"][sel],
                         recompute=np.full(n, 2), sequence_parallel=np.zeros(n), framework="megatron")
        r = evaluate_batch(model, training, pvt.system(g), strat, parts=("valid", "memory"), threads=1)
        out[sel] = r["fits"]
    return out


def evaluate(tie_fraction: float | None = None) -> dict:
    tie = plan_tie_fraction() if tie_fraction is None else tie_fraction
    d = pvt.load()
    pred, meas, ok = pvt.predict(d), d["ms"], fits(d)
    groups = np.stack([d["hidden"], d["layers"], d["heads"], d["seq"], d["gpus"], d["gbs"]], axis=1)
    rows = []
    for key in np.unique(groups, axis=0):
        sel = np.where(np.all(groups == key, axis=1) & ok)[0]
        if len(sel) < 2:
            continue
        best_meas = meas[sel].min()
        pick = sel[np.argmin(pred[sel])]
        tied = sel[pred[sel] <= pred[pick] * (1.0 + tie)]
        rows.append({
            "model": tuple(int(x) for x in key[:4]), "gpus": int(key[4]), "gbs": int(key[5]),
            "candidates": len(sel), "regret": meas[pick] / best_meas - 1.0,
            "best_in_ties": bool(np.any(meas[tied] == best_meas)), "ties": len(tied),
            "worst_tied_regret": float(meas[tied].max() / best_meas - 1.0),
        })
    regret = np.array([r["regret"] for r in rows])
    return {
        "tie_fraction": tie, "groups": len(rows), "rows": rows, "fits_rows": int(ok.sum()),
        "within_2pct": float(np.mean(regret <= 0.02)), "regret_median": float(np.median(regret)),
        "regret_p90": float(np.percentile(regret, 90)), "regret_max": float(regret.max()),
        "best_in_ties": float(np.mean([r["best_in_ties"] for r in rows])),
        "mean_ties": float(np.mean([r["ties"] for r in rows])),
        "worst_tied_regret_median": float(np.median([r["worst_tied_regret"] for r in rows])),
    }


def main() -> None:
    r = evaluate()
    print(f"vTrain single-node, the plan's pick per (model, GPU count, global batch): {r['groups']} groups, "
          f"{r['fits_rows']} of 1440 layouts fit by trainsizer's memory model; ties within {r['tie_fraction']:.0%}")
    print(f"{'hidden':>6s} {'layers':>6s} {'seq':>5s} {'GPUs':>4s} {'groups':>6s} {'regret med%':>11s} "
          f"{'max%':>6s} {'<=2%':>5s} {'best in ties':>12s} {'ties':>5s}")
    by: dict[tuple, list[dict]] = {}
    for row in r["rows"]:
        by.setdefault((*row["model"], row["gpus"]), []).append(row)
    for (h, L, _a, s, g), rs in sorted(by.items()):
        reg = np.array([x["regret"] for x in rs])
        print(f"{h:6d} {L:6d} {s:5d} {g:4d} {len(rs):6d} {100 * np.median(reg):11.1f} {100 * reg.max():6.1f} "
              f"{np.mean(reg <= 0.02):5.0%} {np.mean([x['best_in_ties'] for x in rs]):12.0%} "
              f"{np.mean([x['ties'] for x in rs]):5.1f}")
    print(f"overall: pick within 2% of the measured best in {r['within_2pct']:.0%} of groups; regret median "
          f"{100 * r['regret_median']:.1f}%, p90 {100 * r['regret_p90']:.1f}%, max {100 * r['regret_max']:.1f}%")
    print(f"tie-aware: the measured best is among the predicted ties in {r['best_in_ties']:.0%} of groups "
          f"(mean {r['mean_ties']:.1f} tied layouts; median worst regret of a tied layout "
          f"{100 * r['worst_tied_regret_median']:.1f}%)")


if __name__ == "__main__":
    main()
