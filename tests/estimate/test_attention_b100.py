"""B100 runs B200's attention kernels at a lower clock: its attention figures are B200's shares of its own peak in every
attention table of perf_constants.yaml that lists b200, but the grid (docs/known-gaps.md 205 (c))."""

from __future__ import annotations

from typing import Any

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.step_time import estimate_time
from trainsizer.scenario import resolve_job


def _tables(node: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], dict]]:
    """Every mapping under the attention section that has a b200 key, with its path."""
    if not isinstance(node, dict):
        return []
    found = [(path, node)] if "b200" in node else []
    for key, child in node.items():
        found += _tables(child, (*path, str(key)))
    return found


def test_every_attention_table_with_b200_gives_b100_the_same_figure_but_the_grid():
    tables = _tables(load_constants().raw["attention"])
    assert len(tables) >= 12
    for path, table in tables:
        if path == ("grid",):
            assert "b100" not in table  # B100's SM count is not published
            continue
        assert table.get("b100") == table["b200"], path


@pytest.mark.parametrize("kernel", ["fa2", "native", "sdpa", "flex"])
def test_b100_takes_b200s_share_of_its_own_peak(kernel):
    k = load_constants()
    assert k.flash_fraction("b100", kernel) == k.flash_fraction("b200", kernel)


def test_flashattention_2_on_b100_is_no_longer_the_default_share():
    """Before 205 (c) B100 took flash_efficiency's default 0.35 (2.4x B200's measured sm80 rate as a share) and its
    native attention fell back to it."""
    k = load_constants()
    assert k.flash_fraction("b100", "fa2") < 0.5 * k.raw["attention"]["flash_efficiency"]["default"]
    assert k.flash_fraction("b100", "native") > k.flash_fraction("b100", "fa2")


def _attention_bound_step_s(accelerator: str) -> float:
    job = {"model": "llama-3.1-8b", "data": {"tokens": 1e9}, "seq_len": 65536, "global_batch": {"sequences": 8},
           "precision": "bf16", "hardware": {"accelerator": accelerator, "count": 8, "network": "ib-ndr400"},
           "strategy": {"micro_batch": 1, "cp": 8, "recompute": "full", "framework": "megatron-core"}}
    sc = resolve_job(job, load_catalog())
    return float(estimate_time(sc.model, sc.training, sc.system, sc.strategy).step_s)


def test_a_b100_step_is_slower_than_b200s_by_no_more_than_the_peaks():
    b100, b200 = _attention_bound_step_s("b100"), _attention_bound_step_s("b200")
    assert b200 < b100 <= b200 * 2250 / 1750 * 1.05
