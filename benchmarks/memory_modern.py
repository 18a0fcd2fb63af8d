"""Memory estimator on torchtitan's measured peaks (FSDP2 with TP / PP / CP, selective / full AC, Float8,
torch.compile; Llama 3.1 8B / 70B / 405B on H100 96 GB at 500 W and H200).

Rows: benchmarks/data/memory_validation.csv whose id starts with torchtitan_mem_ (copied verbatim from the
project's validation set). torchtitan logs the caching allocator's peak *reserved* memory (max_reserved_gib in
torchtitan/components/metrics.py), which is what the estimator's total (with its fragmentation item) models.
Each row: framework `torchtitan`, ZeRO-3 (FSDP2) over DP x CP, the row's AC mode (torchtitan's "selective" is
its per-op policy), FP8 linears where stated, torch.compile where stated; local batch = micro-batch (the PP
rows split it into pp micro-batches, torchtitan's default n_microbatches = pp), interleaved 1F1B with two
stages per rank (assumed, as in perf_modern.py).

Run: python benchmarks/memory_modern.py
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness import degrees, num, whole
from perf_modern import grand_teton_h100, h200
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.memory import GIB, estimate_memory
from trainsizer.models import load_model

DATA = Path(__file__).resolve().parent / "data" / "memory_validation.csv"
PRESETS = {"8": "llama-3.1-8b", "70": "llama-3.1-70b", "405": "llama-3.1-405b"}


@dataclass
class Case:
    case: str
    predicted_gib: float
    measured_gib: float

    @property
    def error(self) -> float:
        return (self.predicted_gib - self.measured_gib) / self.measured_gib


def rows() -> list[dict[str, str]]:
    with DATA.open(encoding="utf-8") as f:
        return [r for r in csv.DictReader(f) if r["id"].startswith("torchtitan_mem_")]


def configure(r: dict[str, str]):
    model = load_model(PRESETS[r["params_B"]])
    gpus, tp, pp, cp, dp = degrees(r)
    local = whole(r["micro_batch"]) or 1
    settings = (r["other_settings"] + " " + r["precision"]).lower()
    rec = r["act_recompute"].lower()
    recompute = "full" if rec.startswith("full") else "selective" if rec.startswith("selective") else "none"
    vpp = 2 if "interleaved" in settings else 1
    mb = max(1, local // pp) if pp > 1 else local
    training = Training(precision="fp8" if "float8" in settings else "bf16", seq_len=whole(r["seq_len"]),
                        global_batch_seqs=local * dp, flash_attention=True,
                        fp8_recipe="tensorwise" if "float8" in settings else "auto")
    # Loss: the December 2024 torchtitan (llama3_h100_202412 rows) did not compile its loss even under
    # --training.compile (train.py: "TODO: compiling loss function causes CUDA errors, turning off for now"), so
    # those rows run the eager fp32-upcast loss; the June 2025 version (H200 rows, torchtitan e7c0cae) compiles
    # it (components/loss.py build_cross_entropy_loss), which is what `auto` assumes for torchtitan + compile.
    loss = "upcast" if "202412" in r["source"] else "auto"
    strategy = Strategy(tp=tp, pp=pp, vpp=vpp, dp=dp, cp=cp, zero=3, micro_batch=mb, recompute=recompute,
                        sequence_parallel=tp > 1, torch_compile="compile" in settings, framework="torchtitan",
                        loss_impl=loss)
    system = h200(gpus) if "h200" in r["gpu_type"].lower() else grand_teton_h100(gpus)
    return model, training, system, strategy


def cases() -> list[Case]:
    out = []
    for r in rows():
        model, training, system, strategy = configure(r)
        est = estimate_memory(model, training, system, strategy, check=False)
        out.append(Case(r["id"], est.per_gpu_bytes / GIB, num(r["value"])))
    return out


def summary(cs: list[Case]) -> dict:
    err = np.array([abs(c.error) for c in cs])
    worst = sorted(cs, key=lambda c: -abs(c.error))[:3]
    return {"n": len(cs), "mape": 100.0 * float(err.mean()),
            "worst": [(c.case, c.measured_gib, c.predicted_gib, 100.0 * c.error) for c in worst]}


def main() -> None:
    cs = cases()
    print(f"{'case':34s} {'predicted GiB':>14s} {'measured GiB':>13s} {'error':>8s}")
    for c in cs:
        print(f"{c.case:34s} {c.predicted_gib:14.2f} {c.measured_gib:13.2f} {c.error:+8.1%}")
    s = summary(cs)
    print(f"torchtitan peak memory: n={s['n']} MAPE {s['mape']:.1f}% (none skipped)")
    for w in s["worst"]:
        print(f"  worst: {w[0]} measured {w[1]:.1f} predicted {w[2]:.1f} GiB ({w[3]:+.1f}%)")


if __name__ == "__main__":
    main()
