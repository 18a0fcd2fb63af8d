"""`trainsizer estimate`'s tables read in the reader's language: Chinese lines use full-width brackets, and a
tiny part of the step is shown in ms, not in E notation."""

from __future__ import annotations

import re
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from trainsizer.api import estimate, resolve
from trainsizer.render.estimate_view import _seconds, print_estimate

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "lora-8b-one-gpu.yaml"
# a Han character followed by an ASCII bracket, or a figure's bracket after Chinese ("租用 (USD)", "(典型 15.1)")
HAN_ASCII_PAREN = re.compile(r"[\u4e00-\u9fff] ?\(|\([\u4e00-\u9fff]")


def _shown(lang: str) -> str:
    out = StringIO()
    print_estimate(estimate(resolve(EXAMPLE)), lang, Console(file=out, width=200, soft_wrap=False))
    return out.getvalue()


def test_chinese_estimate_uses_full_width_brackets():
    text = _shown("zh")
    assert not HAN_ASCII_PAREN.search(text), HAN_ASCII_PAREN.search(text)
    assert "（典型" in text and "（USD）" in text


def test_english_estimate_keeps_its_brackets():
    text = _shown("en")
    assert "Rent (USD)" in text and "(typical " in text and "E-" not in text


@pytest.mark.parametrize(("seconds", "lang", "shown"), [(6.08e-4, "en", "0.608 ms"), (41.2, "zh", "41.2 s"),
                                                         (0.05, "en", "0.05 s")])
def test_a_part_of_the_step_reads_in_s_or_ms(seconds, lang, shown):
    assert _seconds(seconds, lang) == shown


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_estimate_says_which_hardware_and_layout_it_estimated(lang):
    """The tables named neither: a job's own strategy (or the search's choice) was only in --json."""
    from trainsizer.layout_text import layout_in
    from trainsizer.render.i18n import t

    result = estimate(resolve(EXAMPLE))
    text = _shown(lang)
    assert f"{t('plan_layout', lang)}{t('colon', lang)}{layout_in(result['job']['strategy'], lang)}" in text
    assert ("1 x l40s (one node)" if lang == "en" else "1 张 l40s（单节点）") in text


def test_a_multi_node_estimate_counts_its_nodes_and_names_the_network():
    job = Path(__file__).resolve().parents[2] / "examples" / "sft-70b-16gpu.yaml"
    out = StringIO()
    print_estimate(estimate(resolve(job)), "en", Console(file=out, width=200, soft_wrap=False))
    assert "Hardware: 16 x h100-sxm-80gb (2 nodes x 8 GPUs), ib-ndr400" in out.getvalue()
    assert "Layout: DP16 ZeRO-3 mb1, full recompute, optimizer offloaded" in out.getvalue()


@pytest.mark.parametrize(("lang", "budget", "cost"), [("en", "$500,000", "$"), ("zh", "US$50万", "US$")])
def test_the_goal_writes_budget_and_cost_as_money_on_one_row_each(lang, budget, cost):
    """Not 'budget 500,000' with 'budget currency USD' on a row of its own, nor a typical cost without its currency."""
    job = EXAMPLE.parent / "sft-70b-16gpu.yaml"
    out = StringIO()
    print_estimate(estimate(resolve(job)), lang, Console(file=out, width=200, soft_wrap=False))
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in out.getvalue().splitlines()
            if line.count("│") == 3}
    goal = {k: v for k, v in rows.items() if k.startswith(("Goal", "目标"))}
    assert budget in goal.values() and not any("currency" in k or "币种" in k for k in goal)
    typical = [v for k, v in goal.items() if "typical cost" in k or "典型成本" in k]
    assert typical and all(v.startswith(cost) for v in typical)


@pytest.mark.parametrize(("lang", "row"), [("en", "GPU memory capacity"), ("zh", "显存容量")])
def test_the_memory_table_says_what_the_capacity_is_of(lang, row):
    """A bare "Capacity" / "容量" under the memory breakdown left the reader to guess: of the GPU's memory. The L40S
    gives a process 44.5 GiB of its 48 GB label (ECC on; catalog memory_driver), and the line below says so."""
    shown = _shown(lang)
    assert re.search(rf"│ {row} +│ +44\.5", shown), shown
    assert ("what CUDA hands a process" if lang == "en" else "CUDA 交给进程") in shown.replace("\n", ""), shown


def test_a_single_price_is_one_figure_not_a_range():
    """A rent priced from one quote read '409,702 – 409,702 (typical 409,702)'."""
    job = Path(__file__).resolve().parents[2] / "examples" / "pretrain-70b-gb200-nvl72.yaml"
    result = estimate(resolve(job))
    rent = result["cost"]["rent"]
    out = StringIO()
    print_estimate(result, "en", Console(file=out, width=200, soft_wrap=False))
    text = out.getvalue()
    if rent["low"] == rent["high"]:
        assert " – " not in next(line for line in text.splitlines() if "Rent (USD)" in line), text
    else:
        assert "(typical " in text


