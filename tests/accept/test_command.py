from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from trainsizer.accept.command import accept, main
from trainsizer.accept.results import load

from .conftest import FIXTURES

TELEMETRY = str(FIXTURES / "telemetry" / "h100x8-healthy.json")


def invoke(args, **kw):
    return CliRunner().invoke(accept, args, catch_exceptions=False, **kw)


def test_is_a_click_command():
    assert isinstance(accept, click.Command) and accept.name == "accept"


def test_json_on_recorded_telemetry_with_platform_autodetect(tmp_path):
    out = tmp_path / "r.json"
    res = invoke(["--telemetry", TELEMETRY, "--only", "inventory,health", "--json", "--out", str(out),
                  "--history", str(tmp_path / "h.sqlite")])
    doc = json.loads(res.output)
    assert doc["platform"] == "h100-sxm-80gb"  # detected from "NVIDIA H100 80GB HBM3"
    for c in doc["checks"]:
        assert set(c) >= {"name", "status", "measured", "threshold", "unit", "why", "source"}
        assert c["status"] in ("pass", "fail", "skipped", "error")
    by = {c["name"]: c for c in doc["checks"]}
    assert by["inventory.gpu_count"]["status"] == "pass" and by["inventory.gpu_count"]["threshold"] == 8
    assert by["health.xid"]["status"] == "pass"
    assert doc["nodes"][0]["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3"
    assert load(out).run_id == doc["run_id"]
    # exit status: 1 when something fails (NICs on this host do not match the H100 platform), else 0
    assert res.exit_code == (1 if doc["verdict"] == "fail" else 0)


def test_storage_only_table_html_history(tmp_path):
    out, html, db = tmp_path / "r-{host}.json", tmp_path / "r.html", tmp_path / "h.sqlite"
    args = ["--only", "storage,checkpoint", "--storage-path", str(tmp_path), "--storage-size", "4MiB",
            "--checkpoint-size", "4MiB", "--out", str(out), "--html", str(html), "--history", str(db),
            "--telemetry", "none"]
    first = invoke(args)
    assert first.exit_code == 0, first.output
    assert "checkpoint.integrity" in first.output and "INCOMPLETE" in first.output
    second = invoke(args)
    files = list(tmp_path.glob("r-*.json"))
    assert len(files) == 1
    doc = load(files[0])
    assert doc.calibration.storage_read_gb_s > 0 and doc.calibration.storage_write_gb_s > 0
    hist = {h["name"]: h for h in doc.history}
    assert hist["storage.read"]["node_past_runs"] == 1
    assert "Compared with history" in html.read_text()
    assert second.exit_code == 0


def test_plan_thresholds_make_pass_and_fail(tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"acceptance": {
        "storage_write_gb_s_min": {"value": 1e-6, "source": "plan: tiny"},
        "checkpoint_restore_s_max": {"value": 1e-9, "source": "plan: impossible"}}}))
    res = invoke(["--plan", str(plan), "--only", "storage,checkpoint", "--storage-path", str(tmp_path),
                  "--storage-size", "4MiB", "--checkpoint-size", "4MiB", "--no-history", "--json",
                  "--out", str(tmp_path / "r.json"), "--telemetry", "none"])
    by = {c["name"]: c for c in json.loads(res.output)["checks"]}
    assert by["storage.write"]["status"] == "pass" and by["storage.write"]["source"] == "plan: tiny"
    assert by["checkpoint.restore"]["status"] == "fail"
    assert res.exit_code == 1


@pytest.mark.parametrize("args, needle", [
    (["--only", "storgae"], "Did you mean 'storage'"),
    (["--platform", "h100"], "unknown platform"),
    (["--burn-in", "24hours"], "--burn-in: not a duration"),
    (["--storage-size", "lots"], "--storage-size: not a size"),
    (["--nnodes", "2"], "--rdzv-endpoint"),
    (["--telemetry", "nvmlx"], "--telemetry"),
    (["--merge", "/nonexistent/dir"], "--merge"),
])
def test_bad_input_is_one_line_exit_2(args, needle, capsys):
    assert main([*args, "--no-history", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_merge_folder(tmp_path):
    for node in ("a", "b"):
        out = tmp_path / "runs" / f"node-{node}.json"
        invoke(["--only", "checkpoint", "--storage-path", str(tmp_path), "--checkpoint-size", "1MiB",
                "--no-history", "--quiet", "--out", str(out), "--telemetry", "none"])
    res = invoke(["--merge", str(tmp_path / "runs"), "--out", str(tmp_path / "runs" / "results.json"),
                  "--no-history", "--json"])
    doc = json.loads(res.output)
    assert sum(1 for c in doc["checks"] if c["name"] == "checkpoint.integrity") == 2


@pytest.mark.slow
def test_python_dash_m_entry_point(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "trainsizer.accept", "--only", "dcgm", "--no-history", "--json",
                           "--out", str(tmp_path / "r.json"), "--telemetry", "none"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["checks"][0]["name"] == "dcgm.diag"
    proc = subprocess.run([sys.executable, "-m", "trainsizer.accept", "--skip", "nope"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.startswith("error: --skip: unknown check")


def test_unwritable_out_is_one_line_error_before_any_check(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    code = main(["--only", "inventory", "--telemetry", "none", "--no-history", "--out", str(blocker / "r.json")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: --out: cannot write there") and "Traceback" not in err
    code = main(["--only", "inventory", "--telemetry", "none", "--no-history", "--out", str(tmp_path)])
    assert code == 2 and "--out: is a folder" in capsys.readouterr().err
    code = main(["--only", "inventory", "--telemetry", "none", "--no-history", "--out", str(tmp_path / "r.json"),
                 "--html", str(blocker / "r.html")])
    assert code == 2 and "error: --html: cannot write there" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()  # refused before any check ran
