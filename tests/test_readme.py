"""The README's job-file block works when pasted as is."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_job_block_checks(run_cli, tmp_path):
    text = README.read_text(encoding="utf-8")
    block = re.search(r"## A job file\s+```yaml\n(.*?)```", text, re.S)
    assert block, "README lost its job-file block"
    job = tmp_path / "job.yaml"
    job.write_text(block.group(1), encoding="utf-8")
    code, out, err = run_cli("check", str(job))
    assert code == 0, err
