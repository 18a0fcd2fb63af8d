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


def test_readme_library_block_runs_and_shows_the_error_it_promises(monkeypatch, capsys):
    """The "As a library" block runs as pasted (from the repository root) and its try/except prints the
    unknown-name error it is there to show (it printed 'data: required key is missing' before)."""
    text = README.read_text(encoding="utf-8")
    block = re.search(r"## As a library.*?```python\n(.*?)```", text, re.S)
    assert block, "README lost its library block"
    monkeypatch.chdir(README.parent)
    exec(compile(block.group(1), "README.md", "exec"), {})  # noqa: S102 (the README's own code)
    out = capsys.readouterr().out
    assert "unknown model preset" in out and "'llama-9b'" in out


def test_readme_accuracy_table_names_every_benchmark_and_its_links_resolve():
    """The accuracy section has a row linked to each docs/validation.md benchmark section, every link lands on a
    heading there, and every benchmarks/<name>.py it names exists."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### Accuracy (benchmarks/"):text.index("## As a library")]
    validation = (README.parent / "docs" / "validation.md").read_text(encoding="utf-8")
    sections = set(re.findall(r"^## benchmarks/(\w+)\.py$", validation, flags=re.M))
    linked = re.findall(r"\]\(docs/validation\.md#benchmarks(\w+?)py\)", section)
    assert sections and set(linked) == sections, sorted(set(linked) ^ sections)
    named = set(re.findall(r"`(\w+)\.py`", section)) | set(linked)
    missing = [n for n in named if not (README.parent / "benchmarks" / f"{n}.py").exists()]
    assert not missing, missing
