"""The report's assumptions table (render/report/sources.py): the job as the plan read it."""

from __future__ import annotations

from trainsizer.render.report.fmt import Fmt
from trainsizer.render.report.sources import assumptions

from .conftest import load_fixture

SAMPLE_ROWS = {"mean_tokens": 900.0, "length_sigma": 0.8, "cap_tokens": 8192.0, "real_tokens_per_sample": 898.2}


def _rows(plan: dict, lang: str) -> dict[str, str]:
    return {what: value for what, value, _source, _date in assumptions(plan, Fmt(lang))}


def test_unpacked_samples_are_an_assumption_in_both_languages():
    plan = load_fixture()
    plan["job"]["sample_rows"] = SAMPLE_ROWS
    en, zh = _rows(plan, "en"), _rows(plan, "zh")
    row = en["Unpacked samples (each micro-batch padded to its longest sample)"]
    assert "mean 900 tokens" in row and "log-spread 0.80" in row and "8,192 tokens" in row and "898.2 real" in row
    row = zh["未打包样本（每个微批次填充到其中最长的样本）"]
    assert "均值 900 个 token" in row and "8,192 个 token" in row and "898.2 个真实 token" in row


def test_next_fit_packs_are_an_assumption_in_both_languages():
    plan = load_fixture()
    plan["job"]["pack_rows"] = {"mean_tokens": 135.0, "length_sigma": 0.6, "pack_tokens": 4096,
                                "real_tokens_per_pack": 3998.1}
    en, zh = _rows(plan, "en"), _rows(plan, "zh")
    row = next(v for k, v in en.items() if k.startswith("Packed samples"))
    assert "mean 135 tokens" in row and "log-spread 0.60" in row and "4,096 tokens" in row and "3,998.1" in row
    row = next(v for k, v in zh.items() if k.startswith("打包样本"))
    assert "均值 135 个 token" in row and "4,096 个 token" in row


def test_rows_of_seq_len_have_no_sample_row_and_tokens_are_whole():
    plan = load_fixture()
    plan["job"].pop("sample_rows", None)
    plan["job"]["tokens_total"] = 179_647_229.825
    en = _rows(plan, "en")
    assert not any(what.startswith("Unpacked samples") for what in en)
    assert not any(what.startswith("Packed samples") for what in en)
    assert en["Training tokens"] == "179,647,230"


def test_price_units_read_in_the_reports_language():
    from trainsizer.evaluate import UNIT_BUY, UNIT_RENT
    from trainsizer.render.report.sources import unit_text

    assert unit_text(UNIT_RENT, "zh") == "每 GPU 小时"
    assert unit_text(UNIT_BUY, "zh") == "每张 GPU（仅加速卡）"
    assert unit_text(UNIT_RENT, "en") == UNIT_RENT
    assert unit_text("per node-month", "zh") == "per node-month"  # a unit it has no words for stays as written


def test_the_model_row_takes_the_readers_brackets():
    """'llama-3.1-70b (705.54亿)' in a Chinese workbook: a half-width bracket after Chinese figures."""
    plan = load_fixture()
    name = plan["job"]["model"]["name"]
    assert _rows(plan, "zh")["模型（参数量）"].startswith(f"{name}（") and _rows(plan, "zh")["模型（参数量）"].endswith("）")
    assert _rows(plan, "en")["Model (parameters)"].startswith(f"{name} (")
