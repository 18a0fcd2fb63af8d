"""strategy.moe_grouped_gemm false: Megatron-Core's SequentialMLP runs the local experts one after another, and its glue
copies the routed buffer (step_time._sequential_mlp_time, docs/known-gaps.md 301 (a)): before core_r0.9.0 the rows
sliced out and written back into a zeroed buffer, 3 + (6n + 4) copies of it a forward and backward over n local experts;
from core_r0.9.0 torch.split / torch.cat, 2 + 2 copies, none at one local expert. Unstated = the grouped GEMM (as
before); the option is Megatron-Core's, refused elsewhere, and changes nothing on a dense model."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.errors import TrainsizerError
from trainsizer.estimate import compute
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import _sequential_mlp_time, _step, estimate_time, estimate_time_batch

from .test_perf_common import h100_cluster, llama8b, mixtral

TR = Training(seq_len=4096, global_batch_seqs=256)


def _st(**kw) -> Strategy:
    base = dict(tp=1, pp=1, dp=16, ep=2, micro_batch=1, recompute="none", distributed_optimizer=True,
                framework="megatron-core", moe_dispatcher="alltoall")
    return Strategy(**(base | kw))


def _step_s(**kw) -> float:
    return float(estimate_time(mixtral(), TR, h100_cluster(16), _st(**kw)).step_s)


def _glue_s(**kw) -> float:
    return float(np.asarray(_sequential_mlp_time(_step(mixtral(), TR, h100_cluster(16), _st(**kw), None, None, None))))


def test_unstated_is_the_grouped_gemm_and_the_old_loop_costs_more_than_split_and_cat():
    grouped = _step_s()
    assert _step_s(moe_grouped_gemm=True) == grouped
    split_cat = _step_s(moe_grouped_gemm=False)
    sliced = _step_s(moe_grouped_gemm=False, megatron_core_version="0.8")
    assert grouped < split_cat < sliced
    assert _step_s(moe_grouped_gemm=False, megatron_core_version="0.9") == split_cat


def test_copies_follow_the_code():
    x = _step(mixtral(), TR, h100_cluster(16), _st(moe_grouped_gemm=False, megatron_core_version="0.6"),
              None, None, None)
    m = mixtral()
    n = m.experts / 2  # EP 2: 4 local experts
    buffer = float(x.routed_slots) * m.hidden * x.r.act_bytes
    want = compute.stream_time(buffer * (3.0 + 6.0 * n + 4.0), x.r, kernels=1.0 + n + 7.0 * n)
    assert _glue_s(moe_grouped_gemm=False, megatron_core_version="0.6") == pytest.approx(float(want))
    want = compute.stream_time(buffer * 4.0, x.r, kernels=2.0)
    assert _glue_s(moe_grouped_gemm=False) == pytest.approx(float(want))


def test_one_local_expert_runs_the_whole_buffer_from_core_r0_9():
    assert _glue_s(moe_grouped_gemm=False, ep=8) == 0.0
    assert _glue_s(moe_grouped_gemm=False, ep=8, megatron_core_version="0.7") > 0.0


@settings(max_examples=20, deadline=None)
@given(ep=hs.sampled_from([1, 2, 4]), mb=hs.sampled_from([1, 2, 4]))
def test_the_old_loop_grows_with_the_local_experts_and_the_tokens(ep, mb):
    """More local experts: more whole-buffer copies per token; more tokens: a larger buffer."""
    old = dict(moe_grouped_gemm=False, megatron_core_version="0.6")
    assert _glue_s(ep=ep, micro_batch=mb, **old) > 0.0
    if ep > 1:
        assert _glue_s(ep=ep // 2, micro_batch=mb, **old) > _glue_s(ep=ep, micro_batch=mb, **old)
    assert _glue_s(ep=ep, micro_batch=2 * mb, **old) > _glue_s(ep=ep, micro_batch=mb, **old)


def test_full_recompute_runs_the_forward_copies_again():
    old = dict(moe_grouped_gemm=False, megatron_core_version="0.6")
    assert _glue_s(recompute="full", **old) > _glue_s(**old)


def test_a_dense_model_is_unchanged_and_other_stacks_refuse_the_option():
    dense = Strategy(tp=1, pp=1, dp=16, micro_batch=1, recompute="none", framework="megatron-core")
    base = float(estimate_time(llama8b(), TR, h100_cluster(16), dense).step_s)
    assert float(estimate_time(llama8b(), TR, h100_cluster(16), dense.with_(moe_grouped_gemm=False)).step_s) == base
    with pytest.raises(TrainsizerError, match="moe_grouped_gemm"):
        estimate_time(mixtral(), TR, h100_cluster(16), _st(framework="torchtitan", moe_dispatcher="auto",
                                                            distributed_optimizer=False, moe_grouped_gemm=False))


def test_batch_agrees_with_the_scalar_estimate():
    mbs = np.array([1, 2, 4])
    old = dict(moe_grouped_gemm=False, megatron_core_version="0.6")
    batch = estimate_time_batch(mixtral(), TR, h100_cluster(16),
                                _st(micro_batch=mbs, tp=np.ones(3, int), pp=np.ones(3, int), dp=np.full(3, 16),
                                    ep=np.full(3, 2), **old))
    for i, m in enumerate(mbs):
        assert float(batch["step_s"][i]) == pytest.approx(_step_s(micro_batch=int(m), **old), rel=1e-9)


def _job(**strategy) -> dict:
    return {"model": "mixtral-8x7b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 4096,
            "global_batch": {"sequences": 64}, "precision": "bf16",
            "hardware": {"accelerator": "h100-sxm-80gb", "count": 8},
            "strategy": {"micro_batch": 1, "recompute": "none", "framework": "megatron-core", "ep": 2, **strategy}}


def test_a_job_states_it_its_json_says_so_and_a_bad_value_is_named():
    from trainsizer.catalog import load_catalog
    from trainsizer.errors import SpecError
    from trainsizer.evaluate import evaluate
    from trainsizer.render.i18n import t
    from trainsizer.scenario import resolve_job

    cat = load_catalog([])
    out = evaluate(resolve_job(_job(moe_grouped_gemm=False, megatron_core_version="core_r0.8.0"), cat), cat)
    assert (out["job"]["strategy"]["moe_grouped_gemm"], out["job"]["strategy"]["megatron_core_version"]) == (False, "0.8")
    base = evaluate(resolve_job(_job(), cat), cat)
    assert base["job"]["strategy"]["moe_grouped_gemm"] is None
    assert out["time"]["step_s"] > base["time"]["step_s"]
    with pytest.raises(SpecError, match="moe_grouped_gemm"):
        resolve_job(_job(moe_grouped_gemm="maybe"), cat)
    assert "--moe-grouped-gemm" in t("field_strategy.moe_grouped_gemm", "en")
    assert t("field_strategy.moe_grouped_gemm", "zh") != t("field_strategy.moe_grouped_gemm", "en")