def test_memory_table_writes_gib_to_a_tenth_so_its_rows_add_up():
    """The memory table's total, capacity and headroom read as the capacity sentence writes them (139.8 GiB,
    not "140" beside "139.8"), so total + headroom = capacity as printed, to the last tenth's rounding."""
    text = _shown("en")
    rows = {m.group(1).strip(): float(m.group(2).replace(",", ""))
            for m in re.finditer(r"│ ([A-Za-z ()]+?)\s*│\s*([\d,]+\.\d)\s*│", text)}
    assert {"Total", "GPU memory capacity", "Headroom"} <= rows.keys(), rows
    assert rows["Total"] + rows["Headroom"] == pytest.approx(rows["GPU memory capacity"], abs=0.11)
    assert f"capacity {rows['GPU memory capacity']:.1f} GiB" in text


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_nvl72_estimate_counts_trays_in_racks_not_nodes(lang):
    """128 GB200 read "(32 nodes x 4 GPUs)": the hardware line counts trays and the NVL72 racks (scale-up domains)
    they sit in, from the JSON's hardware.scaleup_domains, as the plan's tier does."""
    nvl = Path(__file__).resolve().parents[2] / "examples" / "pretrain-70b-gb200-nvl72.yaml"
    result = estimate(resolve(nvl))
    hw = result["job"]["hardware"]
    assert (hw["scaleup_domains"], hw["scaleup_domain_gpus"]) == (2, 72)
    out = StringIO()
    print_estimate(result, lang, Console(file=out, width=200, soft_wrap=False))
    line = next(x for x in out.getvalue().splitlines() if "gb200" in x)
    assert "32" in line and "72" in line
    assert ("trays" in line and "nodes" not in line) if lang == "en" else ("托盘" in line and "个节点" not in line)
    assert "scaleup_domains" not in estimate(resolve(EXAMPLE))["job"]["hardware"]  # one L40S: a domain is a host


@pytest.mark.parametrize(("lang", "budget", "unchecked"), [("en", "CN¥20,000", "not checked"), ("zh", "¥2万", "未检查")])
def test_a_budget_in_another_currency_than_the_price_reads_not_checked_not_a_dash(lang, budget, unchecked):
    """One RTX 5090 (priced in USD only) under a CNY budget: the budget rows were dropped without a word."""
    job = {"model": "qwen2.5-7b", "method": "lora", "data": {"tokens": 1.0e7}, "seq_len": 2048,
           "global_batch": {"sequences": 16}, "hardware": {"accelerator": "rtx-5090", "count": 1},
           "strategy": {"dp": 1, "micro_batch": 1, "recompute": "full"},
           "goal": {"procurement": "buy", "budget": {"amount": 20000, "currency": "CNY"}}}
    out = StringIO()
    print_estimate(estimate(resolve(job)), lang, Console(file=out, width=200, soft_wrap=False))
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in out.getvalue().splitlines()
            if line.count("│") == 3}
    goal = {k: v for k, v in rows.items() if k.startswith(("Goal", "目标"))}
    assert budget in goal.values() and any(v.startswith(unchecked) for v in goal.values()), goal


QLORA_TT01 = {"model": "llama-2-7b", "method": "qlora", "data": {"tokens": 1e6}, "seq_len": 512,
              "lora": {"rank": 8, "targets": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                              "down_proj"]},
              "global_batch": {"sequences": 2}, "hardware": {"accelerator": "a100-sxm-80gb", "count": 1},
              "strategy": {"micro_batch": 2, "framework": "torchtune", "recompute": "full"}}


@pytest.mark.parametrize(("lang", "row"), [("en", "Reserved at model init"), ("zh", "模型初始化时预留的显存")])
def test_the_qlora_inits_reserved_bytes_show_where_they_set_the_reserved_peak(lang, row):
    """torchtune 0.1's QLoRA init (strategy.nf4_quantize_unchunked, known-gaps 233) sets the reserved peak: the JSON's
    init_reserved_gib was not in the table. Shown as the JSON gives it, above the allocated total; absent unstated."""
    on = estimate(resolve({**QLORA_TT01, "strategy": {**QLORA_TT01["strategy"], "nf4_quantize_unchunked": True}}))
    mem = on["memory"]
    assert mem["init_reserved_gib"] > mem["per_gpu_gib"] + mem["allocator_growth_gib"]
    out = StringIO()
    print_estimate(on, lang, Console(file=out, width=200, soft_wrap=False))
    line = next((x for x in out.getvalue().splitlines() if row in x), "")
    assert f"{mem['init_reserved_gib']:.1f}" in line, out.getvalue()
    out = StringIO()
    print_estimate(estimate(resolve(QLORA_TT01)), lang, Console(file=out, width=200, soft_wrap=False))
    assert row not in out.getvalue()


Z3 = {"model": "llama-3.1-8b", "method": "full", "data": {"tokens": 1e6}, "seq_len": 2048,
      "global_batch": {"sequences": 8}, "precision": "fp16", "hardware": {"accelerator": "a100-sxm-80gb", "count": 8},
      "strategy": {"dp": 8, "zero": 3, "micro_batch": 1, "framework": "hf"}}


@pytest.mark.parametrize(("lang", "row"), [("en", "DeepSpeed ZeRO pools, reserved"), ("zh", "DeepSpeed ZeRO 内存池")])
def test_deepspeed_zero_pools_show_beside_the_peak(lang, row):
    """DeepSpeed ZeRO-3's reduce-stream pool (estimate.zero_pools, known-gaps 234 (g)) was in the JSON only: a row in
    the table where the JSON has any, with its figure; none under FSDP, whose engine has no such stream here."""
    mem = estimate(resolve(Z3))["memory"]
    assert mem["zero_pool_gib"] > 0
    out = StringIO()
    print_estimate(estimate(resolve(Z3)), lang, Console(file=out, width=200, soft_wrap=False))
    line = next((x for x in out.getvalue().splitlines() if row in x), "")
    assert f"{mem['zero_pool_gib']:.1f}" in line, out.getvalue()
    fsdp = {**Z3, "strategy": {"dp": 8, "fsdp": "full", "micro_batch": 1, "framework": "hf"}}
    assert estimate(resolve(fsdp))["memory"]["zero_pool_gib"] == 0
    out = StringIO()
    print_estimate(estimate(resolve(fsdp)), lang, Console(file=out, width=200, soft_wrap=False))
    assert row not in out.getvalue()
