"""A note that changes what the job trains on (samples cut at seq_len) reads as a warning in the report, written
by `trainsizer report` from plan.json as by the web page from the plan itself, in both languages."""

from __future__ import annotations

import json

from trainsizer.catalog import load_catalog
from trainsizer.plan.core import make_plan
from trainsizer.render.report import render_markdown
from trainsizer.render.report.writer import write_report

JOB = {"model": "llama-3.1-8b", "method": "lora", "data": {"samples": 2000, "avg_tokens": 8000}, "seq_len": 4096,
       "global_batch": {"sequences": 16}, "hardware": {"accelerator": "h100-sxm-80gb", "count": 1}}


def test_cut_samples_are_a_warning_in_the_report(tmp_path):
    plan = make_plan(JOB, load_catalog())
    md, _ = render_markdown(plan, "en")
    assert "WARNING: samples_truncated: " in md
    stored = json.loads(plan.model_dump_json(by_alias=True))  # as plan.json holds it
    write_report(stored, tmp_path, lang="zh", formats=("md", "html"))
    for name in ("report.md", "report.html"):
        assert "警告：samples_truncated：" in (tmp_path / name).read_text(encoding="utf-8"), name
    # under the headline, and in the notes; the other notes stay notes
    assert md.count("WARNING") == 2 and md.index("> **WARNING: samples_truncated") < md.index("## ")
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert html.index('<p class="warning">警告：samples_truncated') < html.index('id="summary"')
