from __future__ import annotations

import re

import pytest

from trainsizer.render.report import render_html
from trainsizer.render.report.fmt import Fmt
from trainsizer.render.report.i18n import t

# Anything a browser would fetch: src/href to a URL, CSS url() or @import of one.
FETCH = re.compile(r"""(?:\bsrc|\bhref)\s*=\s*["']?\s*(?:https?:)?//|url\(\s*["']?\s*(?:https?:)?//|@import""",
                   re.IGNORECASE)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_plan_renders_self_contained_in_both_languages(any_plan, lang):
    _, plan = any_plan
    html = render_html(plan, lang)
    assert html.lstrip().startswith("<!DOCTYPE html>")
    # The page after the inlined plotly.js (the library's own code names URLs it never fetches here; the
    # browser test checks that no request is made).
    body = html.split("</script>", 1)[-1]
    assert not FETCH.search(body.replace("http://www.w3.org", ""))
    assert t("title", lang) in body
    assert body.count('class="chart"') == 4
    assert 'id="diagram"' in body


def test_plotly_is_inlined_once_and_no_cdn_is_named():
    html = render_html(_plan(), "en")
    assert html.count("<script>") == 1 + html.count("Plotly.newPlot")   # the library, then one per chart
    assert "cdn.plot.ly/plotly" not in html.split("</script>", 1)[1]


def test_plotly_linked_from_an_address_is_not_inlined():
    inlined = render_html(_plan(), "en")
    linked = render_html(_plan(), "en", plotly_src="/assets/plotly.js")
    assert linked.count('<script src="/assets/plotly.js"></script>') == 1
    assert linked.count("<script>") == linked.count("Plotly.newPlot") == inlined.count("Plotly.newPlot") == 4
    assert len(linked) < 1_000_000 < len(inlined)


def _plan():
    from .conftest import load_fixture

    return load_fixture()


def test_headline_says_what_how_long_and_how_much(plan):
    o = plan["options"][plan["recommended"]]
    for lang in ("en", "zh"):
        f = Fmt(lang)
        html = render_html(plan, lang)
        headline = re.search(r'<p class="headline" id="headline">(.*?)</p>', html, re.S).group(1)
        assert f.num(o["hardware"]["count"]) in headline
        assert o["hardware"]["accelerator"] in headline
        assert f.days(o["time"]["train_days"]) in headline
        assert f"${round(o['cost']['rent']['mid']):,}" in headline     # $9,198 / US$9,198
        assert f.money(o["cost"]["rent"]["low"], "USD") in headline


def test_a_missing_block_is_shown_as_missing_not_filled_in(plan):
    del plan["storage"]
    html = render_html(plan, "en")
    storage = html.split('id="storage"', 1)[1].split("</section>", 1)[0]
    assert t("block_missing", "en") in storage
    assert "<table" not in storage


def test_an_infeasible_plan_says_what_binds():
    from .conftest import infeasible_plan

    html = render_html(infeasible_plan(), "zh")
    assert t("headline.none", "zh") in html
    assert "5,900 x h100-sxm-80gb" in html
    assert t("dg.none", "zh") in html


def test_static_html_has_no_scripts_and_draws_charts_as_svg(plan):
    html = render_html(plan, "zh", static=True)
    assert "<script" not in html
    assert html.count('class="chart"') == 4 and html.count("<svg") >= 5


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_purchase_with_host_ram_for_its_offload_says_so_in_its_labels(lang):
    """Qwen3-30B-A3B LoRA on one RTX 4090 D bought, optimizer and parameters offloaded: the purchase is the card
    (CNY 12,999) plus 57 GiB of host RAM (CNY 11,115); the report's row read 'Purchase price, accelerators only'
    over CNY 24,114 and the headline 'the accelerators' purchase plus this job's power'."""
    from trainsizer.catalog import load_catalog
    from trainsizer.plan import make_plan
    from trainsizer.render.report.view import _cost_rows, headline, recommended

    job = {"model": "qwen3-30b-a3b", "method": "lora", "lora": {"rank": 16},
           "data": {"samples": 20000, "avg_tokens": 1500, "epochs": 2}, "seq_len": 4096,
           "global_batch": {"sequences": 32}, "hardware": {"accelerator": "rtx-4090d", "count": 1},
           "goal": {"deadline_days": 3, "budget": {"amount": 50000, "currency": "CNY"}, "procurement": "buy"}}
    plan = make_plan(job, load_catalog()).model_dump(mode="json", by_alias=True)
    o = plan["options"][recommended(plan)]
    assert o["cost"]["buy"]["host_ram"]["mid"] > 0     # the case: the layout offloads and the purchase adds RAM
    f = Fmt(lang)
    labels = [k for k, _ in _cost_rows(o, plan, f)]
    assert t("fact.capex", lang) not in labels and t("fact.capex_ram", lang) in labels
    assert any(k.endswith(t("fact.how_much.buy_full_ram", lang, basis="§").split("§")[1]) for k in labels)
    ram = "host RAM" if lang == "en" else "主机内存"
    assert ram in headline(plan, f) and all(ram in k for k in labels[:2])
