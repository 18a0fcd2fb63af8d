"""strategy.moe_aux_loss: Megatron-Core's router load-balancing loss as the job states it. none takes the aux loss's
host calls (6 forward, 4 backward of the router's count) and the unfused router's aux kernels (8 forward, 1 backward)
off; global_aux_loss adds its four calls and its token-count all-reduce over TP x DP x CP; aux_loss / seq_aux_loss
are the count the estimate always had (step_time._moe_aux_loss_counts, _global_aux_loss_time; docs/known-gaps.md
343 (a)). Megatron-Bridge's GPT-OSS rows state none (gpt_oss_bridge.py)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import TrainsizerError
from trainsizer.estimate import compute
from trainsizer.estimate.step_time import (
    _global_aux_loss_time,
    _moe_layer_host_s,
    _moe_unfused_counts,
    _step,
    estimate_time,
)
from trainsizer.scenario import resolve_job

DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data"
# perf_heldout72's GPT-OSS 20B SFT layout: EP 8 on one H100 node, router unfused, one 2K micro-batch
JOB = {"model": "gpt-oss-20b", "data": {"tokens": 1e9}, "seq_len": 2048, "global_batch": {"sequences": 128},
       "hardware": {"accelerator": "h100-sxm-80gb", "count": 8, "network": "ib-ndr400"}}
MCORE = {"framework": "megatron-core", "ep": 8, "etp": 1, "micro_batch": 1, "recompute": "none",
         "distributed_optimizer": True, "moe_dispatcher": "alltoall"}


def _x(**strategy):
    sc = resolve_job({**JOB, "strategy": {**MCORE, **strategy}}, load_catalog())
    return _step(sc.model, sc.training, sc.system, sc.strategy, None, None, None)


def _est(**strategy):
    sc = resolve_job({**JOB, "strategy": {**MCORE, **strategy}}, load_catalog())
    return estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False)


def test_unstated_is_aux_loss_and_seq_aux_loss_runs_the_same_ops():
    base = _est().step_s
    assert _est(moe_aux_loss="aux_loss").step_s == pytest.approx(base, rel=1e-12)
    assert _est(moe_aux_loss="seq_aux_loss").step_s == pytest.approx(base, rel=1e-12)


def test_none_takes_the_aux_losss_host_calls_off_the_routers_count():
    """10 calls a MoE layer and micro-batch (6 forward, 4 backward) at the launch-bound op; GPT-OSS has a MoE block
    in every layer and nothing is recomputed here."""
    k = compute.KERNELS
    op_s = 14.8e-6
    on, off = float(_moe_layer_host_s(_x())), float(_moe_layer_host_s(_x(moe_aux_loss="none")))
    assert k["moe_layer_aux_loss_host_fwd"] == 6 and k["moe_layer_aux_loss_host_bwd"] == 4
    assert on - off == pytest.approx(10 * op_s, rel=1e-9)


def test_none_on_the_unfused_router_drops_the_aux_scores_and_switch_loss():
    fwd_on, bwd_on, host_on, _ = _moe_unfused_counts(_x(moe_router_fusion=False))
    fwd_off, bwd_off, host_off, _ = _moe_unfused_counts(_x(moe_router_fusion=False, moe_aux_loss="none"))
    assert float(fwd_on) - float(fwd_off) == 8
    assert float(bwd_on) - float(bwd_off) == 1
    assert float(host_on) - float(host_off) == 8
    # fused router: the aux loss's fused kernels are not among the unfused extras, so nothing to take off
    assert [float(v) for v in _moe_unfused_counts(_x(moe_aux_loss="none"))] == \
        [float(v) for v in _moe_unfused_counts(_x())]


def test_none_makes_a_host_bound_layer_faster():
    assert _est(moe_aux_loss="none").step_s < _est().step_s


def test_global_aux_loss_adds_its_calls_and_an_all_reduce_over_the_data_parallel_ranks():
    x = _x(moe_aux_loss="global_aux_loss")
    calls = float(_moe_layer_host_s(x)) - float(_moe_layer_host_s(_x()))
    assert calls == pytest.approx(4 * 14.8e-6, rel=1e-9)
    assert float(_global_aux_loss_time(x)) > 0.0
    assert float(_global_aux_loss_time(_x())) == 0.0
    assert _est(moe_aux_loss="global_aux_loss").step_s > _est().step_s


def test_global_aux_loss_at_one_rank_reduces_nothing():
    sc = resolve_job({**JOB, "hardware": {**JOB["hardware"], "count": 1},
                      "strategy": {**MCORE, "ep": 1, "moe_aux_loss": "global_aux_loss"}}, load_catalog())
    assert float(_global_aux_loss_time(_step(sc.model, sc.training, sc.system, sc.strategy, None, None, None))) == 0.0


def test_a_name_outside_megatron_cores_types_is_refused_in_english_and_chinese(tmp_path, run_cli):
    job = tmp_path / "job.yaml"
    job.write_text("model: gpt-oss-20b\nmethod: pretrain\ndata: {tokens: 1.0e9}\nseq_len: 2048\n"
                   "global_batch: {sequences: 128}\nhardware: {accelerator: h100-sxm-80gb, count: 8}\n"
                   "strategy: {framework: megatron-core, ep: 8, moe_aux_loss: sinkhorn}\n")
    for lang, words in (("en", ("strategy.moe_aux_loss", "'sinkhorn'", "none, aux_loss, seq_aux_loss, global_aux_loss")),
                        ("zh", ("strategy.moe_aux_loss", "'sinkhorn'", "允许"))):
        code, out, err = run_cli("--lang", lang, "estimate", str(job))
        assert code != 0
        assert "Traceback" not in out + err
        assert all(w in out + err for w in words), out + err
        assert len((out + err).strip().splitlines()) == 1


def test_it_is_megatron_cores_option():
    with pytest.raises(TrainsizerError, match="moe_aux_loss"):
        _est(framework="torchtitan", fsdp="full", moe_aux_loss="none")


def test_megatron_bridges_gpt_oss_rows_state_no_aux_loss():
    """gpt_oss_bridge.py sets moe_router_load_balancing_type "none" at every card commit (6799f0997, a8038f6d9,
    067f987df); every GPT-OSS row of the cards (pre-training and fine-tuning) says so, and no other row does."""
    for name in ("heldout_2027t_mbridge_card_finetune.csv", "heldout_2027h_mbridge_cards.csv"):
        with open(DATA / name, newline="") as fh:
            for row in csv.DictReader(fh):
                stated = "moe_aux_loss=none" in row["strategy_extra"]
                assert stated == row["model"].startswith("gpt-oss"), row["id"]
