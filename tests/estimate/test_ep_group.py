"""The group Megatron-Core's MoE all-to-all runs over (step_time._ep_group, reported as step_time_arrays' ep_domains):
the expert grid's rank order (tp = expert TP, cp = 1, tp-cp-ep-dp-pp at Megatron-LM 6a6cd478 parallel_state.py) puts
an EP group's ranks expert-TP apart, so the attention's TP does not spread it over hosts."""

from __future__ import annotations

import numpy as np
import pytest

from trainsizer.catalog import load_catalog
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.scenario import resolve_job


def _domains(tp: int, ep: int, etp: int = 1, dispatcher: str = "alltoall", count: int = 256) -> float:
    job = {"model": "qwen3-235b-a22b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 4096,
           "global_batch": {"sequences": 2048}, "precision": "bf16",
           "hardware": {"accelerator": "h800-sxm-80gb", "count": count, "network": "roce-400"},
           "strategy": {"tp": tp, "pp": 8, "ep": ep, "etp": etp, "micro_batch": 1, "framework": "megatron-core",
                        "moe_dispatcher": dispatcher}}
    sc = resolve_job(job, load_catalog())
    out = step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)
    return float(np.asarray(out["ep_domains"]).reshape(-1)[0])


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_attention_tp_does_not_spread_an_expert_tp_1_group(tp):
    assert _domains(tp, 8) == 1.0  # 8 neighbouring ranks: one 8-GPU host, whatever the attention's TP
    assert _domains(tp, 32) == 4.0  # 32 neighbouring ranks: four hosts


def test_expert_tp_spreads_the_ep_group_and_flex_sends_over_tp_x_ep():
    assert _domains(2, 8, etp=2) == 2.0  # EP ranks 2 apart: 16 ranks' span
    assert _domains(2, 4, etp=2, dispatcher="flex") == 1.0  # the TP x EP group of 8 neighbours
    assert _domains(2, 8, etp=2, dispatcher="flex") == 2.0


def test_a_dense_model_reports_no_ep_group():
    job = {"model": "llama-3.1-8b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 4096,
           "global_batch": {"sequences": 64}, "precision": "bf16",
           "hardware": {"accelerator": "h100-sxm-80gb", "count": 8},
           "strategy": {"tp": 2, "pp": 1, "framework": "megatron-core"}}
    sc = resolve_job(job, load_catalog())
    assert float(np.asarray(step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)["ep_domains"])) == 0.0
