"""`trainsizer --lang zh accept`: the threshold sources and the HTML report in Chinese (each check's `why`
stays the check's English text, as result files and the history database keep it)."""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

from trainsizer.accept import burnin, health, inventory, platforms, report
from trainsizer.accept.criteria import from_platform
from trainsizer.accept.results import RunResult
from trainsizer.messages import msg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from english_words import english_words  # noqa: E402


def _prose() -> frozenset[str]:
    """The platform table's source descriptions, quoted as written (data, not sentences of trainsizer)."""
    table = platforms._table()
    return frozenset(re.findall(r"[A-Za-z][\w.\-]*", " ".join(str(v) for v in table["sources"].values())))


def _checks(ctx):
    return [*inventory.run(ctx), *health.run(ctx)]


def test_platform_thresholds_name_their_source_in_chinese():
    crit = from_platform("h100-sxm-80gb")
    limits = [crit.gpu_count, crit.gpu_model, crit.gpu_memory_gib_min, crit.hbm_gb_s_min, crit.rdma_gbps_min,
              crit.busbw_intra_gb_s_min.all_reduce, crit.busbw_inter_gb_s_min.all_gather,
              *crit.gemm_tflops_min.values()]
    for limit in limits:
        assert limit.source_msg is not None, limit.source
        from trainsizer.messages import stored

        zh = stored(limit.source_msg).tr("zh")
        assert stored(limit.source_msg) == limit.source  # the English kept in result files is unchanged
        assert not english_words(zh, ["h100-sxm-80gb", "NVLS", "HGX"], _prose()), zh


def test_html_report_and_table_in_chinese(h100_ctx):
    checks = _checks(h100_ctx)
    assert any(c.source_msg for c in checks)
    res = RunResult(run_id="r1", started_at="2026-11-04T00:00:00", complete=True, verdict="pass",
                    nodes=[{"hostname": "node01"}], checks=checks, platform="h100-sxm-80gb",
                    criteria_source=str(msg("acc_criteria_defaults")))
    page = report.to_html(res, "zh")
    assert 'lang="zh-CN"' in page and "验收" in page and "阈值来源" in page
    for c in checks:  # the why text is the check's own, and is left out of the language check
        page = page.replace(f"<td>{html.escape(c.why)}</td>", "")
    text = re.sub(r"<[^>]+>|<style>.*?</style>|<pre>.*?</pre>", " ", re.sub(r"<style>.*?</style>|<pre>.*?</pre>",
                                                                           " ", page, flags=re.S))
    words = {c.name for c in checks} | {c.unit or "" for c in checks} | {"node01", "r1", "h100-sxm-80gb", "aznhc"}
    english = english_words(text, [w for s in words for w in re.findall(r"[A-Za-z][\w.\-]*", s)], _prose())
    assert not english, (english, text)
    assert "<h1>Acceptance: PASS</h1>" in report.to_html(res)


def test_burnin_sources_are_messages():
    from trainsizer.accept.criteria import suite_check

    rule = suite_check(15, "acc_rule_delta_ecc")
    assert rule == "docs/acceptance.md section 3 check #15: delta ECC == 0" and "ECC 增量" in rule.tr("zh")
    assert burnin.suite_check is suite_check
