"""step_time_arrays' `host_excess`: the part of the step's compute that is the host's excess over the GPU (the
per-layer host floor, Megatron-Core's dropless MoE sync and the expert launches it exposes), a diagnostic the class
listings read (benchmarks/accuracy_bands.py --rows, docs/known-gaps.md 194); it is inside `compute`, so it never
changes the step."""

from __future__ import annotations

import numpy as np
import pytest

from trainsizer.catalog import load_catalog
from trainsizer.estimate.step_time import BREAKDOWN_KEYS, step_time_arrays
from trainsizer.scenario import resolve_job

CAT = load_catalog()


def _job(**strategy) -> dict:
    st = {"tp": 1, "pp": 2, "ep": 8, "micro_batch": 1, "framework": "megatron-core", "moe_dispatcher": "alltoall",
          "cuda_graphs": "none", "moe_a2a_overlap": False} | strategy
    return {"model": "qwen3-30b-a3b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 4096,
            "global_batch": {"sequences": 64}, "precision": "bf16",
            "hardware": {"accelerator": "b200", "count": 16, "network": "ib-ndr400"}, "strategy": st}


def _out(job: dict) -> dict:
    sc = resolve_job(job, CAT)
    out = step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)
    return {k: float(np.ravel(v)[0]) for k, v in out.items()}


def test_a_dropless_moe_layer_shows_a_host_excess_inside_its_compute():
    out = _out(_job())
    assert 0.0 < out["host_excess"] < out["compute"]
    # a diagnostic, not a breakdown term: the terms still add up to the step without it
    assert "host_excess" not in BREAKDOWN_KEYS
    assert sum(out[k] for k in BREAKDOWN_KEYS) == pytest.approx(out["step_s"], rel=1e-9)


def test_padded_token_drop_waits_for_no_count_so_less_of_the_host_shows():
    dropless, padded = _out(_job()), _out(_job(moe_pad_to_capacity=True))
    assert padded["host_excess"] < dropless["host_excess"]
    # what the host excess loses is what the compute loses: the GPU side is the same
    assert dropless["compute"] - padded["compute"] == pytest.approx(
        dropless["host_excess"] - padded["host_excess"], rel=1e-6)


def test_more_local_experts_issue_more_launches_behind_the_sync():
    ep8, ep16 = _out(_job()), _out(_job(ep=16, pp=1))
    per_layer_mb = {k: o["host_excess"] / (o["micro_batches"] * 48 / p) for (k, o, p) in
                    (("ep8", ep8, 2), ("ep16", ep16, 1))}
    assert per_layer_mb["ep8"] > per_layer_mb["ep16"]
