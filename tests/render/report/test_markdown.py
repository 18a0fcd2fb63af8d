from __future__ import annotations

import re

import pytest

from trainsizer.render.report import render_markdown
from trainsizer.render.report.i18n import t


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_markdown_has_the_same_sections_charts_beside_and_mermaid(plan, lang):
    text, files = render_markdown(plan, lang)
    for key in ("sec.options", "sec.memory", "sec.bom", "sec.network", "sec.acceptance", "sec.sources"):
        assert f"## {t(key, lang)}" in text
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert sorted(images) == sorted(k for k in files if k.startswith("charts/"))
    assert all(files[k].startswith(b"\x89PNG") for k in images)
    assert "```mermaid\nflowchart TB\n" in text and "(architecture.svg)" in text
    assert files["architecture.svg"].lstrip().startswith(b"<?xml")


def test_markdown_tables_keep_their_columns(plan):
    plan["risks"][0]["mitigation"] = "a | b\nc"     # a pipe and a line break inside a cell
    text, _ = render_markdown(plan, "en")
    table = [ln for ln in text.splitlines() if ln.startswith("|")]
    rows = [ln for ln in table if t("v.deadline_slack", "en") in ln]   # the risk id, labelled
    header = table[table.index(rows[0]) - 2]
    assert len(re.findall(r"(?<!\\)\|", rows[0])) == len(re.findall(r"(?<!\\)\|", header))
