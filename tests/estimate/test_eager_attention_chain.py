"""strategy.eager_attention and ModelArch.attention_softcap: the element-wise chain a non-flash attention streams over
its score matrix (perf_constants.yaml eager_attention, step_time._eager_attention_time). Megatron's fused
scale-mask-softmax (`fused`, the count compute._attention_core charges), transformers' / LitGPT's separate ops with an
fp32 softmax (`fp32_softmax`, the hf style's), and Gemma 2's soft-cap passes on top."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.models import arch_from_hf_config
from trainsizer.models.arch import ModelArch
from trainsizer.render.i18n import t
from trainsizer.scenario import resolve_job

TOY = ModelArch(name="toy", family="llama", layers=8, hidden=1024, heads=8, kv_heads=4, ffn=4096, vocab=32000,
                head_dim=128)
CAPPED = dataclasses.replace(TOY, attention_softcap=True)
CARD = System(accelerator="a100-sxm-80gb", gpus=1, gpus_per_node=8, memory_gib=80.0, peak_tflops={"bf16": 312.0},
              hbm_gb_s=2039.0, intra_node_gb_s=300.0)
EA = load_constants().raw["eager_attention"]


def _training(flash: bool, seq_len: int = 1024) -> Training:
    return Training(method="lora", seq_len=seq_len, global_batch_seqs=8, lora_rank=16,
                    lora_targets=("q_proj", "v_proj"), precision="bf16", flash_attention=flash)


def _step(model: ModelArch = TOY, *, flash: bool = False, framework: str = "hf", seq_len: int = 1024,
          **strategy) -> float:
    st = Strategy(micro_batch=2, recompute="none", framework=framework, **strategy)
    return float(np.asarray(step_time_arrays(model, _training(flash, seq_len), CARD, st)["step_s"]).reshape(-1)[0])


def test_the_counts_are_the_ops_each_chain_runs():
    """fused: 4.5 / 5.5 elements of 2 B (compute._attention_core); fp32_softmax: scale 4, mask add 4, fp32 softmax
    2 + 4, cast back 4 + 2 forward; the cast's gradient 6, softmax backward 10, the scale's 4 backward."""
    assert (EA["fused"]["fwd"], EA["fused"]["bwd"]) == (9.0, 11.0)
    assert EA["fp32_softmax"]["fwd"] == 4 + 4 + (2 + 4) + (4 + 2)
    assert EA["fp32_softmax"]["bwd"] == (2 + 4) + (4 + 4 + 2) + (2 + 2)
    assert (EA["softcap"]["fwd"], EA["softcap"]["bwd"]) == (3 * 4, 4 + 6 + 4)


def test_the_hf_style_runs_transformers_eager_chain_and_fused_keeps_the_old_charge():
    assert _step() > _step(eager_attention="fused")
    assert _step(eager_attention="fp32_softmax") == pytest.approx(_step(), rel=1e-12)
    # Megatron-style stacks keep the fused softmax unless the job says otherwise
    mega = _step(framework="megatron-core")
    assert _step(framework="megatron-core", eager_attention="fused") == pytest.approx(mega, rel=1e-12)
    assert _step(framework="megatron-core", eager_attention="fp32_softmax") > mega


def test_a_flash_kernel_never_streams_the_scores():
    flash = _step(flash=True, eager_attention="fused")
    assert _step(flash=True) == pytest.approx(flash, rel=1e-12)
    assert _step(CAPPED, flash=True) == pytest.approx(_step(TOY, flash=True), rel=1e-12)


def test_the_soft_cap_adds_its_passes_to_either_chain():
    for chain in ("fused", "fp32_softmax"):
        assert _step(CAPPED, eager_attention=chain) > _step(TOY, eager_attention=chain)


def test_compile_fuses_the_chain():
    compiled = _step(torch_compile=True, eager_attention="fused")
    assert _step(torch_compile=True) == pytest.approx(compiled, rel=1e-12)


@settings(max_examples=15, deadline=None)
@given(seq=hs.integers(min_value=1024, max_value=8192))
def test_the_excess_grows_with_the_square_of_the_row(seq):
    """The chain streams the s x s scores: doubling the row takes the excess over the fused count up ~4x (the
    kernels' fixed cost aside, which short rows are dominated by), more than the linear layers' 2x."""
    def excess(s: int) -> float:
        return _step(seq_len=s) - _step(seq_len=s, eager_attention="fused")
    one, two = excess(seq), excess(2 * seq)
    assert one > 0.0
    assert two > 2.0 * one


def test_hf_import_reads_gemma_softcapping():
    base = {"model_type": "gemma2", "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
            "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 256000}
    assert arch_from_hf_config(base).attention_softcap  # Gemma2Config's default 50.0
    assert not arch_from_hf_config({**base, "attn_logit_softcapping": None}).attention_softcap
    g3 = {**base, "model_type": "gemma3_text"}
    assert not arch_from_hf_config(g3).attention_softcap  # Gemma3TextConfig's default None
    assert arch_from_hf_config({**g3, "attn_logit_softcapping": 50.0}).attention_softcap


def test_an_unknown_chain_is_refused_by_name_in_both_languages():
    job = {"model": "llama-3.1-8b", "method": "lora", "data": {"tokens": 1e8}, "seq_len": 2048,
           "global_batch": {"sequences": 16}, "hardware": {"accelerator": "a100-sxm-80gb", "count": 1},
           "flash_attention": False, "strategy": {"framework": "hf", "eager_attention": "triton"}}
    with pytest.raises(SpecError, match="eager_attention"):
        resolve_job(job, load_catalog())
    assert t("field_strategy.eager_attention", "en") == "eager attention chain"
    assert t("field_strategy.eager_attention", "zh") != t("field_strategy.eager_attention", "en")
