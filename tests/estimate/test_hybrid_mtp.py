"""A hybrid model's multi-token-prediction module (Nemotron 3 Super's '*E': ModelArch.mtp_pattern) and the passes a
step runs it (Job.mtp_passes: Megatron-Core mtp_num_layers under mtp_use_repeated_layer); docs/known-gaps.md 247."""

from __future__ import annotations

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError
from trainsizer.estimate.inputs import Training
from trainsizer.estimate.mamba import mtp_block_layers
from trainsizer.estimate.model_states import mtp_passes, param_layout
from trainsizer.evaluate import evaluate
from trainsizer.models.shipped import load_preset
from trainsizer.scenario import resolve_job

CAT = load_catalog([])
SUPER = "nemotron-3-super-120b-a12b"


def test_super_mtp_module_is_the_cards_block():
    """Megatron-Bridge's card counts 123,611,033,088 elements; the preset's backbone 120,668,707,840: the module's
    weights in the memory layout (an attention and an MoE layer with their norms, eh_proj 2h x h, three norms) are
    the difference, 2,942,325,248, its router bias included."""
    m = load_preset(SUPER)
    assert (m.mtp_layers, m.mtp_pattern) == (1, "*E")
    lay = param_layout(m, Training())
    assert lay.mtp_tp + lay.mtp_rep + lay.mtp_exp == 123_611_033_088 - 120_668_707_840
    assert lay.mtp_exp == 512 * 2 * 1024 * 2688  # the module's routed experts, split over EP as the others


def test_the_backbone_layout_holds_every_parameter():
    """The memory layout's per-layer sums (TP-split, replicated, experts) and the embedding, head and final norm are
    the model's count: the Mamba-2 mixers included (they were left out of the layout before 2026-12-06)."""
    for name in (SUPER, "nemotron-h-8b", "nemotron-3-nano-30b-a3b", "deepseek-v3", "llama-3.1-8b"):
        m = load_preset(name)
        lay = param_layout(m, Training())
        body = lay.cum_tp[-1] + lay.cum_rep[-1] + lay.cum_exp[-1]
        assert body + lay.embedding + lay.lm_head_own + lay.final_norm == m.params_total, name


def test_block_layers_weigh_the_pattern_by_its_flops():
    m = load_preset(SUPER)
    block = mtp_block_layers(m, 4096.0)
    assert 1.0 < block < 2.0  # an attention and an MoE layer: more than the average layer, under two of them
    assert mtp_block_layers(load_preset("deepseek-v3"), 4096.0) == 1.0  # the last layer repeated


def _job(model: str, passes: int | None = None, **extra) -> dict:
    job = {"model": model, "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 4096,
           "global_batch": {"sequences": 512}, "precision": "bf16",
           "hardware": {"accelerator": "gb200", "count": 64, "network": "ib-ndr400"},
           "strategy": {"framework": "megatron-core", "tp": 1, "pp": 1, "ep": 64, "micro_batch": 1,
                        "recompute": "none", "distributed_optimizer": True, "moe_dispatcher": "flex"}, **extra}
    if passes is not None:
        job["mtp_passes"] = passes
    return job


def _run(model: str = SUPER, passes: int | None = None) -> dict:
    return evaluate(resolve_job(_job(model, passes), CAT), CAT)


def test_each_pass_costs_the_block_and_a_head_and_memory():
    one, two, three = _run(), _run(passes=2), _run(passes=3)
    assert one["time"]["step_s"] == pytest.approx(_run(passes=1)["time"]["step_s"], rel=1e-12)
    d1 = two["time"]["step_s"] - one["time"]["step_s"]
    d2 = three["time"]["step_s"] - two["time"]["step_s"]
    assert d1 > 0 and d2 == pytest.approx(d1, rel=0.05)  # a pass a step, the same each
    assert d1 < 0.1 * one["time"]["step_s"]  # a block and a head of 88 layers
    assert two["memory"]["per_gpu_gib"] > one["memory"]["per_gpu_gib"]  # its activations and logits
    assert two["time"]["model_flops_per_step"] == one["time"]["model_flops_per_step"]  # MTP not in model FLOPs


def test_deepseek_mtp_unchanged_by_a_pass_count_equal_to_its_modules():
    ds = _job("deepseek-v3")
    a = evaluate(resolve_job(ds, CAT), CAT)
    b = evaluate(resolve_job(dict(ds, mtp_passes=1), CAT), CAT)
    assert a["time"]["step_s"] == b["time"]["step_s"] and a["memory"]["per_gpu_gib"] == b["memory"]["per_gpu_gib"]
    assert mtp_passes(load_preset("deepseek-v3"), Training()) == 1


def test_passes_on_a_model_without_mtp_are_refused():
    with pytest.raises(SpecError, match="mtp_passes") as err:
        resolve_job(_job("nemotron-3-nano-30b-a3b", 2), CAT)
    assert "nemotron-3-nano-30b-a3b" in str(err.value) and "多词元预测" in err.value.render("zh")
    with pytest.raises(SpecError, match="mtp_passes"):
        resolve_job(_job(SUPER, 0), CAT)


@pytest.mark.parametrize("spec", [{"preset": SUPER, "mtp_pattern": "*-"}, {"preset": SUPER, "mtp_pattern": "*X"},
                                  {"preset": "llama-3.1-8b", "mtp_layers": 1, "mtp_pattern": "*"}])
def test_a_bad_inline_mtp_pattern_names_the_key(spec):
    from trainsizer.models.inline import arch_from_inline

    with pytest.raises(SpecError, match="mtp_pattern"):
        arch_from_inline(spec)
