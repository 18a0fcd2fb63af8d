"""docs/frameworks.md is the table of framework_assumptions.yaml, and every framework has an entry."""

from __future__ import annotations

from pathlib import Path

from trainsizer.estimate import framework as fw
from trainsizer.estimate.inputs import FRAMEWORKS

DOC = Path(__file__).resolve().parents[2] / "docs" / "frameworks.md"
FIELDS = ("stack", "kernels", "overlap", "recompute", "loss", "optimizer", "fp8", "sources")


def test_every_framework_says_what_it_assumes_and_the_doc_agrees():
    text = DOC.read_text(encoding="utf-8")
    for name in FRAMEWORKS:
        if name == "auto":
            continue
        a = fw.assumptions(name)
        assert all(a.get(k) for k in FIELDS), (name, a)
        row = next(line for line in text.splitlines() if line.startswith(f"| `{name}` |"))
        for k in FIELDS:
            assert a[k].replace("|", "/") in row, (name, k)
