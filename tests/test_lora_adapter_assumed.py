"""QLoRA's lora.impl left unstated follows the stack a user of `framework: hf` runs today: TRL's SFTTrainer casts a
4-bit model's trainable parameters to bf16 after get_peft_model since v0.26.0 (trl #4577), so hf and auto count the
adapters, their gradients and AdamW moments in 16 bit (peft-base-dtype) unless the job states kbit_upcast true (TRL <=
0.25 or PEFT's own recipe: PEFT's fp32 adapters); other stacks keep PEFT's fp32, torchtune its training dtype. Resolved
once (model_states.lora_impl_default, scenario.lora_impl); the estimate says what it assumed in JSON and table (en /
zh); a stated lora.impl is kept; LoRA on a non-quantised base is untouched (docs/known-gaps.md 268 (a))."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from trainsizer.catalog import load_catalog
from trainsizer.estimate.model_states import lora_adapters_16bit, lora_impl_default
from trainsizer.evaluate import evaluate
from trainsizer.render.estimate_view import print_estimate
from trainsizer.scenario import resolve_job

JOB = {"name": "qlora", "model": "llama-3.1-8b", "method": "qlora", "lora": {"rank": 64}, "seq_len": 2048,
       "global_batch": {"sequences": 4}, "data": {"tokens": 1.0e8},
       "hardware": {"accelerator": "h100-sxm-80gb", "count": 1, "per_node": 1}}


def _result(strategy: dict, lora: dict | None = None, job: dict = JOB) -> dict:
    cat = load_catalog()
    spec = {**job, "lora": {**job["lora"], **(lora or {})}, "strategy": {"micro_batch": 2, **strategy}}
    return evaluate(resolve_job(spec, cat), cat)


def _table(res: dict, lang: str) -> str:
    buf = io.StringIO()
    print_estimate(res, lang, Console(file=buf, width=600))
    return buf.getvalue()


def _item(res: dict, name: str) -> float:
    return res["memory"]["items"][name]["gib"]


@pytest.mark.parametrize("name,kbit,impl,reason", [
    ("hf", None, "peft-base-dtype", "lora_adapter_default_hf"),
    ("auto", None, "peft-base-dtype", "lora_adapter_default_auto"),
    ("hf", False, "peft-base-dtype", "lora_adapter_default_hf"),
    ("hf", True, "peft", "lora_adapter_default_kbit"),
    ("auto", True, "peft", "lora_adapter_default_kbit"),
    ("torchtune", None, "peft", "lora_adapter_default_torchtune"),
    ("deepspeed", None, "peft", "lora_adapter_default_peft"),
    ("fsdp", None, "peft", "lora_adapter_default_peft")])
def test_the_unstated_default_by_framework(name, kbit, impl, reason):
    assert lora_impl_default("qlora", name, kbit) == (impl, reason)
    assert lora_impl_default("lora", name, kbit) == ("peft", None)  # a non-quantised base: PEFT's fp32 on every stack


def test_which_adapters_are_16_bit():
    assert lora_adapters_16bit("hf", "peft-base-dtype") and lora_adapters_16bit("torchtune", "peft")
    assert not lora_adapters_16bit("hf", "peft") and not lora_adapters_16bit("deepspeed", "peft")


def test_an_unstated_adapter_dtype_on_hf_is_trls_bf16_and_said():
    fp32 = _result({"framework": "hf"}, {"impl": "peft"})
    for strategy, reason in (({"framework": "hf"}, "lora_adapter_default_hf"), ({}, "lora_adapter_default_auto")):
        res = _result(strategy)
        assert res["framework"]["lora_adapter"] == {"requested": None, "assumed": "peft-base-dtype",
                                                    "adapters_16bit": True, "reason": reason}
        # the adapters and their gradients in 2 bytes instead of 4, the memory lighter, the time unchanged
        assert _item(res, "lora_adapters") == pytest.approx(_item(fp32, "lora_adapters") / 2, abs=2e-4)
        assert _item(res, "gradients") == pytest.approx(_item(fp32, "gradients") / 2, abs=2e-4)
        assert res["memory"]["per_gpu_gib"] < fp32["memory"]["per_gpu_gib"]
        assert res["time"]["tokens_per_s"] == pytest.approx(fp32["time"]["tokens_per_s"], rel=1e-3)
        en, zh = _table(res, "en"), _table(res, "zh")
        assert "QLoRA adapters assumed: 16-bit" in en and "v0.26.0" in en and "write lora.impl: peft" in en
        assert "假定的 QLoRA 适配器精度：16 位" in zh and "v0.26.0" in zh


def test_a_stated_impl_or_kbit_upcast_keeps_peft_fp32_and_says_so():
    res = _result({"framework": "hf"}, {"impl": "peft"})
    assert res["framework"]["lora_adapter"] == {"requested": "peft", "assumed": "peft", "adapters_16bit": False,
                                                "reason": None}
    assert "QLoRA adapters assumed: fp32" in _table(res, "en") and "lora.impl not stated" not in _table(res, "en")
    old = _result({"framework": "hf", "kbit_upcast": True})
    assert old["framework"]["lora_adapter"]["assumed"] == "peft"
    assert "TRL <= 0.25" in _table(old, "en") and "fp32（PEFT 的 autocast_adapter_dtype）" in _table(old, "zh")


def test_nothing_is_said_or_moved_outside_qlora():
    res = _result({}, job={**JOB, "method": "lora"})
    assert "lora_adapter" not in res["framework"]
    assert "QLoRA adapters assumed" not in _table(res, "en")
    stated = _result({}, {"impl": "peft"}, {**JOB, "method": "lora"})
    assert res["memory"]["per_gpu_gib"] == stated["memory"]["per_gpu_gib"]
