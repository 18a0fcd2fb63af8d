"""The Mamba-2 mixer of hybrid models (estimate/mamba.py) and how a hybrid layer pattern enters FLOPs, step time and
memory: an all-attention pattern ("*-" per transformer layer) is the plain transformer."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.catalog import load_catalog
from trainsizer.errors import StrategyError
from trainsizer.estimate import flops as F
from trainsizer.estimate.calibration import load_constants, rates
from trainsizer.estimate.mamba import (
    MAMBA,
    layout_copy_time,
    mixer_gemm_weights,
    mixer_saved_items,
    mixer_times,
    scan_flops_per_token,
    scan_time,
)
from trainsizer.estimate.memory import DEFAULT_OPTIONS, memory_per_gpu_bytes
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.estimate.validate import check_strategy
from trainsizer.models.arch import ModelArch
from trainsizer.scenario import resolve_job

from .test_perf_common import h100_cluster


def _spec(pattern: str, **kw) -> dict:
    """Inline model keys of a small hybrid model (the job file's `model:` mapping)."""
    base = dict(name="h", family="custom", layers=len(pattern), hidden=1024, heads=16, kv_heads=4, ffn=4096,
                vocab=32000, mlp="relu2", layer_pattern=pattern, ssm_heads=32, ssm_head_dim=64, ssm_state=128,
                ssm_groups=8)
    return {k: v for k, v in (base | kw).items() if v is not None}


def _hybrid(pattern: str, **kw) -> ModelArch:
    return ModelArch(**_spec(pattern, **kw))


def test_scan_flops_follow_the_chunked_algorithm():
    m = _hybrid("M")
    q, n, g, h, p = 128, 128, 8, 32, 64
    assert scan_flops_per_token(m) == 2 * q * n * g + h * (2 * q * p + 4 * n * p)
    # a longer chunk does more intra-chunk work per token and nothing else changes
    assert scan_flops_per_token(m.with_(ssm_chunk=256)) - scan_flops_per_token(m) == 2 * 128 * (n * g + h * p)


def test_mixer_weights_and_params_from_the_module_shapes():
    m = _hybrid("M")
    d_in, gn = 32 * 64, 8 * 128
    assert m.ssm_in_proj_out == 2 * d_in + 2 * gn + 32
    assert mixer_gemm_weights(m) == 1024 * (2 * d_in + 2 * gn + 32) + d_in * 1024
    conv = (d_in + 2 * gn) * (4 + 1)
    assert m.mamba_mixer_params() == mixer_gemm_weights(m) + conv + 3 * 32 + d_in
    assert m.layer_params(0).total == m.mamba_mixer_params() + 1024  # + the layer's RMSNorm


def test_forward_flops_count_each_block_once():
    m = _hybrid("M*-E", experts=8, experts_per_token=2, expert_ffn=512)
    lf = F.layer_flops(m)
    assert lf.attn_proj == 2.0 * F.attention_gemm_weights(m)  # one attention layer
    assert lf.mlp_dense == 2.0 * 2 * 1024 * 4096  # one relu2 MLP: two matrices
    assert lf.mixer == 2.0 * mixer_gemm_weights(m) and lf.scan == scan_flops_per_token(m)
    assert lf.experts == 2.0 * 2 * (2 * 1024 * 512)
    s = 4096.0
    assert F.forward_flops_per_token(m, s) == pytest.approx(lf.gemm() + lf.attn_core(s) + lf.scan + lf.lm_head)


def test_saved_items_of_the_fused_mixer():
    m = _hybrid("M")
    sp, tp, d = mixer_saved_items(m, 2.0, 2.0, 2.0 * 1024 + 4, True)
    assert d["mamba_zxbcdt"] == 2.0 * m.ssm_in_proj_out and d["mamba_scan_out"] == 2.0 * m.ssm_inner
    assert sp == pytest.approx(2.0 * 1024 + 4 + 2.0 * 1024)
    assert tp == pytest.approx(sum(v for k, v in d.items()) - sp)
    # a frozen mixer keeps no GEMM inputs for weight gradients
    _, tp_frozen, d_frozen = mixer_saved_items(m, 2.0, 2.0, 2.0 * 1024 + 4, False)
    assert "mamba_out_proj_input" not in d_frozen and tp_frozen < tp


def _h100_rates():
    return rates(h100_cluster(8), "bf16", load_constants())


def test_the_scan_backward_reruns_the_forward_it_did_not_save():
    """mamba_ssm's _mamba_chunk_scan_combined_bwd recomputes C B^T, the chunk states and their passing before its own
    kernels: the counts hold the forward's group and state GEMMs again, and more than the two operand gradients of
    each forward product (2x the forward) in time."""
    fwd, bwd = MAMBA["scan_forward"], MAMBA["scan_backward"]
    assert bwd["group"] >= 2 * fwd["group"] + 1 and bwd["qn"] >= 2 * fwd["qn"] + 1
    assert bwd["state_passes"] > 2 * fwd["state_passes"]
    m, r = _hybrid("M"), _h100_rates()
    assert float(scan_time(m, 8192.0, 1, r, bwd)) > 2.0 * float(scan_time(m, 8192.0, 1, r, fwd))


@settings(max_examples=20, deadline=None)
@given(tokens=hs.sampled_from([4096.0, 8192.0, 32768.0]), sequences=hs.integers(0, 8), tp=hs.sampled_from([1, 2, 4]))
def test_layout_copies_only_where_a_micro_batch_holds_several_sequences(tokens, sequences, tp):
    """Invariant: Megatron-Core's (s, b, h) <-> (b, s, d) copies around the fused kernels cost nothing for one sequence
    (a (s, 1, d) tensor is contiguous either way) or a batch-first stack (0), and for more read and write in_proj's
    output and the scan output once forward and the output gradient once backward (2 B each way per element)."""
    m, r = _hybrid("M"), _h100_rates()
    fwd = float(layout_copy_time(m, tokens, tp, sequences, r, MAMBA["layout_copies_forward"]))
    bwd = float(layout_copy_time(m, tokens, tp, sequences, r, MAMBA["layout_copies_backward"]))
    if sequences <= 1:
        assert fwd == bwd == 0.0
        return
    width = (m.ssm_in_proj_out + m.ssm_inner) / tp
    assert fwd == pytest.approx(4.0 * width * tokens / r.hbm_bytes_s + 2 * r.kernel_fixed_s)
    assert bwd == pytest.approx(4.0 * m.ssm_in_proj_out / tp * tokens / r.hbm_bytes_s + r.kernel_fixed_s)
    one_f, one_b = mixer_times(m, tokens, tp, r, sequences=1)
    several_f, several_b = mixer_times(m, tokens, tp, r, sequences=sequences)
    assert float(several_f - one_f) == pytest.approx(fwd) and float(several_b - one_b) == pytest.approx(bwd)


def _job(model, *, tp=1, cp=1, framework="megatron-core", method="pretrain", count=8, recompute="none"):
    return {"model": model, "method": method, "data": {"tokens": 1e9}, "seq_len": 4096,
            "global_batch": {"sequences": 64}, "precision": "bf16",
            "hardware": {"accelerator": "h100-sxm-80gb", "count": count, "network": "ib-ndr400"},
            "strategy": {"tp": tp, "pp": 1, "cp": cp, "micro_batch": 1, "recompute": recompute,
                         "framework": framework, "distributed_optimizer": True}}


def _run(job):
    sc = resolve_job(job, load_catalog())
    step = float(np.asarray(step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)["step_s"]).reshape(-1)[0])
    mem = float(np.asarray(memory_per_gpu_bytes(sc.model, sc.training, sc.system, sc.strategy,
                                                DEFAULT_OPTIONS)[0]).reshape(-1)[0])
    return sc, step, mem


