"""PyTorch SDPA's cuDNN and FlashAttention-2 backends timed on one job, as the estimator times them
(docs/known-gaps.md 205). A diagnostic: nothing is fitted into the estimator and no constant is read from it.

Two published pairs hold everything but the attention kernel fixed:
- NVIDIA's Llama-3.2-1B training benchmark (NVIDIA/cudnn-frontend 06ddf804b, 2025-05-22,
  benchmark/Llama-3.2-1B-Training: training_perf.py and artifacts/{b200,h200}_training_timing.csv; data
  benchmarks/data/sdpa_backends_e2e.csv): transformers' LlamaForCausalLM randomly initialised in bf16 on one GPU,
  inputs_embeds with an all-ones mask (transformers' _ignore_causal_mask_sdpa: SDPA is_causal), CrossEntropyLoss on
  the bf16 logits, torch.optim.SGD, the mean of 100 iterations of forward + backward + step under
  sdpa_kernel([backend]) for CUDNN_ATTENTION, EFFICIENT_ATTENTION and FLASH_ATTENTION at six batch x length shapes
  (12,288-18,432 tokens); torch 2.7.0a0 (NGC pytorch:25.04), cuDNN 9.9.0. Head dim 64 (32 q / 8 kv heads). The B200
  ran at its free clock (the run log's clock lock was refused) and 1,000 W; the H200's README says 1,500 MHz locked.
- torchtitan PR 1196 (2025-05-14, "Use cudnn backend on B200"): its before / after log lines on B200, Llama 3 8B's
  default llama3_8b.toml (FSDP, 1 x 8,192, per-op SAC, eager; head dim 128): FlashAttention-2 (kept by the SAC save
  list) 10,902 tokens/s a GPU, cuDNN (not kept: re-run in the backward, known-gaps 116 (a)) 12,211; power not stated.

Printed: each row's predicted / measured time (cuDNN as attention_kernel native, FLASH as sdpa, i.e. FA2's figures;
EFFICIENT has no kernel option and is printed as measured), and per part and backend the least-squares split
measured = a x (predicted time without attention) + b x (predicted attention time) over the six shapes: b is the
measured attention time over the modelled one. The FA2 - cuDNN time difference at each shape, measured and modelled,
needs no split: everything else in the step is the same job.

Run: python benchmarks/sdpa_backend_pairs.py
"""

from __future__ import annotations

import csv
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from torchao_b200_shared import scaled
from trainsizer.catalog import load_catalog
from trainsizer.estimate.step_time import estimate_time
from trainsizer.scenario import resolve_job

DATA = Path(__file__).resolve().parent / "data"
ROWS = DATA / "sdpa_backends_e2e.csv"
# meta-llama/Llama-3.2-1B config.json (finetune_heldout.MODELS' entry; head dim 2,048 / 32 = 64)
MODEL = {"name": "llama-3.2-1b", "layers": 16, "hidden": 2048, "ffn": 8192, "heads": 32, "kv_heads": 8,
         "vocab": 128256, "tied_embeddings": True, "mlp": "swiglu", "norm": "rmsnorm", "position": "rope"}
KERNELS = {"CUDNN_ATTENTION": "native", "FLASH_ATTENTION": "sdpa"}  # EFFICIENT_ATTENTION: no kernel option
NO_ATTENTION = 1e6  # attention rates times this: the step without its attention
PR1196_TPS = {"fa2": 10902.0, "cudnn": 12211.0}  # torchtitan PR 1196's step-70 log lines, tokens/s a GPU
PR1196_OVERLAYS = {"750 W": "b200_750w_overlay.yaml", "1,000 W": ""}


def rows() -> list[dict[str, str]]:
    return list(csv.DictReader(ROWS.open(encoding="utf-8")))


@cache
def catalog(overlay: str = "") -> Any:
    return load_catalog([DATA / overlay] if overlay else [])


def llama_job(gpu: str, batch: int, seq_len: int, kernel: str) -> dict[str, Any]:
    """training_perf.py's loop as a job: one GPU, no recompute, SGD, the bf16 logits' loss, is_causal SDPA."""
    return {"model": MODEL, "data": {"tokens": 1e9}, "seq_len": seq_len, "global_batch": {"sequences": batch},
            "precision": "bf16", "optimizer": "sgd", "explicit_attention_mask": False,
            "hardware": {"accelerator": gpu, "count": 1, "network": "ib-ndr400"},
            "strategy": {"micro_batch": batch, "recompute": "none", "framework": "hf", "attention_kernel": kernel,
                         "loss_impl": "native"}}


def titan_job(kernel: str) -> dict[str, Any]:
    """PR 1196's run: Llama 3 8B on 8 B200, FSDP, 1 x 8,192, per-op SAC, eager; FA2 kept by the save list, cuDNN not."""
    strategy = {"attention_kernel": "fa2", "sac_saves_attention": True} if kernel == "fa2" else \
        {"sac_saves_attention": False}
    return {"model": "llama-3.1-8b", "data": {"tokens": 1e9}, "seq_len": 8192, "global_batch": {"sequences": 8},
            "precision": "bf16", "hardware": {"accelerator": "b200", "count": 8, "network": "ib-ndr400"},
            "strategy": {"micro_batch": 1, "recompute": "selective", "framework": "torchtitan", "fsdp": "full",
                         "torch_compile": False, **strategy}}


