"""hardware.fabric: an oversubscribed scale-out fabric (zones under full bisection, o:1 above them)."""

from __future__ import annotations

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError, TrainsizerError
from trainsizer.estimate import estimate_time
from trainsizer.scenario import resolve_job


def _moe(fabric=None) -> dict:
    hw = {"accelerator": "h100-sxm-80gb", "count": 256, "network": "ib-ndr400"}
    if fabric is not None:
        hw["fabric"] = fabric
    return {"model": "mixtral-8x7b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 4096,
            "global_batch": {"sequences": 512}, "hardware": hw,
            "strategy": {"tp": 1, "pp": 1, "ep": 8, "micro_batch": 1, "zero": 1, "distributed_optimizer": True,
                         "recompute": "full"}}


def _dense(count, fabric) -> dict:
    return {"model": "llama-3.1-8b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 8192,
            "global_batch": {"sequences": count}, "hardware": {"accelerator": "h100-sxm-80gb", "count": count,
                                                               "network": "ib-ndr400", "fabric": fabric},
            "strategy": {"tp": 8, "pp": 1, "micro_batch": 1, "zero": 1, "distributed_optimizer": True}}


def _step(job) -> float:
    sc = resolve_job(job, load_catalog())
    return estimate_time(sc.model, sc.training, sc.system, sc.strategy).step_s


def test_fabric_reaches_the_system_and_the_summary():
    sc = resolve_job(_moe({"oversubscription": 7, "zone_gpus": 64}), load_catalog())
    assert (sc.system.zone_gpus, sc.system.oversubscription) == (64, 7.0)
    assert sc.summary()["hardware"]["fabric"] == {"oversubscription": 7.0, "zone_gpus": 64}
    assert resolve_job(_moe(), load_catalog()).summary()["hardware"]["fabric"] is None


def test_all_to_all_across_zones_is_slower_on_an_oversubscribed_fabric():
    """EP 8 over 8 nodes (TP 1: one expert rank per node) in 16-GPU zones: 3/4 of the dispatch leaves the zone."""
    flat = _step(_moe())
    assert _step(_moe({"oversubscription": 1, "zone_gpus": 16})) == pytest.approx(flat)
    assert _step(_moe({"oversubscription": 4, "zone_gpus": 16})) > flat * 1.01
    assert _step(_moe({"oversubscription": 4, "zone_gpus": 256})) == pytest.approx(flat)  # one zone: no change


def test_rings_over_big_zones_keep_their_rate():
    """DP 32 (TP 8 fills a node): a zone of 64 GPUs holds 8 members of each ring, whose uplinks give the ring 8 / 7
    of a NIC, more than its one NIC per member; a one-node zone holds 1 member and runs the ring at NIC / 7."""
    assert _step(_dense(256, {"oversubscription": 7, "zone_gpus": 64})) == pytest.approx(
        _step(_dense(256, {"oversubscription": 1, "zone_gpus": 64})))
    assert _step(_dense(256, {"oversubscription": 7, "zone_gpus": 8})) > _step(
        _dense(256, {"oversubscription": 1, "zone_gpus": 8}))


def test_zone_must_hold_whole_hosts():
    with pytest.raises(SpecError, match="zone_gpus") as err:
        resolve_job(_moe({"oversubscription": 2, "zone_gpus": 12}), load_catalog())
    assert "8" in str(err.value)


@pytest.mark.parametrize("fabric", [{"oversubscription": 0.5, "zone_gpus": 64}, {"oversubscription": 2},
                                    {"oversubscription": 2, "zone_gpus": 0}, {"zone_gpus": 64, "ratio": 2}])
def test_bad_fabric_is_a_clear_error(fabric):
    with pytest.raises(TrainsizerError, match="fabric"):
        resolve_job(_moe(fabric), load_catalog())
