from __future__ import annotations

import json

import pytest

from trainsizer.accept import runner
from trainsizer.accept.results import CheckResult, calibration_from, load, verdict_of, write_atomic
from trainsizer.errors import SpecError


def _c(name, status, measured=None, **kw):
    return CheckResult(name=name, status=status, measured=measured, **kw)


def test_write_atomic_replaces_and_leaves_no_temp(tmp_path):
    p = tmp_path / "sub" / "r.json"
    write_atomic(p, "one")
    write_atomic(p, "two")
    assert p.read_text() == "two"
    assert [f.name for f in p.parent.iterdir()] == ["r.json"]


def test_verdict_rules():
    assert verdict_of([_c("a", "pass")]) == "pass"
    assert verdict_of([_c("a", "pass"), _c("b", "skipped")]) == "incomplete"
    assert verdict_of([_c("a", "skipped"), _c("b", "fail")]) == "fail"
    assert verdict_of([_c("a", "error")]) == "fail"
    assert verdict_of([]) == "incomplete"


def test_calibration_takes_fleet_floor_and_skips_gloo():
    checks = [
        _c("gemm.bf16", "pass", 800.0, node="a"), _c("gemm.bf16", "fail", 700.0, node="b"),
        _c("storage.read", "skipped", 2.5), _c("hbm.bandwidth", "error", 1.0),
        _c("collectives.all_reduce.intra", "skipped", 0.4, details={"calibration": False}),
        _c("collectives.all_reduce.inter", "pass", 350.0, details={"calibration": True}),
    ]
    cal = calibration_from(checks)
    assert cal.gemm_tflops.bf16 == 700.0
    assert cal.storage_read_gb_s == 2.5
    assert cal.hbm_gb_s is None
    assert cal.busbw_intra_gb_s is None
    assert cal.busbw_inter_gb_s == 350.0
    assert set(json.loads(cal.model_dump_json())) == {
        "gemm_tflops", "busbw_intra_gb_s", "busbw_inter_gb_s", "storage_read_gb_s", "storage_write_gb_s", "hbm_gb_s"}


def test_crashing_check_is_an_error_and_others_still_run(cpu_ctx, tmp_path, monkeypatch):
    def boom(ctx):
        raise RuntimeError("driver exploded")

    monkeypatch.setitem(runner.CHECKS, "health", boom)
    out = tmp_path / "r.json"
    res = runner.run_checks(cpu_ctx, ["health", "dcgm"], out)
    assert [c.name for c in res.checks][:2] == ["health", "dcgm.diag"]
    assert res.checks[0].status == "error" and "driver exploded" in res.checks[0].why
    saved = load(out)
    assert saved.complete and saved.verdict == "fail" and len(saved.checks) == 2


def test_interrupted_run_keeps_finished_checks(cpu_ctx, tmp_path, monkeypatch):
    def killed(ctx):
        raise KeyboardInterrupt  # not caught: the process dies here

    monkeypatch.setitem(runner.CHECKS, "health", killed)
    out = tmp_path / "r.json"
    with pytest.raises(KeyboardInterrupt):
        runner.run_checks(cpu_ctx, ["dcgm", "health"], out)
    saved = load(out)
    assert not saved.complete and saved.verdict == "running"
    assert [c.name for c in saved.checks] == ["dcgm.diag"]


def test_load_rejects_non_result(tmp_path):
    p = tmp_path / "x.json"
    p.write_text('{"hello": 1}')
    with pytest.raises(SpecError, match="not a trainsizer accept result"):
        load(p)
