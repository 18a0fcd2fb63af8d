"""The nccl-tests path of the collectives check, with recorded outputs (no GPU needed)."""

from __future__ import annotations

import time

from trainsizer.accept import collectives, criteria
from trainsizer.accept.context import Context, Options

from .conftest import fixture_text


def test_a_failing_binary_keeps_the_collectives_that_finished(monkeypatch):
    outputs = {"all_reduce_perf": (0, fixture_text("nccl-tests/all_reduce_perf_h100x8.txt")),
               "all_gather_perf": (0, fixture_text("nccl-tests/all_gather_perf_h100x8.txt")),
               "reduce_scatter_perf": (None, "NCCL WARN hang")}
    monkeypatch.setattr(collectives.shutil, "which", lambda name: f"/opt/nccl-tests/{name}")
    monkeypatch.setattr(collectives, "_run", lambda cmd, timeout_s, env=None: outputs[cmd[0].rsplit("/", 1)[1]])
    ctx = Context(criteria=criteria.from_platform("h100-sxm-80gb"), telemetry=None, telemetry_why="test",
                  options=Options(backend="nccl", collective_max_bytes=2**30), node="n0")
    by = {r.name: r for r in collectives._nccl_tests(ctx, 8)}
    assert by["collectives.all_reduce.intra"].status in ("pass", "fail")
    assert by["collectives.all_reduce.intra"].measured > 0
    assert by["collectives.all_gather.intra"].measured > 0
    rs = by["collectives.reduce_scatter.intra"]
    assert rs.status == "error" and "timed out" in rs.why
    assert "collectives.correctness.intra" in by


def test_nccl_tests_sweep_never_starts_above_its_end(monkeypatch):
    calls = []
    monkeypatch.setattr(collectives.shutil, "which", lambda name: f"/opt/nccl-tests/{name}")
    monkeypatch.setattr(collectives, "_run", lambda cmd, timeout_s, env=None: calls.append(cmd) or (1, ""))
    ctx = Context(criteria=criteria.generic(), telemetry=None, telemetry_why="test",
                  options=Options(backend="nccl", collective_max_bytes=256 * 2**10), node="n0")
    collectives._nccl_tests(ctx, 8)
    assert {(c[c.index("-b") + 1], c[c.index("-e") + 1]) for c in calls} == {("262144", "262144")}


def _gone(pid: int, wait_s: float = 10) -> bool:
    """The process has exited (a zombie counts: dead, only not yet reaped); SIGKILL lands asynchronously."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def test_run_leaves_no_process_behind():
    """A child the command left running (a torchrun worker whose agent died) is killed with its group."""
    rc, out = collectives._run(["bash", "-c", "sleep 60 >/dev/null 2>&1 & echo $!"], timeout_s=30)
    assert rc == 0 and _gone(int(out.split()[0]))
    rc, out = collectives._run(["bash", "-c", "sleep 60 & echo $!; sleep 60"], timeout_s=1)
    assert rc is None and _gone(int(out.split()[0]))
