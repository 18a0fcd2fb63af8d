"""transformers' eager expert loops stream more per routed copy than the generic permutation compute._moe_layer
charges (a gather and a combine, read and written once each): the routing-weight product, index_add's read of its
destination, the combine's zeros (GraniteMoe's out-of-place index_add copies them first) and their gradients
(step_time._expert_loop_glue_time, perf_constants.yaml gemm.expert_loop_glue_bytes; docs/known-gaps.md 317 (d))."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.estimate import step_time
from trainsizer.estimate.calibration import load_constants
from trainsizer.scenario import resolve_job

CAT = load_catalog([])
MIXTRAL_LIKE = {"layers": 4, "hidden": 4096, "heads": 32, "kv_heads": 8, "ffn": 2048, "vocab": 32000,
                "mlp": "swiglu", "norm": "rmsnorm", "position": "rope", "experts": 8, "experts_per_token": 2,
                "expert_ffn": 2048, "family": "mixtral"}


def _step(seq_len: int = 4096, micro_batch: int = 2, impl: str = "eager", method: str = "full",
          recompute: str = "full", **model):
    job = {"model": {**MIXTRAL_LIKE, **model}, "method": method, "data": {"tokens": 1e8}, "seq_len": seq_len,
           "global_batch": {"sequences": 8 * micro_batch}, "precision": "bf16",
           "hardware": {"accelerator": "a100-sxm-80gb", "count": 1},
           "strategy": {"micro_batch": micro_batch, "recompute": recompute, "framework": "hf",
                        "experts_implementation": impl}}
    sc = resolve_job(job, CAT)
    return step_time._step(sc.model, sc.training, sc.system, sc.strategy, None, None, None)


def _charge(**kw) -> float:
    return float(step_time._expert_loop_glue_time(_step(**kw)))


def test_the_counted_bytes_are_the_codes_less_the_permutation():
    """Forward a routed copy: the weight product (2 + 2) and index_add's destination read (2) = 6; backward 22 against
    the permutation's 16 = 6; the combine's zeros 2 a token (GraniteMoe's out-of-place copy 4 more); GraniteMoe's one
    gather a layer leaves one zeros tensor of the input's gradient, 2 a token."""
    b = load_constants().expert_loop_glue_bytes
    assert (b["forward_copy"], b["backward_copy"]) == (2 + 2 + 2, (2 + 2) + (2 + 2 + 2 + 2) + (2 + 2) + 6 - 16)
    assert (b["forward_token"], b["split_forward_token"], b["backward_token"], b["split_backward_token"]) == (
        2, 2 + 2 + 2, 0, 2)


def test_the_charge_is_those_bytes_at_the_stream_rate():
    """8,192 tokens x 2 routed copies of 4,096 bf16 elements, forward twice (full recompute) and the backward: at no
    more than the A100-80GB's rated 2,039 GB/s and within 1.5x of it."""
    tokens, copies, h = 8192, 2 * 8192, 4096
    nbytes = (2 * (6 * copies + 2 * tokens) + 6 * copies) * h
    assert nbytes / 2.039e12 < _charge() < 1.5 * nbytes / 2.039e12


@settings(max_examples=10, deadline=None)
@given(st.sampled_from([1024, 2048, 4096]))
def test_linear_in_the_tokens(seq_len):
    one, two = _charge(seq_len=seq_len), _charge(seq_len=2 * seq_len)
    assert two / one == pytest.approx(2.0, rel=1e-6)


def test_the_recompute_runs_the_forward_glue_again():
    """Top-2: a token's forward glue is 6 x 2 + 2 = 14 B an element, its backward 6 x 2 = 12; full recompute streams
    the forward twice (40), none once (26)."""
    assert _charge() / _charge(recompute="none") == pytest.approx(40 / 26, rel=1e-6)


def test_granite_split_loop_pays_its_token_copies_too():
    """At the same shapes the split loop (GraniteMoe) streams its out-of-place index_add's copy and the gather's zeros
    more than the Mixtral form."""
    assert _charge(family="granitemoe") > _charge()


def test_grouped_mm_and_dense_pay_none():
    assert _charge(impl="grouped_mm") == 0.0
    dense = {k: v for k, v in MIXTRAL_LIKE.items() if k not in ("experts", "experts_per_token", "expert_ffn", "family")}
    job = {"model": dense, "method": "full", "data": {"tokens": 1e8}, "seq_len": 4096, "global_batch": {"sequences": 16},
           "precision": "bf16", "hardware": {"accelerator": "a100-sxm-80gb", "count": 1},
           "strategy": {"micro_batch": 2, "recompute": "full", "framework": "hf"}}
    sc = resolve_job(job, CAT)
    assert float(step_time._expert_loop_glue_time(step_time._step(sc.model, sc.training, sc.system, sc.strategy,
                                                                  None, None, None))) == 0.0
