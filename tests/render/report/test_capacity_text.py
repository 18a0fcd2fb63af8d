"""The report's memory section says what its headroom is measured against: what the driver gives a process on the
card (catalog memory_driver), in the reader's language (docs/known-gaps.md 42)."""

from __future__ import annotations

from pathlib import Path

import yaml

from trainsizer.catalog import load_catalog
from trainsizer.plan.core import make_plan
from trainsizer.render.report.view import build_view

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "lora-8b-one-gpu.yaml"


def test_memory_section_names_the_capacity_in_both_languages():
    plan = make_plan(yaml.safe_load(EXAMPLE.read_text(encoding="utf-8")), load_catalog())
    said = {lang: next(s for s in build_view(plan, lang).sections if s.id == "memory").text for lang in ("en", "zh")}
    assert said["en"] and "44.5 GiB per GPU: what CUDA hands a process on one l40s" in said["en"][0]
    assert said["zh"] and "44.5 GiB" in said["zh"][0] and "CUDA 交给进程" in said["zh"][0]
