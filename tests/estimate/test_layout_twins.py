"""benchmarks/layout_twins.py: which held-out rows pair as the same job on another part (docs/known-gaps.md 287 (a))."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import accuracy_bands as ab  # noqa: E402
import layout_twins as lt  # noqa: E402


def _row(row_id: str, acc: str, count: int, err: float = 0.1, **strategy) -> ab.Row:
    st = {"tp": 1, "pp": 1, "cp": 1, "ep": 64, "micro_batch": 4, "moe_dispatcher": "alltoall"} | strategy
    job = {"model": "gpt-oss-120b", "precision": "bf16", "seq_len": 4096,
           "hardware": {"accelerator": acc, "count": count}, "strategy": st}
    return ab.Row("perf_x", row_id, "tokens_per_s_per_gpu", 1.0, 1.0 + err, job)


def test_a_twin_is_the_same_release_and_model_on_other_hardware():
    row = _row("mbridge_26.02_gb200_gpt_oss_120b_bf16_64gpu", "gb200", 64)
    same = _row("mbridge_26.02_b200_gpt_oss_120b_bf16_64gpu", "b200", 64)
    other_layout = _row("mbridge_26.02_h100_gpt_oss_120b_bf16_64gpu", "h100-sxm-80gb", 64, pp=4, micro_batch=1)
    other_release = _row("mbridge_26.04_b200_gpt_oss_120b_bf16_64gpu", "b200", 64)
    same_hardware = _row("mbridge_26.02_gb200_gpt_oss_120b_bf16_64gpu_again", "gb200", 64)
    found = lt.twins(row, [(r, "c") for r in (other_layout, same, other_release, same_hardware, row)])
    assert [(t.row_id, same_layout) for t, _, same_layout in found] == [
        (same.row_id, True), (other_layout.row_id, False)]


def test_a_layout_differs_in_any_degree_or_the_dispatcher():
    row = _row("mbridge_26.02_gb200_gpt_oss_120b_bf16_64gpu", "gb200", 64)
    for change in ({"ep": 8}, {"micro_batch": 2}, {"cp": 2}, {"moe_dispatcher": "flex"}):
        twin = _row("mbridge_26.02_b200_gpt_oss_120b_bf16_64gpu", "b200", 64, **change)
        assert [same for _, _, same in lt.twins(row, [(twin, "c")])] == [False]


def test_the_pair_delta_is_the_row_beyond_its_twin():
    assert lt.pair_delta(8.9, 7.6, 0.447, 0.155) == (8.9 - 7.6, 100.0 * (0.447 - 0.155))
    ms, pts = lt.pair_delta(1.0, 2.0, 0.1, 0.3)
    assert ms < 0 and pts < 0


def test_the_summary_groups_by_part_pair_and_ends_with_all():
    out = lt.summarise([("gb200", "b200", 1.0, 2.0), ("gb200", "b200", 3.0, 4.0), ("gb300", "b300", -1.0, -2.0)])
    assert out[0] == ("gb200 vs b200", 2, 2.0, 3.0)
    assert out[-1] == ("all", 3, 1.0, 2.0)
