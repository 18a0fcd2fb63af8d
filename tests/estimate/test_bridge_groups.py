"""NVLink bridges smaller than the host (8 PCIe H200 NVL in 4-way bridges, RTX A6000 / A5000 pairs): a process group
held in one bridge runs at the bridge's rate, a group that spans bridges at the host's PCIe (comm.bridge_rates,
scenario.build_system; docs/known-gaps.md 146)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.catalog import load_catalog
from trainsizer.estimate import comm
from trainsizer.estimate.calibration import load_constants, rates
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.scenario import build_system, resolve_job

K = load_constants()


def _system(part: str, gpus: int, per_node: int):
    return build_system(load_catalog().accelerator(part), gpus, per_node, None)


def test_eight_h200_nvl_carry_their_4_way_bridge_beside_the_host_pcie():
    s = _system("h200-nvl-141gb", 8, 8)
    assert (s.bridge_gpus, s.bridge_gb_s, s.bridge_mesh_links) == (4, 450.0, 3)
    assert s.intra_node_gb_s < 100 and s.scaleup_mesh_links == 0  # the host's ring crosses PCIe
    four = _system("h200-nvl-141gb", 4, 4)  # the bridge is the host: no second level
    assert four.bridge_gpus == 0 and four.intra_node_gb_s == 450.0 and four.scaleup_mesh_links == 3
    pairs = _system("rtx-a6000", 8, 8)
    assert (pairs.bridge_gpus, pairs.bridge_mesh_links) == (2, 0) and pairs.bridge_gb_s > pairs.intra_node_gb_s
    assert _system("l40s", 8, 8).bridge_gpus == 0  # no bridge: PCIe as before


def test_a_group_inside_one_bridge_takes_its_rate_one_that_spans_bridges_the_host():
    s = _system("h200-nvl-141gb", 8, 8)
    r = rates(s, "bf16", K)
    assert r.bridge_busbw == pytest.approx(450e9 * K.intra_busbw_fraction_mesh)
    tp4, dp2 = comm.bridge_rates(r, 4, 1, s), comm.bridge_rates(r, 2, 4, s)
    assert float(tp4.intra_busbw) == pytest.approx(r.bridge_busbw)  # all 3 peers' links
    assert float(dp2.intra_busbw) == r.intra_busbw  # ranks 0 and 4: across bridges, over PCIe
    pair, hop = comm.bridge_rates(r, 2, 1, s), comm.bridge_rates(r, 4, 1, s, p2p=True)
    assert float(pair.intra_busbw) == pytest.approx(r.bridge_busbw / 3)  # a pair owns one peer's 6 of 18 links
    assert float(hop.intra_busbw) == pytest.approx(r.bridge_busbw / 3)
    assert float(comm.bridge_rates(r, 8, 1, s).intra_busbw) == r.intra_busbw  # TP 8 crosses PCIe
    sxm = build_system(load_catalog().accelerator("h100-sxm-80gb"), 8, 8, None)
    r_sxm = rates(sxm, "bf16", K)
    assert comm.bridge_rates(r_sxm, 4, 1, sxm) is r_sxm  # no bridge: the rates unchanged


@settings(max_examples=40, deadline=None)
@given(size=hs.sampled_from([1, 2, 4, 8]), stride=hs.sampled_from([1, 2, 4, 8]),
       part=hs.sampled_from(["h200-nvl-141gb", "rtx-a6000", "h100-nvl-94gb"]))
def test_the_bridge_rate_goes_to_the_groups_one_bridge_holds_and_shrinking_keeps_it(size, stride, part):
    s = _system(part, 16, 8)
    r = rates(s, "bf16", K)
    got = float(comm.bridge_rates(r, size, stride, s).intra_busbw)
    inside = size * stride <= s.bridge_gpus
    assert (got != r.intra_busbw) == inside
    if inside and size > 1:  # a smaller group of the same stride sits in the bridge too, on no more of its links
        smaller = float(comm.bridge_rates(r, size // 2, stride, s).intra_busbw)
        assert smaller <= got or size // 2 == 1


def _lora(tp: int, cp: int = 1, part: str = "h200-nvl-141gb"):
    job = {"model": "llama-2-70b", "method": "lora", "seq_len": 8192, "data": {"samples": 1e4, "avg_tokens": 8192},
           "global_batch": {"sequences": 8}, "precision": "fp8",
           "hardware": {"accelerator": part, "count": 8},
           "strategy": {"tp": tp, "cp": cp, "micro_batch": 1, "framework": "megatron-core", "recompute": "none"}}
    return resolve_job(job, load_catalog())


def _terms(sc, system=None) -> dict[str, float]:
    out = step_time_arrays(sc.model, sc.training, system or sc.system, sc.strategy)
    return {k: float(np.asarray(out[k]).reshape(-1)[0]) for k in ("step_s", "tp_comm", "cp_comm", "dp_comm")}


def test_tp_and_cp_inside_the_bridge_are_faster_than_over_pcie_dp_across_bridges_is_not():
    """Fujitsu's and Dell's MLPerf v6.0 LoRA layouts (TP 4 x DP 2; TP 2 x CP 2 x DP 2) on 8 H200 NVL: the TP and
    CP groups sit in one 4-way bridge; the data-parallel pairs (ranks 4 apart) cross PCIe either way."""
    for tp, cp in ((4, 1), (2, 2)):
        sc = _lora(tp, cp)
        host_only = dataclasses.replace(sc.system, bridge_gpus=0, bridge_gb_s=0.0, bridge_mesh_links=0)
        bridged, pcie = _terms(sc), _terms(sc, host_only)
        assert bridged["tp_comm"] < 0.5 * pcie["tp_comm"]
        assert bridged["cp_comm"] <= pcie["cp_comm"]
        assert bridged["dp_comm"] == pytest.approx(pcie["dp_comm"])
        assert bridged["step_s"] < pcie["step_s"]
    tp8 = _lora(8)  # TP 8 spans both bridges: the host's PCIe, as before
    host_only = dataclasses.replace(tp8.system, bridge_gpus=0, bridge_gb_s=0.0, bridge_mesh_links=0)
    assert _terms(tp8)["tp_comm"] == pytest.approx(_terms(tp8, host_only)["tp_comm"])
