"""Transformer Engine's op fuser (strategy.te_op_fuser: Megatron-Core use_transformer_engine_op_fuser, NeMo USE_TE_OPS).
The dense MLP runs as TE's fused ops (TEFusedMLP), whose activation writes only the quantized operands fc2 and fc1's
dgrad read -- for recipes whose scale is known before the cast (delayed, MXFP8: TE activation.cpp FULLY_FUSED);
current scaling and NVFP4 compute the 16-bit activation and its amax first --, and at TP 1 NeMo's LoRA adapters run
as TEFusedLoRALinear (lora_B, the scaling and the add in one GEMM; the base dgrad accumulates into A's input
gradient). Megatron-Core's option: other stacks are refused."""

from __future__ import annotations

import copy

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import StrategyError
from trainsizer.estimate import step_time
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.model_states import lora_adapted_widths
from trainsizer.estimate.step_time import estimate_time
from trainsizer.estimate.validate import check_strategy
from trainsizer.render.i18n import t
from trainsizer.scenario import resolve_job

from .test_perf_common import b200_cluster, llama8b

K = load_constants()
SEQ = 4096
TARGETS = ("qkv_proj", "o_proj")


def _training(precision="fp8", recipe="delayed", method="pretrain") -> Training:
    lora = {"lora_rank": 16, "lora_targets": TARGETS} if method == "lora" else {}
    return Training(method=method, seq_len=SEQ, global_batch_seqs=8, precision=precision, fp8_recipe=recipe, **lora)


def _strategy(tp=1, **options) -> Strategy:
    return Strategy(tp=tp, dp=8 // tp, micro_batch=1, recompute="none", framework="megatron-core", **options)


def _compute(training: Training, tp=1, **options) -> float:
    return estimate_time(llama8b(), training, b200_cluster(8), _strategy(tp, **options)).breakdown_s["compute"]


def _hbm() -> float:
    """The achieved HBM rate the layer streams at (the part's, as step_time times it)."""
    x = step_time._step(llama8b(), _training(), b200_cluster(8), _strategy(), None, None, None)
    return float(x.r.hbm_bytes_s)


def _layer_s(training: Training, tp=1, **options) -> float:
    """GPU seconds of one average layer and micro-batch (before the host floor's soft maximum)."""
    x = step_time._step(llama8b(), training, b200_cluster(8), _strategy(tp, **options), None, None, None)
    return float(step_time._layer_time(x)[1])


def test_the_fused_mlp_drops_the_activations_16_bit_output():
    """Forward: the ffn-wide 16-bit output (2 B an element); backward: the gate-and-up-wide input gradient (twice)."""
    saved = _layer_s(_training()) - _layer_s(_training(), te_op_fuser=True)
    assert saved == pytest.approx(3.0 * llama8b().ffn * SEQ * 2.0 / _hbm(), rel=1e-6)
    assert _compute(_training(), te_op_fuser=True) < _compute(_training())


@pytest.mark.parametrize("precision,recipe", [("fp8", "tensorwise"), ("fp8", "nvfp4"), ("bf16", "auto")])
def test_recipes_that_write_the_16_bit_activation_first_gain_nothing(precision, recipe):
    training = _training(precision, recipe)
    assert _compute(training, te_op_fuser=True) == _compute(training)


def test_stated_off_is_the_default():
    assert _compute(_training(), te_op_fuser=False) == _compute(_training())


def _adapters(tp: int, **options) -> float:
    x = step_time._step(llama8b(), _training(method="lora"), b200_cluster(8), _strategy(tp, **options),
                        None, None, None)
    return float(step_time._lora_adapters(x))


def test_fused_lora_streams_the_counted_bytes_and_launches_fewer_kernels():
    """peft counts (forward 1 / 6 / 4 kernels, backward 5 / 4 / 6) against TE's fused ones (1 / 2 / 2, 3 / 2 / 4):
    4 d_out forward, 2 d_in and 2 d_out backward and 4 kernels per adapted linear fewer."""
    w_in, w_out, _, _, n_lin = lora_adapted_widths(llama8b(), _training(method="lora"))
    saved = _adapters(1) - _adapters(1, te_op_fuser=True)
    bytes_saved = SEQ * (4.0 * w_out + 2.0 * w_in + 2.0 * w_out) * 2.0
    assert saved == pytest.approx(bytes_saved / _hbm() + 4.0 * n_lin * K.kernel_fixed_s, rel=1e-6)


def test_fused_lora_needs_tp_1():
    """NeMo's LoRA.transform builds TEFusedLoRALinear only at TP 1 ("TP not yet supported")."""
    assert _adapters(2, te_op_fuser=True) == _adapters(2)


def _job(**strategy) -> dict:
    return {"model": "llama-2-70b", "method": "lora", "seq_len": 8192, "data": {"samples": 1e5, "avg_tokens": 8192},
            "global_batch": {"sequences": 8}, "precision": "fp8", "fp8_recipe": "delayed",
            "hardware": {"accelerator": "b200", "count": 8, "network": "ib-ndr400"},
            "lora": {"rank": 16, "targets": ["qkv_proj", "o_proj"]},
            "strategy": {"tp": 1, "micro_batch": 1, "framework": "megatron-core", "te_op_fuser": True} | strategy}


def _check(job: dict) -> list[str]:
    sc = resolve_job(copy.deepcopy(job), load_catalog())
    return check_strategy(sc.model, sc.training, sc.system, sc.strategy)


def test_megatron_core_is_accepted_and_the_summary_says_so():
    assert _check(_job()) == []
    assert resolve_job(_job(), load_catalog()).summary()["strategy"]["te_op_fuser"] is True


def test_other_frameworks_are_refused():
    with pytest.raises(StrategyError, match="te_op_fuser"):
        _check(_job(framework="torchtitan"))


def test_the_field_has_an_english_and_a_chinese_label():
    assert t("field_strategy.te_op_fuser", "zh") != t("field_strategy.te_op_fuser", "en")
