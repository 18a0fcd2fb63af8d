"""QLoRA's bitsandbytes memory options (memory.nf4_options): strategy.nf4_saves_input (bitsandbytes < 0.43.2: MatMul4Bit
keeps every 4-bit linear's input A for the backward), strategy.nf4_lm_head (Lightning's BitsandbytesPrecision quantises
the LM head too), the dequantised 16-bit transient of the largest NF4 weight (memory._nf4_dequant_transient), and the
4-bit head's dequantisation at every call (strategy.lm_head_chunk; step_time._nf4_head_time)."""

from __future__ import annotations

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import TrainsizerError
from trainsizer.estimate.memory import estimate_memory
from trainsizer.messages import msg, tr
from trainsizer.scenario import resolve_job

CAT = load_catalog()


def _job(method: str = "qlora", recompute: str = "none", framework: str = "hf", **strategy) -> dict:
    lora = {"lora": {"rank": 16, "targets": ["q_proj", "v_proj"]}} if "lora" in method else {}
    return {"model": "llama-3.1-8b", "method": method, **lora, "seq_len": 1024, "precision": "bf16",
            "data": {"tokens": 1e8}, "global_batch": {"sequences": 8},
            "hardware": {"accelerator": "a100-sxm-80gb", "count": 1},
            "strategy": {"micro_batch": 2, "recompute": recompute, "framework": framework, **strategy}}


def _items(job: dict) -> dict[str, float]:
    sc = resolve_job(job, CAT)
    return estimate_memory(sc.model, sc.training, sc.system, sc.strategy).items_bytes


def test_saved_inputs_add_the_frozen_linears_inputs_per_layer_and_token():
    """With q / v adapters the attention input is kept already; MatMul4Bit adds the MLP's input (gate / up read one
    tensor) and down_proj's input; o_proj's is a view of the flash kernel's output, kept already."""
    sc = resolve_job(_job(), CAT)
    m = sc.model
    tokens = 2 * 1024
    base, saved = _items(_job()), _items(_job(nf4_saves_input=True))
    added = saved["layer_activations"] - base["layer_activations"]
    assert added == pytest.approx(m.layers * tokens * 2 * (m.hidden + m.ffn), rel=1e-9)
    assert _items(_job(nf4_saves_input=False)) == base


def test_all_linear_adapters_keep_the_inputs_already():
    job = _job()
    job["lora"]["targets"] = ["all-linear"]
    saved = dict(job, strategy=dict(job["strategy"], nf4_saves_input=True))
    assert _items(saved)["layer_activations"] == pytest.approx(_items(job)["layer_activations"], rel=1e-12)


def test_under_full_recompute_only_the_working_set_grows():
    # the sum of the loss phase and the re-run layer (live_at_rerun loss), so the working set is an item of the peak
    full = {"recompute": "full", "live_at_rerun": "loss"}
    base, saved = _items(_job(**full)), _items(_job(**full, nf4_saves_input=True))
    assert saved["layer_activations"] == base["layer_activations"]
    assert saved["recompute_working_set"] > base["recompute_working_set"]


def test_a_quantised_lm_head_is_nf4_and_its_dequantised_copy_is_live():
    """Llama 3.1 8B's 525M-parameter head: 16-bit -> NF4 + double-quantised constants, and its bf16 copy at the GEMM
    (two copies where the fp16 quant state is recast to bf16)."""
    sc = resolve_job(_job(), CAT)
    head = sc.model.lm_head_params
    base, q = _items(_job(kbit_upcast=False)), _items(_job(kbit_upcast=False, nf4_lm_head=True))
    assert base["base_weights_frozen"] - q["base_weights_frozen"] == pytest.approx(head * (2 - 0.5), rel=1e-9)
    assert q["quant_constants"] - base["quant_constants"] == pytest.approx(head * 0.127 / 8, rel=1e-9)
    assert q["nf4_dequant_transient"] == pytest.approx(2 * head, rel=1e-9)
    recast = _items(_job(kbit_upcast=False, nf4_lm_head=True, nf4_dequant_dtype="fp16"))
    assert recast["nf4_dequant_transient"] == pytest.approx(4 * head, rel=1e-9)


def test_a_quantised_head_keeps_its_input_only_on_old_bitsandbytes():
    sc = resolve_job(_job(), CAT)
    both = _items(_job(nf4_lm_head=True, nf4_saves_input=True))
    head_only = _items(_job(nf4_lm_head=True))
    added = both["final_norm_and_head_input"] - head_only["final_norm_and_head_input"]
    assert added == pytest.approx(2 * 1024 * 2 * sc.model.hidden, rel=1e-9)


def test_a_layer_weight_transient_counts_only_beyond_the_loss():
    """A 16-bit head: the largest decoder weight's copy (ffn x hidden) is smaller than the fp32 logits the loss holds
    at 2,048 tokens, so nothing is added at the peak."""
    assert _items(_job())["nf4_dequant_transient"] == 0.0


def test_plain_lora_has_no_transient_item():
    assert "nf4_dequant_transient" not in _items(_job(method="lora"))


@pytest.mark.parametrize("field", ["nf4_saves_input", "nf4_lm_head"])
@pytest.mark.parametrize("method", ["lora", "full"])
def test_refused_off_qlora(field, method):
    sc = resolve_job(_job(method=method, **{field: True}), CAT)
    with pytest.raises(TrainsizerError, match="nf4_options_method"):
        estimate_memory(sc.model, sc.training, sc.system, sc.strategy)


def test_a_value_that_is_not_a_boolean_is_refused():
    with pytest.raises(TrainsizerError, match="nf4_saves_input"):
        resolve_job(_job(nf4_saves_input="sometimes"), CAT)


def test_refusal_reads_in_both_languages():
    en, zh = (tr(msg("rule_nf4_options_method", method="lora", fields="nf4_lm_head"), lang) for lang in ("en", "zh"))
    assert "method qlora only" in en and "nf4_lm_head" in en and "lora" in en
    assert "仅适用于 method qlora" in zh and "nf4_lm_head" in zh



def _step(job: dict) -> float:
    from trainsizer.estimate.step_time import estimate_time

    sc = resolve_job(job, CAT)
    return float(estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False).step_s)


def test_a_quantised_head_is_dequantised_at_every_call_each_pass():
    """LitGPT calls its head on every 128 positions (lm_head_chunk): at 1,024 positions, 8 calls a pass, each one
    dequantising the whole head, so the head's extra time is 8 times one call's."""
    base = _step(_job())
    once = _step(_job(nf4_lm_head=True)) - base
    chunked = _step(_job(nf4_lm_head=True, lm_head_chunk=128)) - base
    assert once > 0
    assert chunked == pytest.approx(8 * once, rel=1e-6)
    assert _step(_job(nf4_lm_head=True, lm_head_chunk=4096)) - base == pytest.approx(once, rel=1e-9)


def test_a_head_chunk_needs_a_quantised_head():
    sc = resolve_job(_job(lm_head_chunk=128), CAT)
    with pytest.raises(TrainsizerError, match="lm_head_chunk_nf4_head"):
        estimate_memory(sc.model, sc.training, sc.system, sc.strategy)
    en, zh = (tr(msg("rule_lm_head_chunk_nf4_head", chunk=128), lang) for lang in ("en", "zh"))
    assert "needs nf4_lm_head true" in en and "128" in en
    assert "需要 nf4_lm_head 为 true" in zh and "128" in zh


def test_a_head_chunk_below_one_position_is_refused():
    with pytest.raises(TrainsizerError, match="lm_head_chunk"):
        resolve_job(_job(nf4_lm_head=True, lm_head_chunk=0), CAT)
