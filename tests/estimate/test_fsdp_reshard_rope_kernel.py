"""strategy.rope_kernel (TE's fused RoPE in an uncompiled run) and strategy.fsdp_reshard (when FSDP2 frees what it
gathered: after forward, after backward, or after the step's last backward, NeMo AutoModel's MoE path)."""

from __future__ import annotations

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError, StrategyError
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import estimate_time
from trainsizer.messages import msg
from trainsizer.render.i18n import t
from trainsizer.scenario import resolve_job

# NeMo AutoModel's Qwen3-30B-A3B benchmark layout (perf_heldout40): EP 8 over 8 H100, FSDP2 over the same ranks,
# 4 micro-batches a step, full activation checkpointing, no compile
MOE = {"model": "qwen3-30b-a3b", "data": {"tokens": 1e9}, "seq_len": 4096, "global_batch": {"sequences": 128},
       "hardware": {"accelerator": "h100-sxm-80gb", "count": 8, "network": "ib-ndr400"}}
MOE_STRATEGY = {"framework": "torchtitan", "fsdp": "full", "ep": 8, "micro_batch": 4, "recompute": "full",
                "torch_compile": False, "norm_kernel": "fused", "activation_kernel": "fused", "moe_dispatcher": "flex"}
# a dense FSDP2 job (every parameter an FSDP unit)
DENSE = {"model": "llama-3.1-8b", "data": {"tokens": 1e9}, "seq_len": 4096, "global_batch": {"sequences": 64},
         "hardware": {"accelerator": "h100-sxm-80gb", "count": 8, "network": "ib-ndr400"}}
DENSE_STRATEGY = {"framework": "torchtitan", "fsdp": "full", "micro_batch": 2, "recompute": "full",
                  "torch_compile": False}


def _scenario(job: dict, base: dict, **strategy):
    return resolve_job({**job, "strategy": {**base, **strategy}}, load_catalog())


def _time(job: dict = MOE, base: dict = MOE_STRATEGY, **strategy):
    sc = _scenario(job, base, **strategy)
    return estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False)


def _items(job: dict = MOE, base: dict = MOE_STRATEGY, **strategy) -> dict[str, float]:
    sc = _scenario(job, base, **strategy)
    return estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False).items_bytes


# --- rope_kernel


def test_fused_rope_takes_the_fused_bytes_in_an_eager_run():
    """TE's fused apply_rotary_pos_emb reads and writes each q / k element once; the torchtitan style's eager RoPE
    streams 20 B an element: stated fused, the uncompiled step is faster, and the compiled step does not move."""
    eager = _time().breakdown_s["compute"]
    assert _time(rope_kernel="fused").breakdown_s["compute"] < eager
    assert _time(rope_kernel="eager").breakdown_s["compute"] == pytest.approx(eager, rel=1e-12)
    compiled = _time(torch_compile=True).step_s
    assert _time(torch_compile=True, rope_kernel="fused").step_s == pytest.approx(compiled, rel=1e-12)
    assert _time(torch_compile=True, rope_kernel="eager").step_s > compiled


def test_rope_kernel_counts_the_rotation_over_q_and_k():
    """The element-wise traffic ratio with RoPE fused equals the one with every kernel fused but the norms' and the
    activation's own choice: the eager RoPE's 20 B over the q and k widths is what moves."""
    from trainsizer.estimate.calibration import load_constants
    from trainsizer.estimate.compute import eager_elementwise_traffic
    from trainsizer.models import load_model

    model, eager_b = load_model("llama-2-13b"), load_constants().eager_bytes_per_element
    h, qkv, ffn = 5120, 3 * 5120, 13824
    fused_total = 22 * h + 4 * qkv + 6 * ffn
    assert float(eager_elementwise_traffic(model, eager_b, 20.0, "fused", act_kernel="fused", rope_kernel="fused")) \
        == pytest.approx(1.0)
    assert float(eager_elementwise_traffic(model, eager_b, 20.0, "fused", act_kernel="fused")) == pytest.approx(
        (22 * h + 20 * 2 * h + 6 * ffn) / fused_total)
    # under the framework's own fused kernels only a RoPE said to be eager adds traffic
    assert float(eager_elementwise_traffic(model, eager_b, 20.0, fused_rest=True, rope_kernel="eager")) == \
        pytest.approx((22 * h + 20 * 2 * h + 6 * ffn) / fused_total)


def test_unknown_rope_kernel_is_refused_by_name_in_both_languages():
    with pytest.raises(SpecError, match="rope_kernel"):
        _scenario(MOE, MOE_STRATEGY, rope_kernel="triton")
    assert t("field_strategy.rope_kernel", "en") == "RoPE kernel"
    assert t("field_strategy.rope_kernel", "zh") != t("field_strategy.rope_kernel", "en")


# --- fsdp_reshard


def test_reshard_after_forward_is_the_unstated_default_without_pipelining():
    base = _time(DENSE, DENSE_STRATEGY)
    stated = _time(DENSE, DENSE_STRATEGY, fsdp_reshard="forward")
    assert stated.step_s == pytest.approx(base.step_s, rel=1e-12)
    assert _items(DENSE, DENSE_STRATEGY, fsdp_reshard="forward") == _items(DENSE, DENSE_STRATEGY)


