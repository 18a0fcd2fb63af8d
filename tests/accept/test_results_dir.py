"""accept writes its result file into a results folder (configurable), never the current folder by default;
`--lang zh` translates its table."""

from __future__ import annotations

from pathlib import Path

from trainsizer.accept import report
from trainsizer.accept.command import results_dir
from trainsizer.accept.results import CheckResult, RunResult, save


def test_default_results_dir_is_outside_the_current_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("TRAINSIZER_RESULTS_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    assert results_dir() == Path.home() / ".local/share/trainsizer/results"
    assert tmp_path not in results_dir().parents
    monkeypatch.setenv("TRAINSIZER_RESULTS_DIR", str(tmp_path / "r"))
    assert results_dir() == tmp_path / "r"


def _result() -> RunResult:
    return RunResult(run_id="r1", started_at="2026-12-01T10:00:00", finished_at="2026-12-01T10:05:00",
                     complete=True, verdict="pass", platform="h100-sxm-80gb",
                     checks=[CheckResult(name="gemm_bf16", status="pass", measured=700.0, threshold=600.0,
                                         unit="TFLOP/s", why="above the threshold", node="n1")],
                     nodes=[{"hostname": "n1"}])


def test_merge_writes_into_the_results_dir_not_the_current_folder(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    save(_result(), tmp_path / "in" / "n1.json")
    code, out, err = run_cli("accept", "--merge", str(tmp_path / "in"), "--results-dir", str(tmp_path / "res"),
                             "--no-history")
    assert code == 0, err
    assert not list(tmp_path.glob("accept-*.json"))
    assert len(list((tmp_path / "res").glob("accept-*.json"))) == 1


def test_accept_table_in_chinese(capsys):
    from rich.console import Console

    report.print_table(_result(), Console(width=200), lang="zh")
    out = capsys.readouterr().out
    assert "验收" in out and "通过" in out and "检查项" in out
