"""Recorded outputs of nccl-tests, fio, DCGM and perftest."""

from __future__ import annotations

import pytest

from trainsizer.accept import dcgm, fio, nccltests, perftest

from .conftest import fixture_text


def test_nccl_tests_text():
    run = nccltests.parse_text(fixture_text("nccl-tests/all_reduce_perf_h100x8.txt"))
    assert run.complete and run.op == "all_reduce" and run.nranks == 8
    assert "NVIDIA H100 80GB HBM3" in run.devices[0]
    assert len(run.rows) == 2 * 15 and run.rows[0].size_bytes == 2**20
    assert run.busbw_at_largest() == pytest.approx(481.44, abs=0.01)  # the in-place figure at 16 GiB
    assert run.wrong_total() == 0 and run.out_of_bounds == 0 and not run.failed
    largest = [r for r in run.rows if r.size_bytes == 2**34][0]
    assert largest.busbw_gb_s == pytest.approx(largest.algbw_gb_s * 1.75, rel=1e-3)


def test_nccl_tests_wrong_and_failed():
    run = nccltests.parse_text(fixture_text("nccl-tests/all_reduce_perf_wrong_failed.txt"))
    assert run.failed and run.wrong_total() == 3


def test_nccl_tests_truncated_run():
    run = nccltests.parse_text(fixture_text("nccl-tests/all_reduce_perf_truncated.txt"))
    assert not run.complete and run.avg_busbw_gb_s is None and len(run.rows) == 12


def test_nccl_tests_check_disabled_na():
    line = "  1048576  262144  float  sum  -1  38.52  27.22  47.64  N/A  37.90  27.67  48.42  N/A"
    run = nccltests.parse_text(line)
    assert run.rows[0].wrong is None and run.wrong_total() is None


def test_nccl_tests_json():
    run = nccltests.parse_json(fixture_text("nccl-tests/all_reduce_perf_h100x8.json"))
    assert run.nranks == 8 and run.busbw_at_largest() == pytest.approx(482.3)
    assert run.avg_busbw_gb_s == 474.1 and run.out_of_bounds == 0 and not run.failed


def test_fio_json_read_and_write_with_leading_warning():
    r = fio.parse(fixture_text("fio/read-nvme.json"), "read")
    assert r.gb_s == pytest.approx(6.512) and r.errors == 0 and r.version == "fio-3.33"
    w = fio.parse(fixture_text("fio/write-nvme-with-warning.json"), "write")
    assert w.bw_bytes == 3_104_000_000 and w.io_bytes == 8 * 2**30
    with pytest.raises(ValueError):
        fio.parse("fio: failed to open\n", "read")


def test_fio_command_is_direct_unlinked_json(tmp_path):
    cmd = fio.command(tmp_path, "write", 2**20, direct=True)
    assert "--direct=1" in cmd and "--unlink=1" in cmd and "--end_fsync=1" in cmd and "--output-format=json" in cmd


def test_dcgm_pass_fail_runtime_error():
    results, err = dcgm.parse(fixture_text("dcgm/diag-r2-pass.json"))
    assert err is None and len(results) == 24 and {r.status for r in results} == {"Pass", "Skip"}
    results, _ = dcgm.parse(fixture_text("dcgm/diag-r2-fail.json"))
    failed = [r for r in results if r.status == "Fail"]
    assert [(f.test, f.entity) for f in failed] == [("memory", "GPU 4")] and "row remapping" in failed[0].warnings[0]
    _, err = dcgm.parse(fixture_text("dcgm/diag-runtime-error.json"))
    assert "host engine" in err


def test_perftest_text_and_json():
    rows = perftest.parse_text(fixture_text("perftest/ib_write_bw_ndr.txt"))
    assert rows == [perftest.BwResult(8388608, 29612, 391.84, 390.77)]
    rows = perftest.parse_json(fixture_text("perftest/ib_write_bw_ndr.json"))
    assert rows[0].bw_average_gbps == 352.10 and rows[0].msg_size == 8388608


def test_missing_tools_are_skipped(cpu_ctx, monkeypatch):
    import shutil

    real = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name: None if name in ("dcgmi", "ib_write_bw") else real(name))
    assert dcgm.run(cpu_ctx)[0].status == "skipped"
    r = perftest.run(cpu_ctx)[0]
    assert r.status == "skipped" and "ib_write_bw" in r.why
