"""The job's hardware.fabric reaches the systems the search estimates on (the same fact the scenario resolved)."""

from __future__ import annotations

from trainsizer.catalog import load_catalog
from trainsizer.default_strategy import with_default_strategy
from trainsizer.scenario import resolve_job
from trainsizer.search.candidates import HardwareOption
from trainsizer.search.engine import option_system
from trainsizer.spec import FabricSpec

JOB = {"model": "llama-3.1-8b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 4096,
       "global_batch": {"sequences": 64},
       "hardware": {"accelerator": "h100-sxm-80gb", "count": 64, "per_node": 8, "network": "ib-ndr400",
                    "fabric": {"oversubscription": 3, "zone_gpus": 16}}}


def test_option_system_takes_the_fabric():
    cat = load_catalog()
    sc = resolve_job(JOB, cat)
    plain = HardwareOption(sc.accelerator, None, 8, 64, sc.network)
    zoned = HardwareOption(sc.accelerator, None, 8, 64, sc.network, FabricSpec(oversubscription=3, zone_gpus=16))
    assert (option_system(plain).zone_gpus, option_system(plain).oversubscription) == (0, 1.0)
    assert (option_system(zoned).zone_gpus, option_system(zoned).oversubscription) == (16, 3.0)


def test_default_strategy_searches_on_the_jobs_fabric(monkeypatch):
    import trainsizer.search.engine as engine

    seen = []
    real = engine.search_option

    def spy(model, training, option, *args, **kwargs):
        seen.append(option_system(option))
        return real(model, training, option, *args, **kwargs)

    monkeypatch.setattr(engine, "search_option", spy)
    sc = with_default_strategy(resolve_job(JOB, load_catalog()))
    assert sc.strategy is not None and seen
    assert all((s.zone_gpus, s.oversubscription) == (16, 3.0) for s in seen)


def test_option_system_holds_a_node_to_its_share_of_the_servers_ram():
    """An NVL72 record's RAM is the rack's: a 4-GPU tray node has 1/18 of it (the offload fit check reads it); a
    PCIe card in part of a bigger box has none of that box's (the plan prices the card without it)."""
    from types import SimpleNamespace

    from trainsizer.scenario import server_ram_per_node

    cat = load_catalog()
    gb200, rack = cat.accelerator("gb200"), cat.server("gb200-nvl72")
    assert option_system(HardwareOption(gb200, rack, 4, 8, None)).host_ram_gib == rack.ram_gib * 4 / 72 == 960
    dgx = cat.server("dgx-h100")
    h100 = cat.accelerator("h100-sxm-80gb")
    assert option_system(HardwareOption(h100, dgx, 8, 8, None)).host_ram_gib == dgx.ram_gib
    box = SimpleNamespace(gpus=8, ram_gib=512.0)
    l40s = cat.accelerator("l40s")
    assert server_ram_per_node(l40s, box, 2) is None and server_ram_per_node(l40s, box, 8) == 512.0