@settings(max_examples=12, deadline=None)
@given(layers=hs.integers(2, 8), width=hs.sampled_from([1024, 2048]), tp=hs.sampled_from([1, 2]),
       recompute=hs.sampled_from(["none", "selective"]))
def test_an_all_attention_pattern_is_the_plain_transformer(layers, width, tp, recompute):
    """Invariant: a hybrid model whose pattern is one attention and one MLP layer per transformer layer ("*-" x L)
    has the transformer's parameters and FLOPs, and (without full recompute, which checkpoints every hybrid layer's
    input: twice as many) the same step time and peak memory."""
    common = dict(family="custom", hidden=width, heads=16, kv_heads=4, ffn=4 * width, vocab=32000, mlp="relu2")
    plain_spec = dict(name="plain", layers=layers, **common)
    hybrid_spec = dict(name="hybrid", layers=2 * layers, layer_pattern="*-" * layers, **common)
    plain, hybrid = ModelArch(**plain_spec), ModelArch(**hybrid_spec)
    assert hybrid.params_total == plain.params_total
    assert F.forward_flops_per_token(hybrid, 4096) == pytest.approx(F.forward_flops_per_token(plain, 4096), rel=1e-12)
    _, step_p, mem_p = _run(_job(plain_spec, tp=tp, recompute=recompute))
    _, step_h, mem_h = _run(_job(hybrid_spec, tp=tp, recompute=recompute))
    assert step_h == pytest.approx(step_p, rel=1e-9)
    assert mem_h == pytest.approx(mem_p, rel=1e-9)