def step_s(job: dict[str, Any], overlay: str = "", attention: bool = True) -> float:
    """The estimate's step time; without its attention (rates x NO_ATTENTION) where `attention` is false."""
    sc = resolve_job(job, catalog(overlay))
    with scaled(() if attention else ("flash_flops",), (), NO_ATTENTION):
        return float(estimate_time(sc.model, sc.training, sc.system, sc.strategy).step_s)


def split(other: list[float], attn: list[float], measured: list[float]) -> tuple[float, float]:
    """(a, b) of the least-squares fit measured = a x other + b x attn."""
    (a, b), *_ = np.linalg.lstsq(np.array([other, attn]).T, np.array(measured), rcond=None)
    return float(a), float(b)


def shapes(rs: list[dict[str, str]], gpu: str) -> list[tuple[int, int]]:
    return sorted({(int(r["batch"]), int(r["seq_len"])) for r in rs if r["gpu"] == gpu}, key=lambda s: s[1])


def measured(rs: list[dict[str, str]], gpu: str, backend: str, shape: tuple[int, int]) -> float:
    return next(float(r["time_s"]) for r in rs if r["gpu"] == gpu and r["backend"] == backend
                and (int(r["batch"]), int(r["seq_len"])) == shape)


def part_table(rs: list[dict[str, str]], gpu: str) -> dict[str, dict[str, list[float]]]:
    """{backend: {"measured", "predicted", "other"}} over the part's shapes (shortest first)."""
    out: dict[str, dict[str, list[float]]] = {}
    for backend, kernel in KERNELS.items():
        t = out.setdefault(backend, {"measured": [], "predicted": [], "other": []})
        for bs, sl in shapes(rs, gpu):
            job = llama_job(gpu, bs, sl, kernel)
            t["measured"].append(measured(rs, gpu, backend, (bs, sl)))
            t["predicted"].append(step_s(job))
            t["other"].append(step_s(job, attention=False))
    return out


def print_part(rs: list[dict[str, str]], gpu: str) -> None:
    t = part_table(rs, gpu)
    cud, fl = t["CUDNN_ATTENTION"], t["FLASH_ATTENTION"]
    print(f"{gpu}: seconds an iteration (predicted / measured - 1); FA2 - cuDNN in ms; EFFICIENT measured only")
    for i, (bs, sl) in enumerate(shapes(rs, gpu)):
        eff = measured(rs, gpu, "EFFICIENT_ATTENTION", (bs, sl))
        print(f"  bs {bs:2d} x {sl:6,d}  cuDNN {cud['measured'][i]:.3f} ({cud['predicted'][i] / cud['measured'][i] - 1:+6.1%})"
              f"  FA2 {fl['measured'][i]:.3f} ({fl['predicted'][i] / fl['measured'][i] - 1:+6.1%})  efficient {eff:.3f}"
              f"  FA2 - cuDNN {1e3 * (fl['measured'][i] - cud['measured'][i]):4.0f} measured, "
              f"{1e3 * (fl['predicted'][i] - cud['predicted'][i]):4.0f} modelled")
    for backend, v in t.items():
        attn = [p - o for p, o in zip(v["predicted"], v["other"], strict=True)]
        a, b = split(v["other"], attn, v["measured"])
        print(f"  {backend:16s} split: a {a:.3f} (the rest of the step), b {b:.3f} (its attention); modelled "
              f"attention ms " + " ".join(f"{1e3 * x:.0f}" for x in attn))


def print_pr1196() -> None:
    print("torchtitan PR 1196 on B200 (Llama 3 8B, eager, per-op SAC): tokens/s a GPU, FA2 kept -> cuDNN re-run")
    gain = PR1196_TPS["cudnn"] / PR1196_TPS["fa2"]
    print(f"  measured      FA2 {PR1196_TPS['fa2']:8,.0f}  cuDNN {PR1196_TPS['cudnn']:8,.0f}  gain {gain:.3f}  "
          f"FA2 - cuDNN {1e3 * 8192 * (1 / PR1196_TPS['fa2'] - 1 / PR1196_TPS['cudnn']):.0f} ms a step")
    for label, overlay in PR1196_OVERLAYS.items():
        fa2, cud = (8192.0 / step_s(titan_job(k), overlay) for k in ("fa2", "cudnn"))
        print(f"  at {label:8s} FA2 {fa2:8,.0f}  cuDNN {cud:8,.0f}  gain {cud / fa2:.3f}  "
              f"FA2 - cuDNN {1e3 * 8192 * (1 / fa2 - 1 / cud):.0f} ms a step")


def main() -> None:
    rs = rows()
    for gpu in sorted({r["gpu"] for r in rs}):
        print_part(rs, gpu)
    print_pr1196()


if __name__ == "__main__":
    main()
