"""strategy.nf4_double_quant: bitsandbytes' double quantisation of the NF4 block constants (bnb_4bit_use_double_quant,
Lightning's nf4-dq). Off: one fp32 absmax a 64-value block (0.5 bit a weight against 0.127) and no absmax
dequantisation before each NF4 kernel (functional.py dequantize_4bit); unset = the estimate's count (double
quantisation; the hf style's nested dequantisation). known-gaps 190 (b)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import TrainsizerError
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import estimate_time
from trainsizer.scenario import resolve_job

CAT = load_catalog()
DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data"


def _job(method: str = "qlora", framework: str = "hf", **strategy) -> dict:
    lora = {"lora": {"rank": 8}} if "lora" in method else {}
    return {"model": "llama-2-7b", "method": method, **lora, "seq_len": 512, "precision": "bf16",
            "data": {"tokens": 1e8}, "global_batch": {"sequences": 8},
            "hardware": {"accelerator": "a100-sxm-40gb", "count": 1},
            "strategy": {"micro_batch": 1, "recompute": "none", "framework": framework, **strategy}}


def _run(job: dict) -> tuple[float, dict]:
    sc = resolve_job(job, CAT)
    step = float(estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False).step_s)
    mem = estimate_memory(sc.model, sc.training, sc.system, sc.strategy)
    return step, {k: float(v) for k, v in mem.items_bytes.items()}


def test_unset_is_double_quantised():
    assert _run(_job()) == _run(_job(nf4_double_quant=True))


def test_single_quantised_constants_take_half_a_bit_a_weight():
    """0.5 - 0.127 = 0.373 bit more a quantised weight; nothing else in memory but the allocator's fragmentation, a
    share of what is allocated."""
    _, dq = _run(_job())
    _, single = _run(_job(nf4_double_quant=False))
    assert single["quant_constants"] == pytest.approx(dq["quant_constants"] * 0.5 / 0.127, rel=1e-6)
    rest = ("quant_constants", "fragmentation")
    assert {k: v for k, v in single.items() if k not in rest} == pytest.approx(
        {k: v for k, v in dq.items() if k not in rest})
    assert single["fragmentation"] > dq["fragmentation"]


@pytest.mark.parametrize("framework", ["hf", "torchtune"])
def test_double_quantisation_costs_its_nested_kernels(framework):
    """The nested absmax dequantisation adds kernels (and their host issue) to every use of a 4-bit weight: off is
    never slower; stated on, a style that counts one kernel (torchtune's torchao NF4) pays them too."""
    single = _run(_job(framework=framework, nf4_double_quant=False))[0]
    double = _run(_job(framework=framework, nf4_double_quant=True))[0]
    assert single < double


def test_refused_off_qlora():
    with pytest.raises(TrainsizerError, match="nf4_double_quant"):
        _run(_job(method="lora", nf4_double_quant=False))


def test_litgpt_rows_state_what_their_precision_plugin_ran():
    """Lightning's BitsandbytesPrecision: 'nf4-dq' (the 2023 table's NF4-DQ rows) double-quantises, 'nf4' (the 2023 NF4
    rows, the 2024 config hub's bnb.nf4) does not; no other row states the field."""
    for name in ("heldout_2026l_finetune_litgpt.csv", "heldout_2026l_finetune_litgpt_a10g.csv",
                 "heldout_2026l_finetune_litgpt_a100.csv"):
        for r in csv.DictReader((DATA / name).open(encoding="utf-8")):
            want = "" if r["method"] != "qlora" else ("true" if "_nf4dq_" in r["id"] else "false")
            assert r["nf4_double_quant"] == want, (name, r["id"])
            assert not r["refused"].startswith("bnb.nf4 without double"), r["id"]
