"""benchmarks/dtensor_tp_lora_host.py and step_time._dtensor_tp_host_s: the DTensor ops a TP-sharded (LoRA) linear runs
a pass, counted, and their host charge on perf_heldout75's AutoModel rows (docs/known-gaps.md 313 (a))."""

from __future__ import annotations

import pytest

import dtensor_tp_lora_host as dt
from trainsizer.estimate import step_time

LLAMA = ("am_2025-11_h100_llama3.3-70b_lora_tp2pp4vp10_8gpu", "am_2026-01_h100_llama3.3-70b_lora_tp2pp4vp10_8gpu",
         "am_2025-12_h100_llama3.3-70b_lora_tp2pp4vp10dp2_16gpu", "am_2026-01_h100_llama3.3-70b_lora_tp2pp4vp10dp2_16gpu")


@pytest.fixture(scope="module")
def runs() -> dict[str, dict[str, float]]:
    variants = {"none": (False, False), "estimate": (True, False), "collectives": (True, True)}
    return {name: {row_id: pred / meas - 1.0 for row_id, meas, pred in dt.rows_under(d, c)}
            for name, (d, c) in variants.items()}


def test_the_variants_are_restored():
    assert step_time._dtensor_tp_host_s.__name__ == "_dtensor_tp_host_s"
    assert step_time._lora_adapters.__name__ == "_lora_adapters"


def test_the_charge_reaches_the_tp2_rows_only(runs):
    for row_id in runs["none"]:
        if row_id in LLAMA:  # TP 2, eager: host-bound under 27 ms of DTensor dispatch a layer and micro-batch
            assert runs["estimate"][row_id] < runs["none"][row_id] - 0.1
            assert abs(runs["estimate"][row_id]) < 0.1
        else:  # TP 1: no DTensor TP
            assert runs["estimate"][row_id] == pytest.approx(runs["none"][row_id])


def test_the_adapters_collectives_are_small_beside_the_dispatch(runs):
    # latency-bound all-gathers of tokens x rank: under a point a row (313 (a)), not charged
    for row_id in LLAMA:
        assert runs["estimate"][row_id] - 0.01 < runs["collectives"][row_id] <= runs["estimate"][row_id]


def test_the_count_on_two_gloo_ranks_is_the_stated_one():
    pytest.importorskip("torch")
    ops = dt.count("lora", port=29581)
    assert (ops["forward"][0], ops["backward"][0]) == (dt.OPS["lora"]["forward"], dt.OPS["lora"]["backward"])
    # the base's all-reduce is half a collective a linear (one a column- / row-parallel pair)
    assert (ops["forward"][1] - 0.5, ops["backward"][1] - 0.5) == tuple(dt.ADAPTER_COLLECTIVES.values())


def test_the_timed_ops_are_the_counted_ones():
    # --time (314 (a)) times each op with a DTensor argument once a pass: the ops the estimate counts, no more
    pytest.importorskip("torch")
    found = dt.time_ops(port=29591, passes=2)
    lora = dt.OPS["lora"]
    assert len(found["DTensor"]) == 2 * 4 * (lora["forward"] + lora["backward"])
    assert found["plain"] and min(found["DTensor"]) > 0.0
