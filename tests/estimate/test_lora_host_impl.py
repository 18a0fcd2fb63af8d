"""Adapter implementations' host work (job lora.impl): Lit-GPT before v0.3.1 (litgpt-2023) builds LoRAQKVLinear's
padding index from a Python list every forward, one host conversion per adapted q / k / v output
(perf_constants.yaml lora.tensor_from_list_s_per_elem), nothing where q, k and v are all adapted or the layer is
compiled; PEFT before 0.12.0 (peft-base-dtype) keeps its adapters in the base dtype, so the fp32 input cast the hf
style charges PEFT does not run, and a QLoRA job cannot state it (en / zh)."""

from __future__ import annotations

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import estimate_time
from trainsizer.scenario import resolve_job

CAT = load_catalog()
LAYERS = 32  # llama-3.1-8b
BATCH = 8  # micro-batches of one sequence a step


def _job(impl: str | None = None, method: str = "lora", targets=("q_proj", "v_proj"), framework: str = "torchtune",
         recompute: str = "none", seq_len: int = 128, **strategy) -> dict:
    lora = {"rank": 8, "targets": list(targets)} | ({"impl": impl} if impl else {})
    return {"model": "llama-3.1-8b", "method": method, "lora": lora, "seq_len": seq_len, "precision": "bf16",
            "data": {"tokens": 1e8}, "global_batch": {"sequences": BATCH},
            "hardware": {"accelerator": "a100-sxm-80gb", "count": 1},
            "strategy": {"micro_batch": 1, "recompute": recompute, "framework": framework, **strategy}}


def _step(job: dict) -> float:
    sc = resolve_job(job, CAT)
    return float(estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False).step_s)


def _index_s() -> float:
    """Host seconds of one layer's index build for q_proj + v_proj on Llama 3.1 8B: 4,096 + 1,024 outputs."""
    return (4096 + 1024) * float(load_constants().raw["lora"]["tensor_from_list_s_per_elem"])


def test_litgpt_2023_builds_its_index_every_forward_on_a_host_bound_step():
    peft, old = _step(_job()), _step(_job("litgpt-2023"))
    # micro-batch 1 of 128 tokens is host-bound: the build lands almost whole (the soft maximum keeps a little)
    added = LAYERS * BATCH * _index_s()
    assert 0.8 * added < old - peft <= 1.01 * added
    # full recompute runs the forward, and so the build, twice
    again = _step(_job("litgpt-2023", recompute="full")) - _step(_job(recompute="full"))
    assert again == pytest.approx(2.0 * (old - peft), rel=0.15)


def test_no_build_where_qkv_are_all_adapted_after_the_fix_or_in_a_compiled_layer():
    assert _step(_job("litgpt-2023", targets=("q_proj", "k_proj", "v_proj"))) == \
        _step(_job(targets=("q_proj", "k_proj", "v_proj")))
    assert _step(_job("litgpt")) == _step(_job())  # v0.3.1 caches the index: PEFT's counts, nothing more
    assert _step(_job("litgpt-2023", torch_compile=True)) == _step(_job(torch_compile=True))


def test_the_build_grows_with_the_adapted_width():
    q_only = _step(_job("litgpt-2023", targets=("q_proj",))) - _step(_job(targets=("q_proj",)))
    q_v = _step(_job("litgpt-2023")) - _step(_job())
    assert q_v / q_only == pytest.approx(5120 / 4096, rel=0.05)


def test_peft_before_0_12_runs_no_fp32_input_cast_under_the_hf_style():
    hf, old = _step(_job(framework="hf", seq_len=2048)), _step(_job("peft-base-dtype", framework="hf", seq_len=2048))
    assert old < hf
    # torchtune's style never charges PEFT's cast: the two are one there
    assert _step(_job("peft-base-dtype")) == _step(_job())
    # and its adapters, gradients and AdamW moments take the base dtype: 2 B where PEFT's fp32 adapters take 4 B
    mem = {impl: estimate_memory(*_args(_job(impl, framework="hf"))).items_bytes for impl in (None, "peft-base-dtype")}
    assert mem["peft-base-dtype"]["lora_adapters"] == pytest.approx(0.5 * mem[None]["lora_adapters"])


def _args(job: dict):
    sc = resolve_job(job, CAT)
    return sc.model, sc.training, sc.system, sc.strategy


def test_qlora_may_state_adapters_in_the_base_dtype():
    # bitsandbytes' 4-bit weights stored as bf16 (bnb_4bit_quant_storage, FSDP-QLoRA) are floating, so PEFT before
    # 0.12 casts the adapters to bf16: run, not refused, with half the adapter bytes, as for LoRA; the step is the
    # same (bitsandbytes' Linear4bit runs no fp32 input cast under the Trainer's autocast with either dtype)
    peft = _step(_job(method="qlora", framework="hf", seq_len=2048))
    assert _step(_job("peft-base-dtype", method="qlora", framework="hf", seq_len=2048)) == peft
    mem = {impl: estimate_memory(*_args(_job(impl, method="qlora", framework="hf"))).items_bytes
           for impl in ("peft", "peft-base-dtype")}  # stated: hf's unstated QLoRA default is bf16 (known-gaps 268 (a))
    assert mem["peft-base-dtype"]["lora_adapters"] == pytest.approx(0.5 * mem["peft"]["lora_adapters"])
