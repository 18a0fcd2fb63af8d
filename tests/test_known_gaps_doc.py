"""Citations of docs/known-gaps.md ("docs/known-gaps.md 17 (a)", "... 5.8") and the docs' links into it resolve."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
CITED = re.compile(r"known-gaps\.md,? (\d+(?:\.\d+)?)(?: \(([a-z])\))?")
LINK = re.compile(r"\]\(([\w.-]+\.md)?#([^)]+)\)")


def _gaps() -> set[str]:
    """'17', '17 (a)', '5.8': the numbered sections of known-gaps.md and their lettered or numbered items."""
    found, section = set(), None
    for line in (DOCS / "known-gaps.md").read_text(encoding="utf-8").splitlines():
        if m := re.match(r"## (\d+)\. ", line):
            section = m.group(1)
            found.add(section)
        elif m := re.match(r"### (\d+\.\d+) ", line):
            found.add(m.group(1))
        elif (m := re.match(r"### .*? \(([a-z])\): ", line)) and section:
            found.add(f"{section} ({m.group(1)})")
    return found


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but '-' and '_' dropped, spaces to '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_known_gaps_citation_names_a_section_that_exists():
    gaps = _gaps()
    assert {"1", "5.8", "17 (a)", "17 (e)"} <= gaps
    files = [p for d in ("src", "tests", "benchmarks") for p in (ROOT / d).rglob("*")
             if p.suffix in (".py", ".yaml", ".csv") and p.is_file()] + [ROOT / "README.md"]
    seen = 0
    for path in files:
        for m in CITED.finditer(path.read_text(encoding="utf-8")):
            seen += 1
            key = m.group(1) + (f" ({m.group(2)})" if m.group(2) else "")
            assert key in gaps, f"{path.relative_to(ROOT)}: docs/known-gaps.md has no {key}"
    assert seen >= 10


def test_links_between_the_docs_resolve():
    for doc in DOCS.glob("*.md"):
        for name, anchor in LINK.findall(doc.read_text(encoding="utf-8")):
            target = DOCS / name if name else doc
            assert target.exists(), (doc.name, name)
            heads = re.findall(r"^#+ (.+)$", target.read_text(encoding="utf-8"), flags=re.M)
            assert anchor in {_slug(h) for h in heads}, (doc.name, name, anchor)
