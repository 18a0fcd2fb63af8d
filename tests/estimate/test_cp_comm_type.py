"""strategy.cp_comm_type: context-parallel K / V exchange as a hidden ring (p2p) or an exposed all-gather (Llama 3
paper s3.3.2; Transformer Engine AttnFuncWithCPAndKVAllGather)."""

from __future__ import annotations

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError
from trainsizer.estimate import comm
from trainsizer.estimate.calibration import load_constants, rates
from trainsizer.render.i18n import t
from trainsizer.scenario import resolve_job

JOB = {"model": "llama-3.1-70b", "data": {"tokens": 1e9}, "seq_len": 65536, "global_batch": {"sequences": 8},
       "hardware": {"accelerator": "h100-sxm-80gb", "count": 64, "network": "ib-ndr400"}}


def _cp(**strategy) -> tuple[dict, object]:
    from trainsizer.estimate.step_time import estimate_time

    sc = resolve_job({**JOB, "strategy": {"tp": 8, "cp": 8, "micro_batch": 1, "distributed_optimizer": True,
                                          "recompute": "selective", "framework": "megatron-core", **strategy}},
                     load_catalog())
    return estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False).breakdown_s, sc


def test_all_gather_exposes_three_gathers_per_layer_and_micro_batch():
    """Forward: K / V all-gathered (CP 8 across 8 nodes, TP 8 in each); backward: gathered again, dK / dV
    reduce-scattered -- all on the critical path, where the ring hides its exchanges behind the attention (and pays
    its per-step corrections, step_time._cp_te_ring)."""
    ring, _ = _cp()
    gathered, sc = _cp(cp_comm_type="all_gather")
    system, model = sc.system, sc.model
    tok, c, tp = 65536 / 8, 8, 8
    kv_bytes = tok * 2 * model.kv_dim / tp * 2 * c
    r = rates(system, "bf16", load_constants())
    ag = float(comm.all_gather_time(kv_bytes, c, comm.ranks_per_domain(c, tp, 8), r, system))
    micro_batches = 8  # global batch 8 over DP 1
    assert gathered["cp_comm"] == pytest.approx(3 * ag * model.layers * micro_batches, rel=1e-6)
    assert _cp(cp_comm_type="p2p")[0]["cp_comm"] == ring["cp_comm"]


def test_no_context_parallelism_no_cost():
    from trainsizer.estimate.step_time import estimate_time

    sc = resolve_job({**JOB, "seq_len": 8192, "global_batch": {"sequences": 64},
                      "strategy": {"tp": 8, "micro_batch": 1, "cp_comm_type": "all_gather"}}, load_catalog())
    assert estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False).breakdown_s[
        "cp_comm"] == 0.0


def test_unknown_cp_comm_type_is_a_clear_error_with_words_in_both_languages():
    with pytest.raises(SpecError, match="cp_comm_type"):
        resolve_job({**JOB, "strategy": {"cp": 8, "cp_comm_type": "ring"}}, load_catalog())
    assert t("field_strategy.cp_comm_type", "zh") != t("field_strategy.cp_comm_type", "en")
