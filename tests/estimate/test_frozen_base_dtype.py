"""strategy.frozen_base_dtype: the dtype a LoRA job's frozen base is loaded in (known-gaps 147). fp32 (PEFT's
examples/sft loads an unquantised model with torch_dtype float32) is held so under FSDP's MixedPrecision, which casts
a unit only to gather it, and under autocast; DeepSpeed's 16-bit engine casts the module at any ZeRO stage, so there
the base stays 16-bit. compute (or unset) is the old behaviour."""

from __future__ import annotations

import typing

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.errors import SpecError
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.names import FROZEN_BASE_DTYPES
from trainsizer.spec import job, load_job

from .test_perf_common import h100_cluster, llama8b

GIB = 2**30


def _items(dtype, method="lora", **kw):
    training = Training(method=method, seq_len=2048, global_batch_seqs=64, lora_rank=8)
    st = Strategy(**({"dp": 8, "zero": 3, "fsdp": "full", "micro_batch": 1, "recompute": "full", "framework": "hf",
                      "frozen_base_dtype": dtype} | kw))
    return estimate_memory(llama8b(), training, h100_cluster(st.dp), st).items_bytes


@pytest.mark.parametrize("layout", [{"zero": 3, "fsdp": "full"}, {"dp": 4, "zero": 3, "fsdp": "full"}])
def test_fsdp_keeps_the_fp32_shards_and_gathers_bf16_units(layout):
    """FSDP1 / FSDP2 keep the fp32 shard (8B over 8 ranks: 1.9 GiB more) and gather bf16 units, so the layers see
    bf16 weights: nothing else of the job changes but the allocator's fragmentation, a share of what is allocated."""
    bf16, fp32 = _items(None, **layout), _items("fp32", **layout)
    assert _items("compute", **layout) == bf16
    assert fp32["base_weights_frozen"] == pytest.approx(2.0 * bf16["base_weights_frozen"])
    rest = ("base_weights_frozen", "fragmentation")
    assert {k: v for k, v in fp32.items() if k not in rest} == pytest.approx(
        {k: v for k, v in bf16.items() if k not in rest})
    assert fp32["fragmentation"] >= bf16["fragmentation"]


@pytest.mark.parametrize("layout", [{"zero": 3, "fsdp": "none"}, {"zero": 1, "fsdp": "none"},
                                    {"zero": 2, "fsdp": "none", "framework": "deepspeed"},
                                    {"dp": 1, "zero": 0, "fsdp": "none", "framework": "deepspeed"}])
def test_deepspeeds_engine_casts_an_fp32_loaded_base_to_16_bit(layout):
    """The HF Trainer / accelerate with a ZeRO stage and no fsdp run DeepSpeed, whose bf16 engine casts the module
    before partitioning it: the stated fp32 load changes nothing (PEFT's ZeRO-3 LoRA guide row)."""
    assert _items("fp32", **layout) == _items(None, **layout)


@pytest.mark.parametrize("dp", [1, 2])
def test_autocast_keeps_the_fp32_model_and_saves_each_frozen_weights_cast(dp):
    """One GPU or DDP (ZeRO 0) under autocast: the whole fp32 base (8B: 15 GiB more), an fp32 residual stream (the fp32
    embedding and norms: each checkpointed layer input 2 B an element more, 0.5 GiB over 32 layers of 2,048 x 4,096),
    and the bf16 cast of each frozen weight saved for its input gradient: under full recompute one layer's and the
    head's (0.4 + 1.0 GiB), without recompute every layer's (13 GiB)."""
    kw = {"dp": dp, "zero": 0, "fsdp": "none"}
    bf16, fp32 = _items(None, **kw), _items("fp32", **kw)
    assert fp32["base_weights_frozen"] == pytest.approx(2.0 * bf16["base_weights_frozen"])
    assert (fp32["base_weights_frozen"] - bf16["base_weights_frozen"]) / GIB == pytest.approx(14.96, abs=0.1)
    assert (fp32["layer_activations"] - bf16["layer_activations"]) / GIB == pytest.approx(0.5)
    assert "frozen_weight_casts" not in bf16
    assert 1.2 < fp32["frozen_weight_casts"] / GIB < 1.6
    none = _items("fp32", recompute="none", **kw)
    assert 13.0 < none["frozen_weight_casts"] / GIB < 15.0
    assert none["layer_activations"] == pytest.approx(_items(None, recompute="none", **kw)["layer_activations"])


@settings(max_examples=25, deadline=None)
@given(dp=hs.sampled_from([1, 2, 4, 8]), zero=hs.sampled_from([0, 1, 2, 3]), fsdp=hs.sampled_from(["none", "full"]),
       framework=hs.sampled_from(["hf", "deepspeed", "torchtune", "auto"]))
def test_an_fp32_base_never_lowers_the_peak_and_at_most_doubles_the_base(dp, zero, fsdp, framework):
    if fsdp == "full" and zero != 3:
        zero = 3
    kw = {"dp": dp, "zero": zero, "fsdp": fsdp, "framework": framework}
    bf16, fp32 = _items(None, **kw), _items("fp32", **kw)
    assert sum(fp32.values()) >= sum(bf16.values())
    assert fp32["base_weights_frozen"] <= 2.0 * bf16["base_weights_frozen"] * (1 + 1e-12)


def test_job_file_names_the_dtypes_and_refuses_a_method_without_a_frozen_16_bit_base():
    assert typing.get_args(job.FrozenBaseDtype) == FROZEN_BASE_DTYPES
    with pytest.raises(ValueError):
        job.StrategySpec(frozen_base_dtype="fp16")
    base = {"model": "llama-3.1-8b", "data": {"tokens": 1e9}, "seq_len": 2048, "global_batch": {"sequences": 64},
            "hardware": {"accelerator": "h100-sxm-80gb", "count": 8}}
    assert load_job(base | {"method": "lora", "strategy": {"frozen_base_dtype": "fp32"}})
    for method, hint in (("full", "optimizer_precision"), ("qlora", "kbit_upcast")):
        with pytest.raises(SpecError, match=f"frozen_base_dtype fp32 .*method {method}.*{hint}"):
            load_job(base | {"method": method, "strategy": {"frozen_base_dtype": "fp32"}})
        assert load_job(base | {"method": method, "strategy": {"frozen_base_dtype": "compute"}})
