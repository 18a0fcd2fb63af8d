"""The host RAM a searched layout keeps (offloaded states, paged optimizer states) is carried from the search's own
memory verdicts (search.engine OptionResult.host_gib_per_node), the figure the plan prices, not estimated again."""

from __future__ import annotations

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.estimate.memory import GIB, estimate_memory
from trainsizer.scenario import resolve_job
from trainsizer.search import load_config, search_option
from trainsizer.search.candidates import HardwareOption

CAT = load_catalog()


@pytest.mark.parametrize("model, acc, count", [("qwen2.5-14b", "rtx-4090", 1), ("llama-3.1-8b", "h100-sxm-80gb", 8)])
def test_the_search_hands_on_the_host_ram_of_the_layout_it_chose(model, acc, count):
    job = {"model": model, "method": "full", "data": {"tokens": 1.0e8}, "seq_len": 2048,
           "global_batch": {"sequences": 16}, "hardware": {"accelerator": acc, "count": count}}
    sc = resolve_job(job, CAT)
    opt = HardwareOption(accelerator=sc.accelerator, server=None, per_node=count, count=count, network=None,
                         fabric=None)
    r = search_option(sc.model, sc.training, opt, load_config())
    assert r.strategy is not None
    again = estimate_memory(sc.model, sc.training, r.system, r.strategy, check=False).host_bytes_per_node / GIB
    assert r.host_gib_per_node == pytest.approx(again, rel=1e-9, abs=1e-9)
    assert (r.host_gib_per_node > 0) == (r.strategy.offload != "none")
