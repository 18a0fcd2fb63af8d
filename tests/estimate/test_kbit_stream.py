"""QLoRA's fp32 stream (estimate/kbit_stream.py, step_time._kbit_fp32_stream_time; docs/known-gaps.md 243 (a)): under
PEFT's prepare_model_for_kbit_training the norms stay fp32, bitsandbytes' Linear4bit returns its input's dtype, so the
4-bit linears reading a norm (and down_proj, reading the fp32 MLP product) cast their inputs to 16 bit and their
outputs to fp32, and the residual stream, RoPE and the MLP product run fp32; with the compute dtype taken from the fp32
input (strategy.bnb_compute_from_input) each dequantised weight is cast to fp32 and back as well."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.inputs import Training
from trainsizer.estimate.kbit_stream import FP32_INPUT_LINEARS, fp32_stream
from trainsizer.estimate.model_states import kbit_upcast
from trainsizer.estimate.step_time import estimate_time
from trainsizer.scenario import resolve_job

from .test_perf_common import llama8b, mixtral

CAT = load_catalog()
C = load_constants().raw["kbit_fp32_stream"]


def _training(targets=("q_proj", "k_proj", "v_proj", "o_proj")) -> Training:
    return Training(method="qlora", seq_len=4096, global_batch_seqs=4, lora_rank=16, lora_targets=targets)


def _job(micro_batch: int = 4, model: str = "mistral-7b", **strategy) -> dict:
    return {"model": model, "method": "qlora", "lora": {"rank": 16, "targets": ["q_proj", "k_proj", "v_proj", "o_proj"]},
            "seq_len": 4096, "precision": "bf16", "data": {"tokens": 1e8},
            "global_batch": {"sequences": micro_batch}, "hardware": {"accelerator": "a100-sxm-80gb", "count": 1},
            "strategy": {"micro_batch": micro_batch, "recompute": "full", "framework": "hf", **strategy}}


def _step(job: dict) -> float:
    sc = resolve_job(job, CAT)
    return float(estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False).step_s)


def test_the_counts_of_a_llama_layer():
    """Llama 3.1 8B (hidden 4,096, 1,024-wide k / v, MLP 14,336), adapters on q / k / v / o: o_proj reads the
    attention's 16-bit output, so neither its cast nor its adapter's fp32 input counts."""
    m = llama8b()
    h, kv, f = 4096.0, 1024.0, 14336.0
    c = fp32_stream(m, _training(), C)
    assert c.up_elems == h + 2 * kv + 2 * f + h  # q, k, v, gate, up, down outputs
    assert c.down_elems == 5 * h + f + 3 * h + (h + 2 * kv)  # linear inputs, lora_A's on q / k / v, attention's q / k / v
    assert c.casts == 2 * 6 + 3 + 3
    assert c.weight_elems == h * (h + 2 * kv) + 3 * h * f
    assert c.extra_bytes == pytest.approx(2 * C["norm"] * h + (C["residual_attention"] + C["residual_mlp"]) * h
                                          + C["rope"] * (h + kv) + C["swiglu"] * f
                                          + 3 * C["adapter_in"] * h + C["adapter_out"] * (h + 2 * kv))


def test_an_moe_layer_counts_its_routed_slots_and_every_experts_weights():
    """Mixtral-8x7B (8 experts of 14,336, top 2) under transformers 4.x's loop: the router and each routed slot's w1 /
    w3 / w2 casts, the fp32 gather and combine, and all eight experts' weights; without the loop (grouped_mm) the
    attention part only."""
    m = mixtral()
    h, kv, f, e, k = 4096.0, 1024.0, 14336.0, 8.0, 2.0
    c = fp32_stream(m, _training(), C)
    assert c.up_elems == h + 2 * kv + e + k * (2 * f + h)
    assert c.down_elems == 3 * h + 3 * h + (h + 2 * kv) + h + k * (2 * h + f)
    assert c.weight_elems == h * (h + 2 * kv) + h * e and c.expert_weight_elems == e * 3 * h * f
    assert c.extra_bytes == pytest.approx(fp32_stream(m, _training(), C, False).extra_bytes + k * (
        C["swiglu"] * f + (C["routed_gather"] + C["routed_combine"]) * h))
    attention_only = fp32_stream(m, _training(), C, False)
    assert attention_only.expert_weight_elems == 0.0 and attention_only.up_elems == h + 2 * kv


def test_o_proj_is_not_an_fp32_input_linear():
    """An adapter on o_proj alone adds no fp32 adapter work; one on q_proj does."""
    assert "o_proj" not in FP32_INPUT_LINEARS
    h, kv, f = 4096.0, 1024.0, 14336.0
    only_o = fp32_stream(llama8b(), _training(("o_proj",)), C)
    assert only_o.down_elems == 5 * h + f + (h + 2 * kv) and only_o.casts == 2 * 6 + 3
    only_q = fp32_stream(llama8b(), _training(("q_proj",)), C)
    assert only_q.down_elems == only_o.down_elems + h and only_q.extra_bytes > only_o.extra_bytes


def test_the_residual_flag_follows_the_memory_rule():
    """PEFT's upcast where the job states it or the stack runs it unstated (deepspeed; not hf, TRL >= 0.26, nor
    torchtune: docs/known-gaps.md 258 (a)); DeepSpeed's 16-bit engine casts back."""
    class S:
        kbit_upcast = None
        loss_impl = "auto"

    assert kbit_upcast(S(), "deepspeed") == (True, True)
    assert kbit_upcast(S(), "hf") == kbit_upcast(S(), "torchtune") == (False, False)
    S.kbit_upcast = True
    assert kbit_upcast(S(), "hf") == (True, True)
    S.loss_impl = "native"
    assert kbit_upcast(S(), "hf") == (True, False)
    S.kbit_upcast = False
    assert kbit_upcast(S(), "hf") == (False, False)


