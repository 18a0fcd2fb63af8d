"""The Megatron-Bridge cards' H100 rows without CUDA graphs (fine-tuning: perf_heldout72; pre-training: perf_heldout60)
against the estimate's own counted layer with no overlap at all: per decoder layer a stage holds and micro-batch a
rank runs, the measured step, the predicted one, the layer's
GPU time and counted host time (step_time._host_excess's two sides: the dense floor, adapters, recompute, the MoE
layer's router / dispatcher calls, the THD RoPE loop's backward, ...) and the serial bound, the predicted step with
the soft maximum of GPU and host replaced by their sum (no host run-ahead anywhere, every counted call exposed).

A row measured above its serial bound misses a cost the estimate does not count, whatever the overlap model: no
reordering of counted work reaches it. Diagnostic only (docs/known-gaps.md 343 (b)); the estimate is not changed.
Run: python benchmarks/moe_serial_bound.py
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from typing import Any
from unittest import mock

import numpy as np

import perf_heldout60 as h60
import perf_heldout72 as h72
from trainsizer.estimate import step_time as st
from trainsizer.models import load_model


@dataclass(frozen=True)
class Bound:
    row_id: str
    ep: int
    measured_ms: float  # a decoder layer and micro-batch, measured step over micro-batches x the stage's layers
    predicted_ms: float
    gpu_ms: float  # the layer's GPU time inside _host_excess's blend
    host_ms: float  # the layer's counted host time inside the blend
    serial_ms: float  # the predicted step with the blend's soft maximum replaced by gpu + host

    @property
    def beyond_ms(self) -> float:
        """measured less the serial bound: > 0 is what no overlap model of the counted work reaches"""
        return self.measured_ms - self.serial_ms


def _first(v) -> float:
    return float(np.asarray(v, float).reshape(-1)[0])


def _blend_parts(x, lt, tp_per_layer) -> tuple[float, float, float]:
    """(gpu, host, soft maximum) of _host_excess's blend, s a layer and micro-batch, as step_time computes them."""
    gpu = lt.fwd + lt.bwd + tp_per_layer + st._lora_adapters(x) + st._nf4_dequant_time(x)
    unfused_host, _ = st._moe_unfused_host(x)
    host = (st._eager_layer_host_s(x) + st._adapter_host_s(x) + unfused_host + st._padded_expert_host_s(x)
            + st._recompute_host_s(x) + st._moe_layer_host_s(x) + st._megatron_fsdp_host_s(x)
            + st._dtensor_tp_host_s(x) + st._thd_rope_backward_host_s(x))
    q = x.k.host_gpu_blend_norm
    g, h = _first(gpu), _first(host)
    return g, h, (g**q + h**q) ** (1.0 / q)


def _rows(batch: str) -> list[dict[str, str]]:
    """The batch's rows the bound is taken on: perf_heldout72's scored rows; perf_heldout60's H100 rows that run no
    CUDA graph (a graph replays the host work, which the count then leaves out)."""
    if batch == "perf_heldout72":
        return [r for c, res, r in h72.run_all() if not c.skipped and res]
    with open(h60.ROWS, newline="", encoding="utf-8") as fh:
        return [r for r in csv.DictReader(fh) if r["accelerator"].startswith("h100") and
                "cuda_graphs=none" in r["strategy_extra"]]


def _bound(est: Any, r: dict[str, str]) -> Bound:
    """One row's Bound, its layer's blend seen by a spy on step_time._host_excess that changes nothing."""
    seen: dict[str, float] = {}
    real = st._host_excess

    def spy(x, lt, tp_per_layer):
        seen["gpu"], seen["host"], seen["blend"] = _blend_parts(x, lt, tp_per_layer)
        return real(x, lt, tp_per_layer)

    with mock.patch.object(st, "_host_excess", spy):
        c, res, _ = est.estimate([r])[0]
    pred_step = float(res["time"]["step_s"])
    rate = c.metric != "step_time_s"  # a rate (tokens/s): the measured step is the predicted one over the ratio
    meas_step = pred_step * c.predicted / c.measured if rate else c.measured
    per = float(res["time"]["micro_batches"]) * load_model(r["model"]).layers / int(r["pp"] or 1)
    pred = pred_step / per
    serial = pred + seen["gpu"] + seen["host"] - seen["blend"]
    return Bound(c.row_id, int(r["ep"] or 1), 1e3 * meas_step / per, 1e3 * pred, 1e3 * seen["gpu"],
                 1e3 * seen["host"], 1e3 * serial)


def bounds(batch: str = "perf_heldout72") -> list[Bound]:
    """Every row's Bound of `batch` (perf_heldout72 or perf_heldout60), in the benchmark's order."""
    est = h72.BATCH if batch == "perf_heldout72" else h60.BATCH
    return [_bound(est, r) for r in _rows(batch)]


def main() -> None:
    for batch in ("perf_heldout72", "perf_heldout60"):
        print(f"{batch}, a decoder layer and micro-batch (ms): measured, predicted, the layer's GPU and counted host "
              "time, the serial bound (gpu + host, no run-ahead) and measured beyond it:")
        print(f"  {'row':54s} {'EP':>3s} {'meas':>6s} {'pred':>6s} {'gpu':>6s} {'host':>6s} {'serial':>7s} {'beyond':>7s}")
        for b in bounds(batch):
            print(f"  {b.row_id:54s} {b.ep:3d} {b.measured_ms:6.2f} {b.predicted_ms:6.2f} {b.gpu_ms:6.2f} "
                  f"{b.host_ms:6.2f} {b.serial_ms:7.2f} {b.beyond_ms:+7.2f}")


if __name__ == "__main__":
    main()
