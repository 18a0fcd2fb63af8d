"""`trainsizer --lang zh accept`: the threshold sources, each check's explanation and the HTML report in Chinese
(result files and the history database keep the English text beside the message it was written from)."""

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
    for c in checks:  # what a check measured (GPU names, versions) is data, not a sentence
        page = page.replace(f"<td>{html.escape(str(c.measured))}</td>", "")
    text = re.sub(r"<[^>]+>|<style>.*?</style>|<pre>.*?</pre>", " ", re.sub(r"<style>.*?</style>|<pre>.*?</pre>",
                                                                           " ", page, flags=re.S))
    # a unit that is a word ("ports", "links") reads in Chinese too: only symbols (GiB) stay as written
    words = {c.name for c in checks} | {"node01", "r1", "h100-sxm-80gb", "aznhc", "torch"}
    english = english_words(text, [w for s in words for w in re.findall(r"[A-Za-z][\w.\-]*", s)], _prose())
    assert not english, (english, text)
    assert "<h1>Acceptance: PASS</h1>" in report.to_html(res)


def test_burnin_sources_are_messages():
    from trainsizer.accept.criteria import suite_check

    rule = suite_check(15, "acc_rule_delta_ecc")
    assert rule == "docs/acceptance.md section 3 check #15: delta ECC == 0" and "ECC 增量" in rule.tr("zh")
    assert burnin.suite_check is suite_check


def test_each_checks_explanation_reads_in_chinese_and_stays_english_in_the_file(h100_ctx, cpu_ctx):
    """`why` is written from catalogue messages (CheckResult.why_msg): the table, the HTML page and the progress
    lines show it in the reader's language, while the result file keeps the English text beside the message."""
    from trainsizer.accept import checkpoint, storage
    from trainsizer.accept.results import CheckResult

    checks = [*_checks(h100_ctx), *storage.run(cpu_ctx), *checkpoint.run(cpu_ctx)]
    worded = [c for c in checks if c.why_msg]
    assert len(worded) == len([c for c in checks if c.why]), [c.why for c in checks if not c.why_msg]
    for c in worded:
        zh = report.why_text(c, "zh")
        assert re.search(r"[\u4e00-\u9fff]", zh) or not re.search(r"[A-Za-z]{4,}", zh), (c.name, zh)
        assert report.why_text(c, "en") == c.why
        back = CheckResult.model_validate_json(c.model_dump_json())
        assert back.why == c.why and report.why_text(back, "zh") == zh
    links = next(c for c in worded if c.name == "inventory.nvlink_up")
    assert report.why_text(links, "zh").endswith("条链路") and links.why.endswith(" links") and links.unit == "links"
    assert report.unit_text(links, "zh") == "条链路" and report.unit_text(links, "en") == "links"
    compare = next(c for c in worded if c.name == "inventory.gpu_memory")
    assert report.why_text(compare, "zh").startswith("最小的 GPU 显存 ")
    assert compare.why.startswith("smallest GPU memory ")


def test_an_explanation_added_to_keeps_both_parts_in_either_language(h100_ctx):
    from trainsizer.accept.context import why_of

    res = h100_ctx.at_least("gemm.bf16", 500.0, None, "TFLOP/s", msg("acc_what_gemm", dtype="bf16", n=8192))
    h100_ctx.add_why(res, msg("acc_why_stragglers", gpus="[3]", ratio=0.9, median="700", unit="TFLOP/s"))
    assert res.why == ("slowest GPU, bf16 8192^3 matmul: measured 500 TFLOP/s; no threshold in the criteria; "
                       "GPUs [3] below 0.9 x node median 700 TFLOP/s")
    assert report.why_text(res, "zh") == ("最慢的 GPU，bf16 8192^3 矩阵乘：实测 500 TFLOP/s；判据中没有阈值；"
                                          "GPU [3] 低于节点中位数 700 TFLOP/s 的 0.9 倍")
    assert why_of(res) == res.why


def test_telemetry_and_cache_notes_read_in_chinese(cpu_ctx):
    """The reasons a check is skipped for lack of telemetry, and how a cold read emptied the cache, are part of
    the explanation: in the reader's language too."""
    from trainsizer.accept import checkpoint
    from trainsizer.accept.telemetry import open_telemetry

    _, why = open_telemetry("none")
    assert why == "telemetry disabled (--telemetry none)" and "遥测已关闭" in why.tr("zh")
    restore = next(c for c in checkpoint.run(cpu_ctx) if c.name == "checkpoint.restore")
    assert restore.why.startswith("cold restore, ")
    assert not re.search(r"page cache dropped|O_DIRECT \(|LIMITATION", report.why_text(restore, "zh"))
