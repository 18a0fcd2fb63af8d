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


# "docs/frameworks.md X": X names what the reader looks for there (a heading, a style's row) or is prose
FRAMEWORKS_REF = re.compile(r"frameworks\.md(?:'s)? (?=[A-Za-z`])([^),;:'\"\n]+)")
GAP_BEFORE = re.compile(r"known gaps?[\W]{0,8}(?:docs/)?frameworks\.md", re.I)


def _moved_from_frameworks(text: str) -> str | None:
    """What a "frameworks.md X" reference names that moved in the 2026-12-02 split, or None: the Known gaps and
    Validation sections went to known-gaps.md / validation.md, and the per-benchmark notes with them."""
    benchmarks = set(re.findall(r"^## benchmarks/(\w+)\.py", (DOCS / "validation.md").read_text(encoding="utf-8"),
                                flags=re.M))
    first = re.sub(r"\W+$", "", text.split()[0]).lower()
    if text.lower().startswith(("known gap", "validation")):
        return "a gap is cited as docs/known-gaps.md N (x), a figure as docs/validation.md <benchmark>"
    if first in benchmarks:
        return f"{first}'s figures are in docs/validation.md, its gaps in docs/known-gaps.md"
    return None


def test_no_pointer_to_a_frameworks_section_that_moved():
    """Code, data, tests and the README point to docs/frameworks.md only for what it still holds (the styles'
    assumptions, the auto rule, the hybrid models); a gap or a figure is cited in known-gaps.md / validation.md."""
    doc = (DOCS / "frameworks.md").read_text(encoding="utf-8")
    heads = [re.sub(r"[`*]", "", h).lower() for h in re.findall(r"^#+ (.+)$", doc, flags=re.M)]
    rows = {m.lower() for m in re.findall(r"^\| `([\w-]+)` \|", doc, flags=re.M)}
    files = [p for d in ("src", "tests", "benchmarks") for p in (ROOT / d).rglob("*")
             if p.suffix in (".py", ".yaml", ".csv") and p.is_file() and p.name != Path(__file__).name]
    files.append(ROOT / "README.md")
    bad = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        where = str(path.relative_to(ROOT))
        bad += [f"{where}: '{m.group(0)}': cite docs/known-gaps.md N (x)" for m in GAP_BEFORE.finditer(text)]
        for m in FRAMEWORKS_REF.finditer(text):
            ref = m.group(1).strip()
            if why := _moved_from_frameworks(ref):
                bad.append(f"{where}: 'frameworks.md {ref}': {why}")
            elif ref[0].isupper() or ref[0] == "`":  # a section or row name: it must exist
                name = re.sub(r"[`*]", "", ref).lower()
                if not (any(h.startswith(name) or name.startswith(h) for h in heads)
                        or name.split()[0] in rows):
                    bad.append(f"{where}: 'frameworks.md {ref}': no such heading or style row in docs/frameworks.md")
    assert not bad, "\n".join(bad)


def test_the_moved_pointer_check_can_fail():
    assert _moved_from_frameworks("perf_amd: it would lower")
    assert _moved_from_frameworks("Known gaps")
    assert _moved_from_frameworks("prints this table") is None
    assert GAP_BEFORE.search("a known gap\n  # (docs/frameworks.md). MEASURED")


def test_docs_hold_no_merge_conflict_markers():
    # a keep-both rebase resolution once left diff3's "||||||| parent of" lines in known-gaps.md
    marker = re.compile(r"^(<{7}|\|{7}|={7}|>{7})( |$)", flags=re.M)
    for path in [ROOT / "README.md", *DOCS.glob("*.md")]:
        hits = marker.findall(path.read_text(encoding="utf-8"))
        assert not hits, f"{path.relative_to(ROOT)}: {len(hits)} merge-conflict marker line(s)"
