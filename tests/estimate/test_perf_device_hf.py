"""Our own H200 measurements of the HF Trainer's eager step (benchmarks/perf_device_hf.py, the lead's device run of
2026-12-04; nothing fitted on them). Bounds = the figures when the rows were added, with a margin: a regression guard,
not an accuracy claim (docs/known-gaps.md 80)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import perf_device_hf as pdh  # noqa: E402
from harness import mape  # noqa: E402


@pytest.fixture(scope="module")
def run():
    return pdh.cases()


def test_every_row_is_a_measured_run_of_the_committed_script(run):
    _, rows = run
    measured = {d["run"]: d for d in map(json.loads, (pdh.PROFILE.parent / "hf.jsonl").read_text().splitlines())
                if "run" in d}
    assert len(rows) == 5
    for r in rows:
        m = measured[r["id"].removeprefix("h200dev_")]
        assert float(r["tokens_per_s"]) == pytest.approx(m["tokens_per_s"], abs=0.5)
        assert float(r["peak_mem"]) == pytest.approx(m["max_reserved_gib"], abs=0.005)
        assert int(r["micro_batch"]) == m["micro_batch"] and int(r["seq_len"]) == m["seq"]
        assert (r["recompute"] == "full") == m["gradient_checkpointing"]
        assert r["torch_compile"] == "false" and r["date"] == "2026-12-04" and r["assumed"]


def test_none_refused_and_within_the_bounds(run):
    cs, _ = run
    assert not [c for c in cs if c.skipped]
    t = [c for c in cs if c.metric == "tokens_s"]
    g = [c for c in cs if c.metric == "peak_gib"]
    assert len(t) == len(g) == 5
    assert mape(t) < 9.0  # 6.4 at landing: +4.7 / +12.8 / +2.2% (8B LoRA), +10.2% (1B full), +2.0% (3B full)
    assert max(abs(c.err) for c in t) < 0.16
    assert mape(g) < 4.5  # 2.5 at landing, worst 3B full +6.0% (8B LoRA without recompute +1.7%)


def test_the_breakdown_names_the_profile_of_each_profiled_run(run):
    _, rows = run
    from trainsizer.catalog import load_catalog

    parts = pdh.estimate_parts(rows[0], load_catalog())
    assert parts["lora"] > 0 and parts["layers"] > parts["lora"]
    assert parts["step"] == pytest.approx(parts["layers"] + parts["lora"] + parts["head"] + parts["rest"])
    # the rows state the kernel that ran (SDPA's cuDNN flash: native), whose time the profile measured within 10%
    prof = pdh._profiles()["l8b_lora_gc_mb4_s2048"]["by_kind_per_step_s"]["attention"]
    assert parts["attention"] == pytest.approx(prof, rel=0.1)