def test_wider_mixers_cost_time_and_memory():
    """More Mamba-2 heads (a wider d_inner: in_proj, out_proj, the scan and its saved tensors) cost more step time and
    memory."""
    _, step_a, mem_a = _run(_job(_spec("*M" * 4, ssm_heads=32)))
    _, step_b, mem_b = _run(_job(_spec("*M" * 4, ssm_heads=64)))
    assert step_b > step_a and mem_b > mem_a


@pytest.mark.parametrize("change,rule", [
    (dict(tp=4), "TP 4 must divide the Mamba-2 mixer's 32 heads and 2 groups"),
    (dict(cp=8, tp=1), "context parallelism CP 8 at TP 1 must give every CP rank whole Mamba-2 heads"),
    (dict(framework="torchtune"), "framework 'torchtune' has no Mamba-2 layer"),
    (dict(framework="deepspeed"), "framework 'deepspeed' has no Mamba-2 layer"),
    (dict(method="lora"), "lora on a hybrid Mamba-2 model is not modelled yet"),
])
def test_what_is_not_modelled_is_refused_by_name(change, rule):
    model = _spec("M*-E", heads=16, kv_heads=16, ssm_groups=2, experts=8, experts_per_token=2, expert_ffn=512)
    if change.get("cp"):
        model |= {"ssm_heads": 4, "ssm_head_dim": 256}  # 4 heads over 8 CP ranks
    with pytest.raises(StrategyError, match=re.escape(rule)):
        sc = resolve_job(_job(model, **change), load_catalog())
        check_strategy(sc.model, sc.training, sc.system, sc.strategy)


def test_the_torchtitan_style_runs_a_hybrid_batch_first():
    """NeMo AutoModel's NemotronV3 (FSDP2 + EP, the torchtitan style) trains a hybrid through the same fused mamba_ssm
    kernel as Megatron-Core, batch-first (docs/known-gaps.md 259 (a)): the hybrid_framework rule admits it, and at two
    sequences a micro-batch its mixers pay no layout copies (a sequence-first torchtitan style would)."""
    from trainsizer.estimate.step_time import perf_style

    model = _spec("M*-E", heads=16, kv_heads=16, ssm_groups=2, experts=8, experts_per_token=2, expert_ffn=512)
    job = _job(model, framework="torchtitan")
    job["strategy"]["micro_batch"] = 2
    sc = resolve_job(job, load_catalog())
    check_strategy(sc.model, sc.training, sc.system, sc.strategy)  # no refusal
    titan = perf_style("torchtitan")
    assert not titan.sequence_first

    def step(style):
        out = step_time_arrays(sc.model, sc.training, sc.system, sc.strategy, framework_style=style)
        return float(np.asarray(out["step_s"]).reshape(-1)[0])

    assert step(titan) < step(dataclasses.replace(titan, sequence_first=True))
    assert _run(job)[2] > 0.0


def test_context_parallel_adds_the_mixers_all_to_alls():
    """CP 2 on a stack of Mamba-2 and MLP layers costs the mixers' all-to-alls (no attention core to hide them)."""
    sc, _, _ = _run(_job(_spec("M-" * 4), count=8))
    one = step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)
    sc2, _, _ = _run(_job(_spec("M-" * 4), count=8, cp=2))
    two = step_time_arrays(sc2.model, sc2.training, sc2.system, sc2.strategy)
    assert float(np.asarray(one["cp_comm"]).reshape(-1)[0]) == 0.0
    assert float(np.asarray(two["cp_comm"]).reshape(-1)[0]) > 0.0


def test_pipeline_stages_weigh_their_own_layers():
    """A pattern whose costly layers sit at one end makes that stage slower than the average; a uniform pattern, or no
    pipeline, does not."""
    from trainsizer.estimate.mamba import layer_costs, stage_imbalance

    front = _hybrid("MMMM----")
    costs = layer_costs(front, 4096)
    assert costs[0] > costs[-1]
    expected = 4 * costs[0] / (costs.sum() / 2)
    assert float(stage_imbalance(front, 4096, 2, 1)) == pytest.approx(expected)
    assert float(stage_imbalance(_hybrid("M-M-M-M-"), 4096, 2, 1)) == pytest.approx(1.0)
    assert float(stage_imbalance(front, 4096, 1, 1)) == 1.0
    # interleaving spreads the costly chunk: rank 0 holds chunks 0 and 2 ("MM", "--")
    assert float(stage_imbalance(front, 4096, 2, 2)) == pytest.approx(1.0)


