"""What every held-out benchmark row must carry, checked the same way for each batch (perf_heldout28 / 29 / 30)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def check_rows_sourced(rs: list[dict], header: list[str], models_path: Path, n: int, metrics: tuple[str, ...]) -> None:
    """Columns as heldout_pretrain.csv's, n distinct ids, and per row: source, locator (commit / PR), date,
    confidence, a positive value of an allowed metric, a model the benchmark can load."""
    assert list(rs[0]) == header  # heldout_pretrain.csv's columns: perf_heldout.job_of reads them
    assert len({r["id"] for r in rs}) == len(rs) == n
    models = yaml.safe_load(models_path.read_text(encoding="utf-8"))
    for r in rs:
        assert r["source"] and r["source_locator"] and r["assumed"], r["id"]
        assert re.search(r"\b(commit|PR) ", r["source_locator"]), r["id"]
        assert re.fullmatch(r"20\d\d-\d\d-\d\d", r["date"]), r["id"]
        assert r["confidence"] in ("high", "medium", "low"), r["id"]
        assert float(r["value"]) > 0 and r["metric"] in metrics, r["id"]
        assert r["model"] in models or (BENCH.parent / "src/trainsizer/models/presets" / f"{r['model']}.json").exists()
