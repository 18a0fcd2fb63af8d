from __future__ import annotations

import io

from rich.console import Console

from trainsizer.accept import fleet, report, store
from trainsizer.accept.results import CheckResult, RunResult


def run(run_id, started, node, value, status="pass"):
    return RunResult(run_id=run_id, started_at=started, complete=True, verdict=status, nodes=[{"hostname": node}],
                     checks=[CheckResult(name="storage.read", status=status, measured=value, unit="GB/s", node=node),
                             CheckResult(name="inventory.gpu_model", status="pass", measured="H100", node=node)])


def test_history_compares_with_own_past_and_fleet(tmp_path):
    con = store.connect(tmp_path / "h.sqlite")
    store.record(con, run("r1", "2026-11-01T00:00:00", "a", 2.0))
    store.record(con, run("r2", "2026-11-02T00:00:00", "a", 4.0))
    store.record(con, run("r3", "2026-11-02T00:00:00", "b", 3.0))
    store.record(con, run("r4", "2026-11-03T00:00:00", "c", 5.0))
    now = run("r5", "2026-11-04T00:00:00", "a", 1.0)
    rows = store.compare(con, now)
    assert rows == [{"name": "storage.read", "node": "a", "measured": 1.0, "unit": "GB/s",
                     "node_past_median": 3.0, "node_past_runs": 2, "fleet_median": 4.0, "fleet_nodes": 2}]
    store.record(con, now)
    store.record(con, now)  # idempotent per run id
    assert con.execute("SELECT COUNT(*) FROM checks WHERE run_id = 'r5'").fetchone()[0] == 2


def test_fleet_merge_flags_slow_node():
    results = [run(f"r{i}", "2026-11-04T00:00:00", n, v) for i, (n, v) in enumerate(
        [("a", 5.0), ("b", 5.1), ("c", 4.9), ("d", 3.0)])]
    merged = fleet.merge(results)
    f = next(c for c in merged.checks if c.name == "fleet.storage.read")
    assert f.status == "fail" and "d 3" in f.why and f.details["per_node"]["d"] == 3.0
    assert merged.verdict == "fail" and len(merged.nodes) == 4
    assert merged.calibration.storage_read_gb_s == 3.0


def test_html_and_table(tmp_path, capsys):
    res = run("r1", "2026-11-04T00:00:00", "a<b>", 2.0, status="fail")
    res.history = [{"name": "storage.read", "node": "a", "measured": 2.0, "node_past_median": 3.0, "fleet_median": None}]
    page = report.to_html(res)
    assert "<td>storage.read</td>" in page and "a&lt;b&gt;" in page and "gemm_tflops" in page
    report.print_table(res)
    out = capsys.readouterr().out
    assert "storage.read" in out and "FAIL" in out


def test_table_prints_tool_text_verbatim_not_as_markup():
    """Tool output in `why` ("[rank0]:", a path "[/dev/x]") is text: it used to vanish or crash rich."""
    res = run("r1", "2026-11-04T00:00:00", "node[01]", 2.0, status="fail")
    res.checks[0].why = "torchrun exited 1: [rank0]: RuntimeError on [/dev/nvme0n1] [bold]x[/]"
    console = Console(file=io.StringIO(), width=400)
    report.print_table(res, console)
    out = console.file.getvalue()
    assert "[rank0]: RuntimeError on [/dev/nvme0n1] [bold]x[/]" in out and "node[01]" in out


def test_merging_recorded_node_runs_counts_each_figure_once(tmp_path):
    """Each node recorded its own run; recording their merge used to overwrite node a's run (the merge took its
    run id) and store node b's figure a second time, so that b's 'past' held today's own figure."""
    con = store.connect(tmp_path / "h.sqlite")
    a, b = run("ra", "2026-11-04T00:00:00", "a", 5.0), run("rb", "2026-11-04T00:00:01", "b", 4.0)
    store.record(con, a)
    store.record(con, b)
    merged = fleet.merge([a, b])
    assert merged.run_id not in ("ra", "rb")
    rows = {(r["name"], r["node"]): r for r in store.compare(con, merged)}
    assert rows[("storage.read", "b")]["node_past_runs"] == 0  # today's own run is not its past
    store.record(con, merged)
    assert con.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 3
    count = "SELECT COUNT(*) FROM checks WHERE name = 'storage.read' AND node = ?"
    assert con.execute(count, ("a",)).fetchone()[0] == 1 and con.execute(count, ("b",)).fetchone()[0] == 1
