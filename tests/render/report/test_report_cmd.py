from __future__ import annotations

import json

from .conftest import FIXTURE


def test_report_writes_every_format_and_never_overwrites(run_cli, tmp_path):
    out = tmp_path / "out"
    code, stdout, _ = run_cli("--lang", "zh", "report", str(FIXTURE), "--out", str(out), "--format", "html",
                              "--format", "xlsx", "--format", "svg")
    assert code == 0
    assert {p.name for p in out.iterdir()} == {"report.html", "bom.xlsx", "architecture.svg"}
    assert "report.html" in stdout
    before = (out / "report.html").read_bytes()
    code, _, err = run_cli("report", str(FIXTURE), "--out", str(out), "--format", "html")
    assert code == 2 and "already exists" in err and "--force" in err
    assert (out / "report.html").read_bytes() == before
    code, _, _ = run_cli("--lang", "en", "report", str(FIXTURE), "--out", str(out), "--format", "html", "--force")
    assert code == 0 and (out / "report.html").read_bytes() != before


def test_bad_plan_files_get_one_line_errors(run_cli, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    code, _, err = run_cli("report", str(bad), "--out", str(tmp_path / "o"))
    assert code == 2 and "not valid JSON" in err and "Traceback" not in err
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"memory": {}}), encoding="utf-8")
    code, _, err = run_cli("report", str(other), "--out", str(tmp_path / "o"))
    assert code == 2 and "not a trainsizer plan" in err
    code, _, err = run_cli("report", str(tmp_path / "missing.json"), "--out", str(tmp_path / "o"))
    assert code == 2 and "not found" in err
    code, _, err = run_cli("report", str(FIXTURE), "--out", str(tmp_path / "o"), "--format", "docx")
    assert code == 2 and "docx" in err and "html" in err
    future = tmp_path / "future.json"
    future.write_text(json.dumps({**json.loads(FIXTURE.read_text(encoding="utf-8")), "schema_version": "2.0"}),
                      encoding="utf-8")
    code, _, err = run_cli("report", str(future), "--out", str(tmp_path / "o"))
    assert code == 2 and "schema_version" in err and "2.0" in err and "1.x" in err


def test_plan_writes_its_reports_with_report(run_cli, tmp_path):
    job = FIXTURE.parents[4] / "examples" / "qlora-7b-one-gpu.yaml"
    code, _, err = run_cli("--lang", "zh", "plan", str(job), "--report", str(tmp_path / "r"))
    assert code == 0, err
    assert {"report.html", "report.md", "bom.xlsx", "architecture.svg", "charts"} <= {
        p.name for p in (tmp_path / "r").iterdir()}
    assert "训练集群方案" in (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    code, _, err = run_cli("plan", str(job), "--report", str(tmp_path / "r"))
    assert code == 2 and "already exists" in err


def test_plan_json_with_report_stays_json(run_cli, tmp_path):
    """`plan --json --report DIR`: stdout is the plan JSON alone; the files written are named on stderr (and
    after the tables, as 'wrote ...', without --json)."""
    job = FIXTURE.parents[4] / "examples" / "qlora-7b-one-gpu.yaml"
    code, out, err = run_cli("plan", str(job), "--report", str(tmp_path / "r"), "--json")
    assert code == 0, err
    assert json.loads(out)["schema_version"] and "wrote " in err and "report.html" in err
    code, out, _ = run_cli("--lang", "zh", "plan", str(job), "--report", str(tmp_path / "r2"))
    assert code == 0 and out.rstrip().splitlines()[-1].startswith("已写入 ")
    assert out.index("已写入") > out.index("推荐")


def test_a_folder_that_cannot_be_made_is_a_one_line_error(run_cli, tmp_path):
    """--out under a file (or /proc, a read-only mount): exit 2 naming the folder, not an OSError traceback."""
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    out = tmp_path / "afile" / "reports"
    code, _, err = run_cli("report", str(FIXTURE), "--out", str(out), "--format", "html")
    assert code == 2 and "Traceback" not in err
    assert str(out) in err and "cannot write there" in err
