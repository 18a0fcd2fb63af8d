"""MLA's fused-attention backward on AMD parts (perf_constants.yaml attention.ck_bwd, calibration.ck_mla_bwd_pad,
step_time._ck_mla_bwd_pad; docs/known-gaps.md 195): where CK's tile kernel runs d_qk != d_v it pads both head dims
to its next compiled backward tile (no 192: DeepSeek's 192 / 128 runs at 256); AITER's assembly kernel covers
192 / 128 on CDNA 4 only (strategy.aiter_mla_bwd_asm, null = true)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from pydantic import ValidationError

from trainsizer.catalog import load_catalog
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.step_time import estimate_time
from trainsizer.scenario import resolve_job
from trainsizer.spec.job import StrategySpec

CAT = load_catalog()
MLA_PAD = 5.0 * 256 / (3 * 192 + 2 * 128)  # both head dims at CK's 256 tile, the backward's 3 d_qk + 2 d_v


def _job(acc: str, model: str = "deepseek-v3", **strategy) -> dict:
    return {"model": model, "seq_len": 4096, "data": {"tokens": 1e9}, "global_batch": {"sequences": 64},
            "precision": "bf16", "hardware": {"accelerator": acc, "count": 8, "network": "roce-400"},
            "strategy": {"recompute": "none", "framework": "megatron-core", "distributed_optimizer": True,
                         "ep": 8 if model.startswith("deepseek") else 1, "micro_batch": 1, **strategy}}


def _step(job: dict) -> float:
    sc = resolve_job(job, CAT)
    return float(estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False).step_s)


def test_pad_follows_the_compiled_tiles_and_the_assembly_kernels():
    k = load_constants()
    assert k.ck_bwd_head_dims == (32, 64, 96, 128, 256)
    assert k.ck_mla_bwd_pad("mi300x", 192, 128) == pytest.approx(MLA_PAD)  # no assembly MLA backward on CDNA 3
    assert k.ck_mla_bwd_pad("mi325x", 192, 128, asm=True) == pytest.approx(MLA_PAD)
    assert k.ck_mla_bwd_pad("mi355x", 192, 128) == 1.0  # AITER >= 7a41cca's hd192_hd128 kernel
    assert k.ck_mla_bwd_pad("mi355x", 192, 128, asm=False) == pytest.approx(MLA_PAD)
    assert k.ck_mla_bwd_pad("mi300x", 96, 64) == pytest.approx(5.0 * 96 / (3 * 96 + 2 * 64))
    assert k.ck_mla_bwd_pad("mi300x", 128, 128) == 1.0  # equal head dims: the assembly kernel's
    assert k.ck_mla_bwd_pad("mi300x", 576, 512) == 1.0  # above the widest tile: no figure


@settings(max_examples=40, deadline=None)
@given(d_qk=hs.integers(1, 32).map(lambda n: 8 * n), d_v=hs.integers(1, 32).map(lambda n: 8 * n),
       acc=hs.sampled_from(["mi300x", "mi355x"]), asm=hs.booleans())
def test_padded_work_is_never_less_than_the_counted(d_qk, d_v, acc, asm):
    assert load_constants().ck_mla_bwd_pad(acc, d_qk, d_v, asm=asm) >= 1.0


def test_mla_on_cdna4_is_slower_only_without_the_assembly_kernel():
    base = _step(_job("mi355x"))
    assert _step(_job("mi355x", aiter_mla_bwd_asm=True)) == base
    assert _step(_job("mi355x", aiter_mla_bwd_asm=False)) > base


def test_the_field_moves_nothing_where_no_assembly_mla_kernel_or_no_mla():
    assert _step(_job("mi300x", aiter_mla_bwd_asm=False)) == _step(_job("mi300x"))
    assert _step(_job("mi355x", "llama-3.1-8b", aiter_mla_bwd_asm=False)) == _step(_job("mi355x", "llama-3.1-8b"))
    h100 = _job("h100-sxm-80gb")
    h100["hardware"]["network"] = "ib-ndr400"
    off = _job("h100-sxm-80gb", aiter_mla_bwd_asm=False)
    off["hardware"]["network"] = "ib-ndr400"
    assert _step(off) == _step(h100)


def test_cdna3_mla_backward_pays_the_pad_where_flash_attention_2_would_not():
    """FlashAttention-2's kernels are compiled for head dim 192 (attention.kernel_head_dims): the same job on that
    kernel runs unpadded, and the native kernel on CDNA takes FA2's rates, so on MI355X (assembly MLA backward) the
    two are the same job and on MI300X the native one is slower by the pad on its attention backward alone."""
    assert _step(_job("mi355x")) == _step(_job("mi355x", attention_kernel="fa2"))
    assert _step(_job("mi300x")) > _step(_job("mi300x", attention_kernel="fa2"))


def test_echoed_and_bad_values_refused():
    sc = resolve_job(_job("mi355x", aiter_mla_bwd_asm=False), CAT)
    assert sc.summary()["strategy"]["aiter_mla_bwd_asm"] is False
    with pytest.raises(ValidationError, match="aiter_mla_bwd_asm"):
        StrategySpec(aiter_mla_bwd_asm="sometimes")
