"""Where PEFT's fp32 input cast runs on a sharded job (docs/known-gaps.md 298 (a)): peft's lora.Linear reads
`lora_A.weight.dtype` before lora_A runs. On torch FSDP1 with use_orig_params (accelerate launch's default) the
adapter's own unit is resharded then and the attribute is the fp32 local shard's view, so the cast runs; DeepSpeed's
engine casts the module to 16 bit, and FSDP2's decoder-layer unit has gathered its param_dtype parameters, so under
mixed precision there is no cast; without autocast the adapters are fp32 on every engine."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.estimate import step_time
from trainsizer.scenario import resolve_job

CAT = load_catalog([])
ENGINES = {"zero0": ({}, 1), "deepspeed_z2": ({"zero": 2}, 2), "deepspeed_z3": ({"zero": 3}, 2),
           "fsdp": ({"fsdp": "full"}, 2), "fsdp1": ({"fsdp": "full", "fsdp_version": 1}, 2),
           "fsdp2": ({"fsdp": "full", "fsdp_version": 2}, 2)}
# under the Trainer's autocast: where lora_A.weight is fp32 when PEFT reads it
CAST_UNDER_AUTOCAST = {"zero0": 1.0, "deepspeed_z2": 0.0, "deepspeed_z3": 0.0, "fsdp": 1.0, "fsdp1": 1.0, "fsdp2": 0.0}


def _x(engine: str, autocast: bool | None = None, dropout: float = 0.1, method: str = "lora",
       framework: str = "hf") -> step_time._Step:
    sharded, gpus = ENGINES[engine]
    strategy: dict = {"micro_batch": 2, "recompute": "full", "framework": framework, **sharded}
    if autocast is not None:
        strategy["autocast"] = autocast
    job = {"model": "mistral-7b", "method": method, "data": {"tokens": 1e8}, "seq_len": 2048,
           "global_batch": {"sequences": 2 * gpus}, "precision": "bf16",
           "lora": {"rank": 8, "targets": ["q_proj", "v_proj", "down_proj"], "dropout": dropout},
           "hardware": {"accelerator": "h100-sxm-80gb", "count": gpus}, "strategy": strategy}
    sc = resolve_job(job, CAT)
    return step_time._step(sc.model, sc.training, sc.system, sc.strategy, None, None, None)


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_the_cast_runs_where_the_adapter_weight_reads_fp32(engine):
    assert float(step_time._peft_cast_on(_x(engine))) == CAST_UNDER_AUTOCAST[engine]


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_without_autocast_the_adapters_are_fp32_on_every_engine(engine):
    assert float(step_time._peft_cast_on(_x(engine, autocast=False))) == 1.0


@settings(max_examples=12, deadline=None)
@given(engine=st.sampled_from(sorted(ENGINES)), dropout=st.sampled_from([0.0, 0.05, 0.1]))
def test_the_counts_carry_the_cast_exactly_where_it_runs(engine, dropout):
    """The adapter's counts are the implementation's plus lora.peft_fp32_input_cast (and the fp32 dropout's extra
    where the dropout drops the input) where the cast runs, the implementation's alone elsewhere."""
    x = _x(engine, dropout=dropout)
    lc = x.k.raw["lora"]
    base = lc["impls"].get(step_time._lora_counted_impl(x, lc), lc)
    counts = step_time._adapter_counts(x, lc)
    on = CAST_UNDER_AUTOCAST[engine]
    extra = on * lc["dropout_fp32_input_extra_elems"] * (dropout > 0)
    assert counts["fwd_in_elems"] == pytest.approx(base["fwd_in_elems"]
                                                   + on * lc["peft_fp32_input_cast"]["fwd_in_elems"] + extra)
    assert counts["bwd_kernels"] == pytest.approx(base["bwd_kernels"] + on * lc["peft_fp32_input_cast"]["bwd_kernels"])


def test_the_cast_costs_adapter_time_on_fsdp1_not_on_deepspeed():
    """Same job, same GPUs: the adapter chain's time under FSDP1 exceeds DeepSpeed ZeRO-3's by the cast."""
    fsdp1, ds = _x("fsdp1"), _x("deepspeed_z3")
    assert float(np.asarray(step_time._lora_adapters(fsdp1))) > float(np.asarray(step_time._lora_adapters(ds))) > 0.0


def test_qlora_never_casts():
    """bitsandbytes' Linear4bit skips the cast under autocast, sharded or not."""
    for engine in ENGINES:
        assert float(step_time._peft_cast_on(_x(engine, method="qlora"))) == 0.0