def test_no_reshard_after_forward_drops_the_backward_gather():
    """reshard_after_forward False: one all-gather a micro-batch instead of two, so less FSDP traffic; the step
    mode gathers and reduce-scatters once a step (4 micro-batches here), less again."""
    fwd = _time(DENSE, DENSE_STRATEGY).breakdown_s["dp_comm"]
    bwd = _time(DENSE, DENSE_STRATEGY, fsdp_reshard="backward").breakdown_s["dp_comm"]
    step = _time(DENSE, DENSE_STRATEGY, fsdp_reshard="step").breakdown_s["dp_comm"]
    assert step < bwd < fwd


def test_held_parameters_and_gradients_cost_memory():
    """Without resharding after forward every unit's 16-bit parameters stay gathered to its backward; the step mode
    also holds the unsharded gradients in the fp32 reduce dtype in place of the sharded ones."""
    fwd, bwd, step = (_items(DENSE, DENSE_STRATEGY, **kw) for kw in
                      ({}, {"fsdp_reshard": "backward"}, {"fsdp_reshard": "step"}))
    params = 8.03e9
    # every unit gathered at once (beside the shards), in place of the few units the prefetch holds
    assert bwd["framework_buffers"] == pytest.approx(2.0 * params, rel=0.05)
    assert bwd["framework_buffers"] > fwd["framework_buffers"]
    assert "fsdp_unsharded_grads" not in bwd or bwd["fsdp_unsharded_grads"] == 0.0
    assert step["fsdp_unsharded_grads"] == pytest.approx(4.0 * params, rel=0.02)
    assert step["gradients"] == 0.0
    assert sum(step.values()) > sum(bwd.values()) > sum(fwd.values())


def test_experts_outside_fsdp_keep_their_gradients_and_are_not_gathered():
    """EP over the whole shard group: AutoModel leaves the routed experts out of FSDP (apply_fsdp ignored_params),
    so the step mode holds only the other parameters' gradients unsharded (fp32), the experts' stay in .grad (bf16,
    an eighth of them a GPU under EP 8), and only the other parameters are gathered."""
    from trainsizer.estimate.step_time import _param_split

    sc = _scenario(MOE, MOE_STRATEGY)
    total, experts = _param_split(sc.model)
    dense = total - experts
    step = _items(fsdp_reshard="step")
    assert step["fsdp_unsharded_grads"] == pytest.approx(4.0 * dense, rel=0.02)
    assert step["gradients"] == pytest.approx(2.0 * experts / 8.0, rel=0.02)
    assert _items(fsdp_reshard="backward")["framework_buffers"] == pytest.approx(2.0 * dense, rel=0.02)


def test_fsdp_reshard_is_refused_without_fsdp_and_by_value():
    with pytest.raises(StrategyError) as err:
        _time(DENSE, {**DENSE_STRATEGY, "fsdp": "none", "zero": 1}, fsdp_reshard="step")
    assert err.value.rule == "fsdp_reshard_fsdp"
    assert "zero=1" in str(err.value)
    assert "需要完全分片" in msg("rule_fsdp_reshard_fsdp", zero=1).tr("zh")
    with pytest.raises(SpecError, match="fsdp_reshard"):
        _scenario(DENSE, DENSE_STRATEGY, fsdp_reshard="never")
    assert t("field_strategy.fsdp_reshard", "zh") != t("field_strategy.fsdp_reshard", "en")


def test_automodel_rows_state_the_reshard_point_their_recipe_sets():
    """The MoE parallelizer's reshard_after_forward default False (components/moe/config.py): backward on the 2025-10
    rows without enable_fsdp_optimizations, step where the recipe sets it (known-gaps 137 (b), (d)); gpt-oss 120B sets
    reshard_after_forward true, the pipelined DeepSeek-V3 / Kimi K2 rows time it through pp_fsdp_once_per_step."""
    import csv
    from pathlib import Path

    data = Path(__file__).resolve().parents[2] / "benchmarks" / "data"
    stated = {}
    for name in ("heldout_pretrain.csv", "heldout_2026b_automodel.csv", "heldout_2026o_automodel_hybridep.csv"):
        for r in csv.DictReader((data / name).open(encoding="utf-8")):
            if r["id"].startswith(("automodel_", "amhep_")):
                extra = dict(kv.split("=", 1) for kv in r["strategy_extra"].split(";") if "=" in kv)
                stated[r["id"]] = extra.get("fsdp_reshard")
    assert stated["automodel_qwen3_30b_a3b_bf16_8gpu"] == stated["automodel_gpt_oss_20b_bf16_8gpu"] == "backward"
    assert stated["automodel_nemotron3_nano_30b_a3b_bf16_8gpu"] == "step"
    assert stated["automodel_gpt_oss_120b_bf16_64gpu"] is None
    assert {v for k, v in stated.items() if k.startswith("amhep_")} == {"step"}
