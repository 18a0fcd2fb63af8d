"""PEFT's adapter dropout runs on the fp32 cast of its input: peft 0.14.0 tuners/lora/layer.py Linear.forward casts
`x = x.to(lora_A.weight.dtype)` (fp32 adapters) and then runs `lora_B(lora_A(dropout(x)))`; dropout is in no autocast
list, so native_dropout reads and writes fp32 and its backward too: perf_constants.yaml
lora.dropout_fp32_input_extra_elems (2 two-byte elements each way) beyond the 16-bit dropout count, wherever PEFT's
fp32 input cast runs (docs/known-gaps.md 191 (g), 291 (b), 298 (a))."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.estimate import step_time
from trainsizer.estimate.model_states import lora_adapted_widths
from trainsizer.scenario import resolve_job

CAT = load_catalog([])
ALL_LINEAR = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def _x(dropout: float, impl: str | None = None, autocast: bool | None = None, targets: list[str] | None = None,
       seq_len: int = 4096, accelerator: str = "rtx-pro-6000", sharded: dict | None = None) -> step_time._Step:
    strategy: dict = {"micro_batch": 2, "recompute": "full", "framework": "hf", **(sharded or {})}
    if autocast is not None:
        strategy["autocast"] = autocast
    lora: dict = {"rank": 8, "targets": targets or ALL_LINEAR, "dropout": dropout}
    if impl is not None:
        lora["impl"] = impl
    job = {"model": "llama-3.1-8b", "method": "lora", "data": {"tokens": 1e8}, "seq_len": seq_len,
           "global_batch": {"sequences": 2}, "precision": "bf16", "lora": lora,
           "hardware": {"accelerator": accelerator, "count": 2 if sharded else 1}, "strategy": strategy}
    sc = resolve_job(job, CAT)
    return step_time._step(sc.model, sc.training, sc.system, sc.strategy, None, None, None)


def _dropout_seconds(x_on: step_time._Step, x_off: step_time._Step) -> float:
    return float(step_time._lora_adapters(x_on) - step_time._lora_adapters(x_off))


def _expected(x: step_time._Step, elems_each_way: float) -> float:
    """The dropout's stream over the adapters' inputs (forward again under full recompute) and its kernels."""
    w_in, _, _, _, n_lin = lora_adapted_widths(x.model, x.training)
    fs, r = float(x.full_share), x.r
    elems = elems_each_way * w_in * (2.0 + fs)
    return float(x.tok) * elems * r.act_bytes / r.hbm_bytes_s + n_lin * (2.0 + fs) * r.kernel_fixed_s


@settings(max_examples=12, deadline=None)
@given(targets=st.sampled_from([["q_proj", "v_proj"], ["o_proj", "down_proj"], ["gate_proj", "up_proj"], ALL_LINEAR]),
       seq_len=st.sampled_from([1024, 4096, 8192]), autocast=st.sampled_from([None, False]))
def test_behind_peft_s_cast_the_dropout_streams_fp32(targets, seq_len, autocast):
    """With PEFT's fp32 cast on (hf style, peft adapters, 16-bit model; under the Trainer's autocast or without it)
    the dropout costs the 16-bit count plus the fp32 extra, each way."""
    kw = {"targets": targets, "seq_len": seq_len, "autocast": autocast}
    x_on, x_off = _x(0.1, **kw), _x(0.0, **kw)
    assert float(step_time._peft_cast_on(x_on)) == 1.0
    lc = x_on.k.raw["lora"]
    each_way = lc["dropout_fwd_elems"] + lc["dropout_fp32_input_extra_elems"]
    assert lc["dropout_bwd_elems"] == lc["dropout_fwd_elems"]
    assert _dropout_seconds(x_on, x_off) == pytest.approx(_expected(x_on, each_way), rel=1e-9)


def test_without_the_cast_the_dropout_stays_16_bit():
    """LitGPT's adapters (timed with peft's counts, dropout on the input) keep the model's dtype: no cast, no extra."""
    x_on, x_off = _x(0.1, impl="litgpt"), _x(0.0, impl="litgpt")
    assert float(step_time._peft_cast_on(x_on)) == 0.0
    lc = x_on.k.raw["lora"]
    assert _dropout_seconds(x_on, x_off) == pytest.approx(_expected(x_on, lc["dropout_fwd_elems"]), rel=1e-9)


