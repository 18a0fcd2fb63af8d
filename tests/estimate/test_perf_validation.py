"""Validation targets of the performance estimator on published measurements (benchmarks/perf_*.py).

The bounds are what the estimator reaches today (see the benchmark output), with a small margin; a change
that makes any of them worse fails here. Known misses are stated, not hidden:
- MT-NLG (Smith et al. 2022, s2.4; confirmed by llm-analysis' reproduction) is predicted 7-11% too fast with
  the DeepSpeed PipelineEngine (blocking, TP-partitioned p2p, gradients reduced after the flush) and the bf16
  fp32 gradient accumulation modelled; the gap behaves like a per-step cost that no documented mechanism
  explains (perf_validation.py prints what was checked under the MT-NLG line).
- llm-foundry H100 3B on 512 GPUs is the worst row (-20.8%, FlashAttention-2); its 30B at s = 8192 on 8 GPUs was
  (+29.8%) until the rows stated the Triton attention they ran (+17.1%); their long rows now come out too slow
  (13B at 32K -15.2%, 7B at 64K -17.7%).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import perf_validation as pv  # noqa: E402
import perf_vtrain as pvt  # noqa: E402


@pytest.fixture(scope="module")
def throughput():
    return pv.summary(pv.throughput_cases())


def test_data_copied_next_to_benchmarks():
    for name in ("throughput.csv", "gpu_hours.csv", "vtrain_single_node.csv", "vtrain_LICENSE.txt"):
        assert (BENCH / "data" / name).is_file()


def test_throughput_mape_overall(throughput):
    assert throughput["rows"] >= 190
    assert throughput["mape"] <= 8.0  # reached: 6.4% (target 10%)


def test_throughput_mape_per_source(throughput):
    for source, (n, err) in throughput["by_source"].items():
        assert err <= 15.0, (source, n, err)
    assert throughput["by_source"]["MT-NLG"][1] <= 10.0  # reached: 9.0%
    assert throughput["by_source"]["BLOOM"][1] <= 4.5  # reached: 3.6%
    assert throughput["by_source"]["llm-foundry H100"][1] <= 10.0  # reached: 8.6% (issue #13's bound)
    assert throughput["by_source"]["llm-foundry A100"][1] <= 6.5  # reached: 5.4%


def test_throughput_worst_row(throughput):
    row, metric, measured, predicted, err = throughput["worst"]
    assert abs(err) <= 30.0, throughput["worst"]


def test_gpu_hours():
    cases = pv.gpu_hours_cases()
    assert pv.mape(cases) <= 9.5  # reached: 8.5%
    assert all(abs(c.err) <= 0.25 for c in cases if not c.skipped)  # worst: LLaMA 1 13B +22.5% (UNSURE row)


def test_vtrain_ranking_and_error():
    r = pvt.evaluate()
    assert r["rows"] == 1440
    assert r["mape"] <= 9.0  # reached: 7.6%
    assert r["spearman_min"] >= 0.95  # reached: 0.976 (target 0.9)
    assert r["top1_hits"] / r["top1_groups"] >= 0.68  # reached: 103/144 groups within 2% of the best
    # issue target: per model, the layout predicted best is within 2% of the measured best (by throughput and
    # by GPU-time per sequence, the two ways the search ranks)
    assert r["search_regret_pct"]["throughput"] <= 2.0  # reached: 0.0%
    assert r["search_regret_pct"]["cost"] <= 2.0  # reached: 0.2%


def test_spearman_matches_definition():
    import numpy as np

    x = np.array([1.0, 2.0, 3.0, 4.0])
    assert pvt.spearman(x, x**3) == pytest.approx(1.0)
    assert pvt.spearman(x, -x) == pytest.approx(-1.0)
    assert pvt.spearman(np.array([1.0, 1.0, 2.0]), np.array([1.0, 2.0, 3.0])) == pytest.approx(0.866, abs=1e-3)


def test_measured_runs_are_predicted_to_fit():
    """Every run with a stated layout trained on real hardware, so none is refused (Narayanan 2021 Table 2's ZeRO-3
    529.6B on 640 A100 was, at 101 GiB, before DeepSpeed ZeRO-3's per-module gathering was modelled)."""
    cases = pv.throughput_cases()
    refused = {f.row_id for f in pv.fits(cases) if not f.fits}
    assert not refused, refused
