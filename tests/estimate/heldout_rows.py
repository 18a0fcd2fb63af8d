"""What every held-out benchmark row must carry and how each batch's run is judged, checked the same way for each batch
(perf_heldout28 / 29 / 30 / 31; the columns and ids and the module-scoped run of every batch: docs/known-gaps.md
249 (b); each source's count and MAPE bound: 257 (a))."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
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


def check_run(run: list, bounds: dict[str, float], unfit: frozenset[str] = frozenset()) -> None:
    """No row refused; the runs said not to fit are exactly `unfit` (every run was made); each source's time MAPE
    within its bound (perf_heldout28.by_source groups, harness.mape)."""
    import perf_heldout28 as p28
    from harness import mape

    assert not [(c.row_id, c.skipped) for c, _, _ in run if c.skipped]
    assert {c.row_id for c, res, _ in run if not res["memory"]["fits"]} == set(unfit)
    groups = p28.by_source([c for c, _, _ in run])
    assert set(groups) == set(bounds)
    for source, bound in bounds.items():
        assert mape(groups[source]) <= bound, (source, mape(groups[source]))


def check_source_bounds(cases: list, bounds: dict[tuple[str, str], tuple[int, float]]) -> None:
    """For each (source, metric) of `bounds`: the source's scored cases of that metric (harness.scored: estimated, not
    refused) are exactly n, and their MAPE is under the bound (docs/known-gaps.md 257 (a))."""
    from harness import mape, scored

    for (source, metric), (n, bound) in bounds.items():
        got = [c for c in scored(cases, metric) if c.source == source]
        assert len(got) == n, (source, metric)
        assert mape(got) < bound, (source, metric, mape(got))


def check_columns_and_ids(rs: list[dict], header_csv: Path, n: int, more: bool = False) -> None:
    """The rows carry `header_csv`'s columns, the ones its job builder reads (perf_heldout.job_of: its ROWS;
    finetune_heldout.job: its DATA), in order and no other unless `more` (a batch's own columns after them), and n
    distinct ids."""
    header = header_csv.open(encoding="utf-8").readline().strip().split(",")
    assert (list(rs[0])[: len(header)] if more else list(rs[0])) == header
    assert len({r["id"] for r in rs}) == len(rs) == n


def check_rows_cited(rs: list[dict], n: int, urls: str | tuple[str, ...], date: str,
                     refused: tuple[str, ...] = ()) -> None:
    """A fine-tuning batch's rows (finetune_heldout.job reads them): finetune_heldout.DATA's columns and the
    batch's own after them, n distinct ids, and per row: a url under one of `urls` at a full commit (not a
    branch), a locator, a date `date` matches in full (a regular expression), what was assumed; the refused
    rows exactly `refused`, in order."""
    import finetune_heldout as fh

    check_columns_and_ids(rs, fh.DATA, n, more=True)
    for r in rs:
        assert r["url"].startswith(urls), r["id"]
        assert len(r["url"].split("/blob/")[1].split("/")[0]) == 40, r["id"]  # a full commit, not a branch
        assert r["locator"] and re.fullmatch(date, r["date"]) and r["assumed"], r["id"]
    assert [r["id"] for r in rs if r["refused"]] == list(refused)


def script_stdout(name: str) -> str:
    """What benchmarks/`name`.py prints, run as a user runs it (its own process, from benchmarks/); a failing
    run raises."""
    return subprocess.run([sys.executable, str(BENCH / f"{name}.py")], capture_output=True, text=True,
                          check=True, cwd=BENCH).stdout


def check_card_rows(rs: list[dict], n: int, natural: tuple[str, ...]) -> None:
    """Megatron-Bridge model-verification-card rows (perf_heldout60 / 63 / 65): perf_heldout.ROWS's columns
    (its job_of reads them), n distinct ids, each from a card read at the bridge commit 067f987df, dated 2026,
    its recipe assumed; the rows trained with the router's own routing (NATURAL in what was assumed) exactly
    `natural`."""
    import perf_heldout as ph

    cards = "NVIDIA-NeMo/Megatron-Bridge examples/model_verification_cards/"
    check_columns_and_ids(rs, ph.ROWS, n)
    for r in rs:
        assert r["source"].startswith(cards), r["id"]
        assert "bridge_commit" in r["source_locator"] and "067f987df" in r["source_locator"], r["id"]
        assert r["date"].startswith("2026-0") and "recipe" in r["assumed"], r["id"]
    assert {r["id"] for r in rs if "NATURAL" in r["assumed"]} == set(natural)


def run_fixture(run_all: Callable[[], Any], name: str = "run"):
    """A module-scoped fixture `name` holding a batch's run (`run = run_fixture(p63.run_all)`): estimated once for
    the module's tests."""
    return pytest.fixture(scope="module", name=name)(lambda: run_all())
