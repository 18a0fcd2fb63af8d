"""benchmarks/hf_moe_residual.py (docs/known-gaps.md 273 (b), (c)): the listing's arithmetic (its engine label, the
dense twin's id, the least-squares line, the ScatterMoE rows' ms a layer) and the host what-if, which leaves the shipped
host figures as it found them and reproduces each row's error at 1x."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from trainsizer.catalog import load_catalog
from trainsizer.estimate.host_sync import host_figure

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import hf_moe_residual as hr  # noqa: E402


@dataclass
class _Row:
    """The fields of accuracy_bands.Row the what-if reads."""

    job: dict[str, Any]
    row_id: str = "r"


def _job(micro_batch: int) -> dict[str, Any]:
    return {"model": "mixtral-8x7b", "method": "lora", "lora": {"rank": 16, "targets": ["q_proj", "v_proj"]},
            "data": {"tokens": 1.0e9}, "seq_len": 1024, "global_batch": {"sequences": 2 * micro_batch},
            "precision": "bf16", "hardware": {"accelerator": "a100-sxm-80gb", "count": 2},
            "strategy": {"framework": "hf", "micro_batch": micro_batch, "recompute": "full", "fsdp": "full",
                         "experts_implementation": "eager"}}


def test_engine_labels_and_dense_twins():
    assert hr.engine({"strategy": {"fsdp": "full"}}) == "fsdp1"
    assert hr.engine({"strategy": {"fsdp": "full", "fsdp_version": 2}}) == "fsdp2"
    assert hr.engine({"strategy": {"zero": 3}}) == "zero3"
    assert hr.engine({"strategy": {}}) == "none"
    have = {"fmsacc25_mistral7b_lora_2gpu_mb2": 0, "dc_2025-04_h100_llama3-70b_fsdp_mbs1_s512_acc1": 0}
    assert hr.twin_of("fmsacc25_mixtral_lora_2gpu_mb2", have) == "fmsacc25_mistral7b_lora_2gpu_mb2"
    assert hr.twin_of("dc_2025-04_h100_mixtral-8x7b_fsdp_mbs1_s512_acc1", have) == (
        "dc_2025-04_h100_llama3-70b_fsdp_mbs1_s512_acc1")
    assert hr.twin_of("fmsmoe_v1_mixtral_none_8gpu", have) is None


def test_line_fit_recovers_a_line_and_flat_data():
    x = np.array([1.0, 2.0, 4.0, 8.0])
    a, b, r2 = hr.line_fit(x, 3.0 + 0.5 * x)
    assert (a, b, r2) == pytest.approx((3.0, 0.5, 1.0))
    assert hr.line_fit(np.ones(4), np.array([1.0, 2.0, 3.0, 4.0])) == (2.5, 0.0, 0.0)


def test_scattermoe_rows_are_the_runtime_over_100_steps_of_16_micro_batches_and_32_layers():
    rows = dict(hr.scattermoe_floor())
    assert rows["fmsmoe_v3_mixtral_moe-scattermoe-granite-ep8_8gpu"] == pytest.approx(810.9653e3 / (100 * 16 * 32))
    assert len(rows) == 2


def test_the_what_if_restores_the_host_figure_and_is_the_row_at_one_x():
    op = host_figure("launch_bound_op_s", "nvidia")
    rows = [(_Row(_job(1), "a"), {"err": 10.0}), (_Row(_job(4), "b"), {"err": -5.0})]
    out = hr.host_whatif(rows, load_catalog())
    assert host_figure("launch_bound_op_s", "nvidia") == op
    assert out["a"][0] == pytest.approx(10.0) and out["b"][0] == pytest.approx(-5.0)
    assert all(np.diff(es).max() <= 1e-9 for es in out.values())  # a slower host never makes a row faster
    assert out["a"][-1] < out["a"][0]  # the small micro-batch is host-bound enough to move