@pytest.mark.parametrize("sharded", [{"zero": 3}, {"zero": 2}, {"fsdp": "full", "fsdp_version": 2}])
def test_on_deepspeed_or_fsdp2_the_adapters_compute_in_16_bit(sharded):
    """Under the Trainer's mixed precision DeepSpeed's engine casts the module to 16 bit, and FSDP2's decoder-layer
    unit has set its gathered param_dtype parameters before the adapter reads lora_A.weight.dtype: no cast, and the
    dropout's input is 16-bit (docs/known-gaps.md 298 (a))."""
    x_on, x_off = _x(0.1, sharded=sharded), _x(0.0, sharded=sharded)
    assert (np.asarray(x_on.zero) > 0).all() and float(step_time._peft_cast_on(x_on)) == 0.0
    lc = x_on.k.raw["lora"]
    assert _dropout_seconds(x_on, x_off) == pytest.approx(_expected(x_on, lc["dropout_fwd_elems"]), rel=1e-9)


def test_on_fsdp1_the_cast_runs_and_the_dropout_streams_fp32():
    """FSDP1 with use_orig_params (accelerate launch's default) points lora_A.weight at the fp32 local shard outside
    the adapter unit's forward, so PEFT's cast runs before the unit gathers its bf16 copy and the dropout reads and
    writes fp32 (docs/known-gaps.md 298 (a))."""
    sharded = {"fsdp": "full", "fsdp_version": 1}
    x_on, x_off = _x(0.1, sharded=sharded), _x(0.0, sharded=sharded)
    assert (np.asarray(x_on.zero) > 0).all() and float(step_time._peft_cast_on(x_on)) == 1.0
    lc = x_on.k.raw["lora"]
    each_way = lc["dropout_fwd_elems"] + lc["dropout_fp32_input_extra_elems"]
    assert _dropout_seconds(x_on, x_off) == pytest.approx(_expected(x_on, each_way), rel=1e-9)


@pytest.mark.parametrize("sharded", [{"zero": 3}, {"fsdp": "full"}])
def test_sharded_without_autocast_the_adapters_stay_fp32(sharded):
    """No mixed precision handed to the engine (Strategy.autocast false: accelerate's mixed_precision 'no'): the
    adapters keep fp32 under FSDP / ZeRO too, and the dropout streams fp32."""
    x_on, x_off = _x(0.1, autocast=False, sharded=sharded), _x(0.0, autocast=False, sharded=sharded)
    lc = x_on.k.raw["lora"]
    each_way = lc["dropout_fwd_elems"] + lc["dropout_fp32_input_extra_elems"]
    assert _dropout_seconds(x_on, x_off) == pytest.approx(_expected(x_on, each_way), rel=1e-9)


def test_the_fp32_dropout_costs_more_than_the_16_bit_one():
    peft = _dropout_seconds(_x(0.1), _x(0.0))
    litgpt = _dropout_seconds(_x(0.1, impl="litgpt"), _x(0.0, impl="litgpt"))
    assert peft > litgpt > 0.0


def test_no_dropout_no_extra():
    """At p 0 PEFT's dropout is nn.Identity: the counts are the cast's alone."""
    x = _x(0.0)
    lc = x.k.raw["lora"]
    counts = step_time._adapter_counts(x, lc)
    base = lc["impls"].get(step_time._lora_counted_impl(x, lc), lc)
    assert counts["fwd_in_elems"] == pytest.approx(base["fwd_in_elems"] + lc["peft_fp32_input_cast"]["fwd_in_elems"])