@pytest.mark.parametrize("micro_batch", [1, 2])
def test_only_a_sequence_first_stack_pays_the_layout_copies(micro_batch):
    """The megatron-core style keeps (s, b, h) activations (PerfStyle.sequence_first): at two sequences per micro-batch
    its mixers copy across and the step is slower than the same style batch-first; at one sequence the two agree."""
    import dataclasses

    from trainsizer.estimate.step_time import perf_style

    job = _job(_spec("M-" * 4))
    job["strategy"]["micro_batch"] = micro_batch
    sc = resolve_job(job, load_catalog())
    mcore = perf_style("megatron-core")
    assert mcore.sequence_first

    def step(style):
        out = step_time_arrays(sc.model, sc.training, sc.system, sc.strategy, framework_style=style)
        return float(np.asarray(out["step_s"]).reshape(-1)[0])

    batch_first = step(dataclasses.replace(mcore, sequence_first=False))
    if micro_batch == 1:
        assert step(mcore) == pytest.approx(batch_first, rel=1e-12)
    else:
        assert step(mcore) > batch_first


def _one_gpu_rates(accelerator: str, precision: str = "bf16"):
    job = {"model": "llama-3.1-8b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 4096,
           "global_batch": {"sequences": 8}, "precision": precision, "hardware": {"accelerator": accelerator, "count": 1}}
    return rates(resolve_job(job, load_catalog()).system, precision, load_constants())


def test_blackwell_runs_the_ssd_scan_at_hoppers_rate_per_sm_clock():
    """perf_constants.yaml mamba.scan_sm_bound: on Blackwell the SSD kernels' tiles run at H100 SXM's roofline rates
    scaled by SMs x clock (the rated FP32 peaks, GB200 80 / H100 67 TF), not at the part's doubled tensor rate and HBM;
    H200 (same SMs as H100, more HBM) keeps H100's rate; A100 (another SM design) and the linear GEMMs keep their own."""
    m = _hybrid("M")
    h100, h200, gb200, a100 = (_one_gpu_rates(a) for a in ("h100-sxm-80gb", "h200-sxm-141gb", "gb200", "a100-sxm-80gb"))
    assert gb200.ssd_gemm_flops == pytest.approx(h100.gemm16_flops * 80 / 67)
    assert gb200.ssd_hbm_bytes_s == pytest.approx(h100.hbm_bytes_s * 80 / 67)
    assert h200.ssd_hbm_bytes_s == pytest.approx(h100.hbm_bytes_s) and h100.hbm_bytes_s < h200.hbm_bytes_s
    assert a100.ssd_gemm_flops == a100.ssd_hbm_bytes_s == 0.0
    kern = MAMBA["scan_backward"]
    own = float(scan_time(m, 32768.0, 1, dataclasses.replace(gb200, ssd_gemm_flops=0.0, ssd_hbm_bytes_s=0.0), kern))
    capped, on_h100 = float(scan_time(m, 32768.0, 1, gb200, kern)), float(scan_time(m, 32768.0, 1, h100, kern))
    assert own < capped < on_h100
    assert float(scan_time(m, 32768.0, 1, h200, kern)) == pytest.approx(on_h100, rel=0.02)
    # the mixer's in_proj / out_proj GEMMs and element-wise work do not move: only the scan does
    plain = dataclasses.replace(gb200, ssd_gemm_flops=0.0, ssd_hbm_bytes_s=0.0)
    f_cap, b_cap = mixer_times(m, 32768.0, 1, gb200)
    f_own, b_own = mixer_times(m, 32768.0, 1, plain)
    scan_f = float(scan_time(m, 32768.0, 1, gb200, MAMBA["scan_forward"]) - scan_time(m, 32768.0, 1, plain,
                                                                                       MAMBA["scan_forward"]))
    assert float(f_cap - f_own) == pytest.approx(scan_f) and float(b_cap - b_own) == pytest.approx(capped - own)


@pytest.mark.parametrize("accelerator", ["h100-sxm-80gb", "h100-pcie-80gb", "h100-nvl-94gb", "h200-sxm-141gb", "h20",
                                         "gh200-96gb", "b200", "gb200", "b300", "gb300", "a100-sxm-80gb", "mi300x"])
@pytest.mark.parametrize("precision", ["bf16", "fp8"])
def test_the_per_sm_rate_never_makes_the_scan_faster(accelerator, precision):
    """Invariant: the per-SM rate is a floor on the scan's time, never a speed-up, on any part and precision."""
    try:
        r = _one_gpu_rates(accelerator, precision)
    except Exception:  # a part without that precision
        pytest.skip(f"{accelerator} has no {precision}")
    assert (r.ssd_gemm_flops or r.gemm16_flops) <= r.gemm16_flops
    assert (r.ssd_hbm_bytes_s or r.hbm_bytes_s) <= r.hbm_bytes_s
    m = _hybrid("M")
    plain = dataclasses.replace(r, ssd_gemm_flops=0.0, ssd_hbm_bytes_s=0.0)
    assert float(scan_time(m, 8192.0, 1, r, MAMBA["scan_forward"])) >= float(
        scan_time(m, 8192.0, 1, plain, MAMBA["scan_forward"]))
