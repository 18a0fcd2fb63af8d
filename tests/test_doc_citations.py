"""Every place the code and its data cite this repository's docs names a file, section and check that exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "trainsizer"
DOCS = ROOT / "docs"
# docs/ paths that name another project's documentation, with the project named before them on the line
EXTERNAL = {"docs/composability.md": "torchtitan", "docs/fsdp.md": "torchtitan", "docs/float8.md": "torchtitan",
            "docs/user-guide/features/dist_optimizer.md": "Megatron"}
CITED = re.compile(r"(?<![\w/.])(?:docs/)?acceptance\.md")
SECTION = re.compile(r"\s+section\s+(\d+(?:\.\d+)?)(?:\s+checks?\s+((?:#\d+(?:,\s*|\s+and\s+)?)+))?")


def _texts():
    for path in sorted(SRC.rglob("*")):
        if path.suffix in (".py", ".yaml", ".yml", ".html", ".j2") and path.is_file():
            yield path, path.read_text(encoding="utf-8")


def _sections() -> tuple[set[str], set[int]]:
    """Section numbers of docs/acceptance.md (headings `## N.` / `### N.M`) and the check numbers of section 3."""
    text = (DOCS / "acceptance.md").read_text(encoding="utf-8")
    sections = set(re.findall(r"^#{2,3} (\d+(?:\.\d+)?)[. ]", text, flags=re.M))
    part3 = text.split("\n## 3.", 1)[1].split("\n## ", 1)[0]
    checks = {int(n) for n in re.findall(r"^\| (\d+) \|", part3, flags=re.M)}
    return sections, checks


def test_acceptance_citations_name_the_repository_doc_and_sections_that_exist():
    sections, checks = _sections()
    assert {"0", "2.1", "2.7", "3", "5"} <= sections and checks == set(range(1, 17))
    seen = 0
    for path, text in _texts():
        for m in CITED.finditer(text):
            seen += 1
            where = f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}"
            assert m.group().startswith("docs/"), f"{where}: cite docs/acceptance.md (the file in this repo)"
            after = SECTION.match(text, m.end())
            if after is None:
                continue
            assert after.group(1) in sections, f"{where}: docs/acceptance.md has no section {after.group(1)}"
            for n in re.findall(r"#(\d+)", after.group(2) or ""):
                assert after.group(1) == "3" and int(n) in checks, f"{where}: no check #{n} in section 3"
    assert seen >= 25


def test_runtime_check_sources_point_to_section_3_rows():
    from trainsizer.accept.criteria import suite_check

    sections, checks = _sections()
    m = SECTION.match(suite_check(15), len("docs/acceptance.md"))
    assert m and m.group(1) == "3" and 15 in checks


def test_every_docs_path_cited_in_the_code_exists():
    cited = 0
    for path, text in _texts():
        for m in re.finditer(r"(?<![\w/.])docs/[\w./-]*\w", text):
            doc = m.group()
            line = text[text.rfind("\n", 0, m.start()) + 1:m.start()]
            if doc in EXTERNAL:
                assert EXTERNAL[doc] in line or EXTERNAL[doc] in text[max(0, m.start() - 300):m.start()], (
                    f"{path.relative_to(ROOT)}: {doc} is cited as another project's page without naming it")
                continue
            cited += 1
            assert (ROOT / doc).exists(), f"{path.relative_to(ROOT)}: cites {doc}, which is not in the repository"
    assert cited >= 10