def test_the_fp32_stream_slows_a_one_gpu_qlora_step():
    """Mistral-7B, one A100, four packed 4,096-token rows, full recompute: the stream costs several per cent of the
    step, the weight casts of an fp32 compute dtype more on top."""
    off = _step(_job(kbit_upcast=False))
    on = _step(_job(kbit_upcast=True))
    weights = _step(_job(kbit_upcast=True, bnb_compute_from_input=True))
    assert on > 1.1 * off
    assert weights > on
    assert _step(_job(bnb_compute_from_input=True, kbit_upcast=False)) == off  # the weight casts need an fp32 input


def test_the_expert_loop_pays_the_routed_casts():
    """Mixtral-8x7B QLoRA on one A100 under the expert loop: the stream costs more than a tenth of the step."""
    def step(**s):
        return _step(_job(2, "mixtral-8x7b", experts_implementation="eager", **s))

    assert step(kbit_upcast=True, bnb_compute_from_input=True) > 1.1 * step(kbit_upcast=False)


@settings(max_examples=4, deadline=None)
@given(mb=st.sampled_from([1, 2, 4, 8]))
def test_the_activation_part_grows_with_the_tokens(mb):
    """The activation casts and fp32 element-wise work are per token: twice the micro-batch, at least twice the
    seconds (the weight casts are per pass and off here)."""
    def extra(b):
        return _step(_job(b, kbit_upcast=True)) - _step(_job(b, kbit_upcast=False))

    assert extra(2 * mb) == pytest.approx(2 * extra(mb), rel=0.02)


@pytest.mark.parametrize("strategy", [{"torch_compile": True}, {"autocast": False}])
def test_not_in_a_compiled_layer_nor_without_autocast(strategy):
    assert _step(_job(kbit_upcast=True, **strategy)) == _step(_job(kbit_upcast=False, **strategy))


@pytest.mark.parametrize("framework,counted", [("deepspeed", True), ("hf", False), ("torchtune", False)])
def test_unset_follows_the_framework(framework, counted):
    """Unset, the memory estimate's rule: PEFT's upcast on a stack that still runs it (deepspeed), a 16-bit stream
    under hf (TRL >= 0.26: docs/known-gaps.md 258 (a)) and torchtune."""
    unset = _job(framework=framework)
    assert (_step(unset) != _step(_job(framework=framework, kbit_upcast=False))) is counted
