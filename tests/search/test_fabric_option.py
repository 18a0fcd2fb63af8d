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
