"""Transformer Engine's context parallelism (Megatron-Core): the p2p ring step by step (step_time._cp_te_ring:
each step's K / V exchange exposed beyond one step's attention, the per-step corrections and copies streamed) and
the all-to-all variant (strategy.cp_comm_type a2a, step_time._cp_te_a2a: q, k, v and the output through exposed
all-to-alls, each tensor reordered around them; the attention kernel runs the whole span on a head shard)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.errors import StrategyError
from trainsizer.estimate import comm, compute
from trainsizer.estimate.calibration import load_constants, rates
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import estimate_time
from trainsizer.estimate.validate import check_strategy
from trainsizer.scenario import resolve_job


def _job(cp: int, seq: int, accelerator: str = "h100-sxm-80gb", count: int = 8, network: str = "ib-ndr400",
         **strategy) -> dict:
    return {"model": "llama-3.1-8b", "data": {"tokens": 1e9}, "seq_len": seq, "global_batch": {"sequences": 8},
            "hardware": {"accelerator": accelerator, "count": count, "network": network},
            "strategy": {"tp": 1, "cp": cp, "micro_batch": 1, "distributed_optimizer": True,
                         "framework": "megatron-core", **strategy}}


def _breakdown(job: dict) -> tuple[dict, object]:
    sc = resolve_job(job, load_catalog())
    return estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False).breakdown_s, sc


def test_hidden_ring_costs_its_corrections_and_copies():
    """At 32K tokens a rank (CP 2 in one node) every exchange hides behind a step's attention: what is left is the
    element-wise work counted from TE's code (perf_constants.yaml cp_te_ring) and the last dK / dV exchange, waited
    on after the loop, per layer and micro-batch."""
    b, sc = _breakdown(_job(2, 65536))
    k, m = load_constants().raw["cp_te_ring"], sc.model
    r = rates(sc.system, "bf16", load_constants())
    tok = 32768.0
    q_el, kv_el = tok * m.q_dim, tok * m.kv_dim
    fwd = compute.stream_time(kv_el * k["fwd_kv_bytes"] + q_el * (k["fwd_q_bytes"] + k["fwd_q_step_bytes"]), r,
                              kernels=k["fwd_kernels"] + k["fwd_kernels_step"])
    bwd = compute.stream_time(kv_el * (k["bwd_kv_bytes"] + k["bwd_kv_step_bytes"])
                              + q_el * (k["bwd_q_bytes"] + k["bwd_q_step_bytes"]), r,
                              kernels=k["bwd_kernels"] + k["bwd_kernels_step"])
    bwd = bwd + comm.p2p_time(2.0 * kv_el * 2.0, True, r, sc.system)  # K and V wide, 2 B, inside the node
    micro_batches = 8 / 4  # 8 sequences over DP 4
    assert b["cp_comm"] == pytest.approx(float(fwd + bwd) * m.layers * micro_batches, rel=1e-9)


def test_ring_exchange_is_exposed_when_it_outlasts_a_step():
    """A short rank share across slow links: each step waits for its K / V, so the ring costs more than its
    element-wise work, and more on a slower network (TP 8 fills each node, so CP 4 spans 4 nodes)."""
    fast, _ = _breakdown(_job(4, 8192, count=32, network="ib-ndr400", tp=8))
    slow, _ = _breakdown(_job(4, 8192, count=32, network="roce-100", tp=8))
    assert slow["cp_comm"] > fast["cp_comm"] > 0.0


def test_all_to_all_is_charged_and_lighter_in_fp8_attention():
    """a2a: five query-wide and four K-wide all-to-alls a layer and micro-batch with their reorders, none hidden;
    FP8 attention moves and reorders them in 1 B (TE quantizes q, k, v before the all-to-all)."""
    job = _job(8, 8192, accelerator="b200", cp_comm_type="a2a", tp=1)
    job["precision"] = "fp8"
    bf16, _ = _breakdown(job)
    fp8, _ = _breakdown({**job, "strategy": {**job["strategy"], "fp8_attention": True}})
    assert bf16["cp_comm"] > fp8["cp_comm"] > 0.0


def test_all_to_all_runs_the_attention_over_the_whole_span():
    """Under a2a each rank's kernel runs the whole 64K span on 32 / 8 heads, where the ring's steps run 8K chunks:
    on B200 cuDNN is measured faster at 64K than at 8K, so the same attention work takes less time."""
    ring, _ = _breakdown(_job(8, 65536, accelerator="b200"))
    a2a, _ = _breakdown(_job(8, 65536, accelerator="b200", cp_comm_type="a2a"))
    assert a2a["compute"] < ring["compute"]


def test_all_to_all_needs_whole_heads_on_every_cp_rank():
    """llama-3.1-8b has 8 K / V heads: CP 16 over a2a would give a rank half a head (TE asserts)."""
    sc = resolve_job(_job(2, 8192), load_catalog())
    bad = Strategy(tp=1, dp=1, cp=16, cp_comm_type="a2a", framework="megatron-core")
    with pytest.raises(StrategyError) as err:
        check_strategy(sc.model, Training(seq_len=8192, global_batch_seqs=8), replace(sc.system, gpus=16), bad)
    assert err.value.rule == "cp_a2a_divides_heads"
    assert "a2a" in err.value.render("en") and "整除" in err.value.render("zh")
    ok = Strategy(tp=1, dp=2, cp=8, cp_comm_type="a2a", framework="megatron-core")
    assert check_strategy(sc.model, Training(seq_len=8192, global_batch_seqs=8), replace(sc.system, gpus=16), ok) == []


def test_a2a_is_echoed():
    _, sc = _breakdown(_job(2, 8192, cp_comm_type="a2a"))
    assert sc.summary()["strategy"]["cp_comm_type"] == "a2a"


@settings(max_examples=12, deadline=None)
@given(cp=st.sampled_from([1, 2, 4, 8]), seq=st.sampled_from([8192, 32768, 131072]),
       kind=st.sampled_from(["p2p", "a2a", "all_gather"]))
def test_cp_cost_is_nonnegative_and_nothing_without_cp(cp, seq, kind):
    b, _ = _breakdown(_job(cp, seq, cp_comm_type=kind))
    assert b["cp_comm"] >= 0.0
    assert (b["cp_comm"] == 0.0) == (cp == 1)


def test_all_to_all_past_the_kv_heads_where_kv_is_repeated_first():
    """xtuner's Ulysses repeats K / V to the query heads before its all-to-all (strategy.repeat_kv): CP 16 on 8 K / V
    heads runs there; the same layout without the statement is refused (docs/known-gaps.md 248 (f))."""
    sc = resolve_job(_job(2, 8192), load_catalog())
    training, system = Training(seq_len=8192, global_batch_seqs=8), replace(sc.system, gpus=16)
    stated = Strategy(tp=1, dp=1, cp=16, cp_comm_type="a2a", framework="deepspeed", repeat_kv=True)
    assert check_strategy(sc.model, training, system, stated) == []
    with pytest.raises(StrategyError) as err:
        check_strategy(sc.model, training, system, replace(stated, repeat_kv=None))
    assert "repeat_kv" in err.value.render("en") and "repeat_kv" in err.value.render("zh")


def _ulysses(model: str, framework: str, **strategy) -> float:
    """cp_comm of an 8-way all-to-all CP in one node (8 micro-batches of 64K tokens, no recompute)."""
    job = _job(8, 65536, cp_comm_type="a2a", framework=framework, **strategy)
    if framework == "deepspeed":
        job["strategy"] = {k: v for k, v in job["strategy"].items() if k != "distributed_optimizer"} | {"zero": 1}
    b, _ = _breakdown({**job, "model": model})
    return b["cp_comm"]


def test_autograd_ulysses_sends_four_tensors_back_where_te_sends_five():
    """DeepSpeed's DistributedAttention and xtuner's wrapper are autograd all-to-alls around the local attention: the
    backward sends dout, dq, dk, dv (4); TE's AttnFuncWithCPAndQKVOA2A sends out and dout, dq, dk, dv (5). On a model
    whose K / V are query-wide (Llama-2-7B) every tensor costs the same: TE's layer is 9 / 8 of the wrapper's
    (docs/known-gaps.md 253 (a))."""
    wrapped, te = _ulysses("llama-2-7b", "deepspeed"), _ulysses("llama-2-7b", "megatron-core")
    assert te / wrapped == pytest.approx(9.0 / 8.0, rel=1e-9)


def test_repeated_kv_moves_at_the_query_width():
    """Where the model repeats K / V to the query heads before the all-to-all (strategy.repeat_kv: xtuner's
    dispatch), k, v, dk and dv move query-wide: on Llama-3.1-8B (32 query, 8 K / V heads) the layer costs what eight
    query-wide tensors do; on a model without grouped K / V (Llama-2-7B) the statement changes nothing."""
    plain, repeated = _ulysses("llama-3.1-8b", "deepspeed"), _ulysses("llama-3.1-8b", "deepspeed", repeat_kv=True)
    assert repeated > plain > 0.0
    mha = _ulysses("llama-2-7b", "deepspeed")
    assert _ulysses("llama-2-7b", "deepspeed", repeat_kv=True) == pytest.approx(mha, rel=1e-12)
    # 8B and 7B share the query width (4,096) and the layer count (32): eight query-wide tensors either way
    assert repeated == pytest.approx(mha, rel=1e-9)
