"""Cross-part check (nothing fitted here): Lambda's same-harness BERT-large SQuAD fine-tuning against the estimate.

Data: benchmarks/data/lambda_bert_squad.csv, four single-GPU rows of lambdal/deeplearning-benchmark (its
pytorch-train-throughput-fp16.csv at aa5addb and each row's run log under pytorch/results/, read 2026-12-05): NVIDIA
DeepLearningExamples' run_squad.py, BERT-large, max_seq_length 384, APEX AMP O2 (fp16 with fp32 master weights), 100
steps at the batch the card holds, on an A100 80GB SXM4, an RTX 4090, an RTX 6000 Ada (Lambda's "AdaA6000") and an
RTX A6000, run 2022-10 .. 2023-01 in one campaign. The log's tqdm running rate at iterations 10 and 100 is kept: flat
on three cards, falling 1.33 -> 1.21 it/s on the RTX 6000 Ada (300 W, blower) as the run goes on.

What it checks: the ratio of each card's measured samples/s to the A100's, against the estimate's ratio, on a BERT-large
proxy (24 layers, hidden 1,024, 16 heads, FFN 4,096, GELU, LayerNorm, learned positions; the estimate's attention is
causal, BERT's bidirectional: its attention FLOPs are ~6% of a layer's at 384 positions, half of that counted). The
absolute rates are printed too, but the proxy and the harness's fused kernels are approximations; the ratio between
cards in one harness is what the GEMM shares (perf_constants.yaml gemm.efficiency_max) decide. The RTX 4090 and RTX
A6000 ratios are out of sample; the RTX 6000 Ada's share is derived from this file's RTX 6000 Ada / RTX 4090 pair
(docs/known-gaps.md 135 (c)), so its ratio is in sample. Two styles bracket the harness: megatron (fused element-wise
kernels, as DeepLearningExamples' APEX layers) and hf (eager).

Run: python benchmarks/lambda_bert.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from trainsizer.catalog import load_catalog
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.scenario import resolve_job

DATA = Path(__file__).resolve().parent / "data" / "lambda_bert_squad.csv"
REFERENCE = "a100-sxm-80gb"
STYLES = ("megatron", "hf")
# BERT-large (google-research/bert bert_config.json of bert-large-uncased: 24 layers, hidden 1,024, 16 heads,
# intermediate 4,096, GELU, vocab 30,522, 512 positions), written as the estimate's inline model
BERT_LARGE = {"name": "bert-large-proxy", "layers": 24, "hidden": 1024, "heads": 16, "kv_heads": 16, "ffn": 4096,
              "vocab": 30522, "mlp": "gelu", "norm": "layernorm", "position": "learned", "max_position": 512,
              "tied_embeddings": True, "qkv_bias": True, "out_bias": True, "mlp_bias": True}


def rows() -> list[dict[str, str]]:
    return list(csv.DictReader(DATA.open(encoding="utf-8")))


def job(r: dict[str, str], style: str) -> dict:
    """The row as a job file: full fine-tuning on one card, every feature padded to max_seq_length."""
    batch, seq = int(r["batch"]), int(r["seq_len"])
    return {"model": BERT_LARGE, "method": "full", "seq_len": seq, "data": {"samples": 1e6, "avg_tokens": seq},
            "packing": True, "global_batch": {"sequences": batch}, "precision": "bf16", "optimizer": "adamw",
            "hardware": {"accelerator": r["part"], "count": 1},
            "strategy": {"micro_batch": batch, "recompute": "none", "framework": style}}


def predicted(r: dict[str, str], style: str, cat=None) -> float:
    """The estimate's samples/s for the row under `style`."""
    sc = resolve_job(job(r, style), cat or load_catalog())
    step = float(np.asarray(step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)["step_s"]).reshape(-1)[0])
    return int(r["batch"]) / step


def ratios(style: str) -> dict[str, tuple[float, float]]:
    """part -> (measured, predicted) samples/s over the A100's, under `style`."""
    cat = load_catalog()
    rs = {r["part"]: r for r in rows()}
    pred = {p: predicted(r, style, cat) for p, r in rs.items()}
    ref_m, ref_p = float(rs[REFERENCE]["samples_per_s"]), pred[REFERENCE]
    return {p: (float(r["samples_per_s"]) / ref_m, pred[p] / ref_p) for p, r in rs.items() if p != REFERENCE}


def main() -> None:
    cat = load_catalog()
    print("Lambda BERT-large SQuAD, fp16 AMP, one GPU (samples/s; tqdm it/s at iterations 10 and 100):")
    for r in rows():
        preds = "  ".join(f"{s} {predicted(r, s, cat):6.1f}" for s in STYLES)
        print(f"  {r['part']:15s} batch {int(r['batch']):3d} measured {float(r['samples_per_s']):6.1f}  predicted "
              f"{preds}  it/s {r['it_s_at_10']} -> {r['it_s_at_100']}")
    print(f"\nratio to the {REFERENCE} (measured vs predicted):")
    for style in STYLES:
        for part, (m, p) in ratios(style).items():
            print(f"  {style:9s} {part:15s} measured {m:.3f} predicted {p:.3f} ({100 * (p / m - 1):+.1f}%)")


if __name__ == "__main__":
    main()
