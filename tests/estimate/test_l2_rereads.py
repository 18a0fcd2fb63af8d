"""Eager op chains' reads of their own intermediates at the L2's measured rate (compute.l2_reread_credit,
step_time._l2_reread_credit, perf_constants.yaml l2_rereads, catalog l2_cache read_tb_s / resident_mib;
docs/known-gaps.md 148): only where the part's rate is measured, only eager chains, only while the chain's reuse
distance fits the resident set."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from trainsizer.catalog import load_catalog
from trainsizer.catalog.records import L2Cache
from trainsizer.estimate import compute, step_time
from trainsizer.estimate.calibration import Rates, load_constants
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.messages import msg
from trainsizer.scenario import build_system

from .test_perf_common import llama8b, step_and_layer_rates

QV = ("q_proj", "v_proj")


@pytest.fixture(scope="module")
def l40s():
    return build_system(load_catalog().accelerator("l40s"), 1, 1, None)


def _off(system):
    return dataclasses.replace(system, l2_read_gb_s=0.0, l2_resident_mib=0.0)


def _rates(l2_gb_s: float = 5200.0, resident_mib: float = 89.5) -> Rates:
    return Rates(gemm_flops=1e14, gemm_peak_flops=1e14, flash_flops=1e14, hbm_bytes_s=0.7e12, intra_busbw=1e9,
                 inter_nic=1e9, kernel_fixed_s=4e-6, act_bytes=2.0, l2_read_bytes_s=l2_gb_s * 1e9,
                 l2_resident_bytes=resident_mib * 2.0**20)


def test_measured_rates_reach_the_system_and_unmeasured_parts_have_none():
    cat = load_catalog()
    l40s = build_system(cat.accelerator("l40s"), 1, 1, None)
    assert (l40s.l2_read_gb_s, l40s.l2_resident_mib) == (5200.0, 89.5)
    for acc in ("h200-nvl-141gb", "rtx-4090", "b200"):  # no re-read rate measured for them (or their clocks)
        s = build_system(cat.accelerator(acc), 1, 1, None)
        assert (s.l2_read_gb_s, s.l2_resident_mib) == (0.0, 0.0), acc
    for c in (a.l2_cache for a in cat.accelerators.values() if a.l2_cache and a.l2_cache.read_tb_s):
        assert "gpu_benches_l2" in c.sources and c.resident_mib <= c.size_mib


def test_rate_without_resident_set_and_resident_over_size_refused():
    with pytest.raises(ValidationError) as err:
        L2Cache(size_mib=50, read_tb_s=9.7, sources=("nv_h100_wp",), date="2026-12-05")
    assert str(msg("rec_l2_cache_rate_pair", allowed="x")).split(":")[0] in str(err.value)
    with pytest.raises(ValidationError, match="resident_mib"):
        L2Cache(size_mib=50, read_tb_s=9.7, resident_mib=60, sources=("nv_h100_wp",), date="2026-12-05")


@given(st.floats(0, 1e9), st.floats(0, 2e8))
def test_credit_never_exceeds_the_dram_time_and_needs_the_fit(read, reuse):
    r = _rates()
    c = float(compute.l2_reread_credit(read, reuse, r))
    assert 0.0 <= c <= read / r.hbm_bytes_s
    if reuse > r.l2_resident_bytes:
        assert c == 0.0
    else:
        assert c == pytest.approx(read / r.hbm_bytes_s - read / r.l2_read_bytes_s)
    assert compute.l2_reread_credit(read, reuse, _rates(l2_gb_s=0.0, resident_mib=0.0)) == 0.0


def _step(system, training, *, seq=512, framework="hf", compiled=False, recompute="none"):
    st_ = Strategy(dp=1, micro_batch=1, recompute=recompute, framework=framework, torch_compile=compiled)
    return step_and_layer_rates(llama8b(), training, system, st_, step_time.perf_style(framework))


def _full(seq: int = 512) -> Training:
    return Training(method="full", seq_len=seq, global_batch_seqs=1)


@pytest.mark.parametrize("recompute,forwards", [("none", 1.0), ("full", 2.0)])
def test_eager_rmsnorm_chain_saves_its_counted_rereads(l40s, recompute, forwards):
    on, r = _step(l40s, _full(), recompute=recompute)
    off, r_off = _step(_off(l40s), _full(), recompute=recompute)
    assert r_off.l2_read_bytes_s == 0.0
    c = load_constants().raw["l2_rereads"]["rmsnorm"]
    elems = 512 * 4096  # one micro-batch x the hidden size: 10 B each (21 MB) fits the L40S's 89.5 MiB
    per_norm = elems * c["read"] * (1.0 / r.hbm_bytes_s - 1.0 / r.l2_read_bytes_s)
    # two norms a layer, 32 layers; the host soft maximum takes a little of it
    assert off - on == pytest.approx(forwards * 2 * 32 * per_norm, rel=2e-2)


def test_no_credit_for_fused_chains_or_sets_past_the_l2(l40s):
    for kw in ({"compiled": True}, {"framework": "megatron-core"}):
        assert _step(l40s, _full(), **kw)[0] == _step(_off(l40s), _full(), **kw)[0], kw
    # 4,096 tokens x 4,096 x 10 B = 168 MB: past the resident set
    assert _step(l40s, _full(4096), seq=4096)[0] == _step(_off(l40s), _full(4096), seq=4096)[0]


def test_peft_adapter_chain_credit_beyond_the_norms(l40s):
    """Plain LoRA under PEFT's fp32 input cast: the adapter's and the cast's re-reads add to the norms' saving."""
    lora = Training(method="lora", seq_len=512, global_batch_seqs=1, lora_rank=32, lora_targets=QV, lora_impl="peft")
    full_gain = _step(_off(l40s), _full())[0] - _step(l40s, _full())[0]
    lora_gain = _step(_off(l40s), lora)[0] - _step(l40s, lora)[0]
    assert lora_gain > 1.2 * full_gain > 0.0
    compiled = _step(_off(l40s), lora, compiled=True)[0] - _step(l40s, lora, compiled=True)[0]
    assert np.isclose(compiled, 0.0)


@pytest.mark.parametrize("framework", ["hf", "megatron-core"])
def test_norm_credit_follows_the_one_eager_kernel_test(l40s, framework):
    """The norms' re-read credit is taken where `step_time._eager_kernel` says they run eager (docs/known-gaps.md
    310 (a)): a named kernel decides either way, an unnamed one follows the style's fused kernels; a style's
    norm_kernel held per strategy (framework auto's arrays) is read elementwise."""
    style = step_time.perf_style(framework)

    def credit(kernel):
        st_ = Strategy(dp=1, micro_batch=1, recompute="none", framework=framework)
        x = step_time._step(llama8b(), _full(), l40s, st_, None, dataclasses.replace(style, norm_kernel=kernel), None)
        return np.asarray(step_time._l2_reread_credit(x)[0], float).reshape(-1)

    eager, fused, unnamed = credit("eager")[0], credit("fused")[0], credit(None)[0]
    assert eager > 0.0 and fused == 0.0
    assert unnamed == (0.0 if framework == "megatron-core" else eager)
    np.testing.assert_array_equal(credit(np.array(["eager", None, "fused"], dtype=object)), [eager, unnamed, fused])
