"""LatentMoE (Nemotron 3 Super / Ultra, ModelArch.moe_latent): the routed experts on a latent width behind two
hidden x latent projections, the all-to-all at the latent width (docs/known-gaps.md 247)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.estimate.flops import layer_flops
from trainsizer.estimate.inputs import Training
from trainsizer.estimate.model_states import param_layout
from trainsizer.evaluate import evaluate
from trainsizer.models.inline import arch_from_inline
from trainsizer.models.shipped import load_preset
from trainsizer.scenario import resolve_job

CAT = load_catalog([])
SUPER = "nemotron-3-super-120b-a12b"


def test_super_counts_as_its_checkpoint():
    """Megatron-Bridge's Nemotron 3 Super card (examples/model_verification_cards/nemotron-3-super-120b-a12b/card.yaml
    at 067f987df, hf_to_megatron_gpu): 123,611,033,088 elements in 42,683 tensors, the 41 fp32 router biases
    included; less the MTP block ('*E': an attention and an MoE layer, eh_proj 2h x h, enorm / hnorm, its final norm)
    the backbone is the preset's count; the card's name says 120B total, 12B active."""
    m = load_preset(SUPER)
    assert (m.moe_latent, m.expert_width, m.hidden, m.experts, m.experts_per_token) == (1024, 1024, 4096, 512, 22)
    attn = next(m.layer_params(i) for i in range(m.layers) if m.layer_kind(i) == "attention").total
    moe = next(m.layer_params(i) for i in range(m.layers) if m.layer_kind(i) == "moe").total
    mtp = attn + moe + 2 * m.hidden * m.hidden + 3 * m.hidden
    assert m.params_total + mtp == 123_611_033_088
    assert m.params_total == 120_668_707_840
    # 22 of 512 routed experts, each two latent x 2688 matrices (squared ReLU)
    assert m.params_total - m.params_active == 40 * (512 - 22) * 2 * 1024 * 2688
    assert m.params_total / 1e9 == pytest.approx(120, abs=1.0) and m.params_active / 1e9 == pytest.approx(12, abs=1.0)
    # a Mamba layer 9 tensors, attention 5, MoE 7 + 2 a routed expert (gate, bias, shared up / down, the two
    # projections, norm); + embedding, final norm, head
    tensors = 9 * m.mamba_layers + 5 * m.attention_layers + (7 + 2 * m.experts) * m.moe_layer_count + 3
    assert tensors + 5 + (7 + 2 * m.experts) + 4 == 42_683  # + the MTP block: its two layers, eh_proj and 3 norms


def _flop_utils_moe_layer_flops(b, s, h, ffn, shared, k, latent=None):
    """Megatron-Bridge src/megatron/bridge/training/utils/flop_utils.py moe_layer_flops at 067f987df (swiglu False),
    transcribed: forward FLOPs of an MoE layer's routed and shared experts (the router not counted)."""
    if latent is None:
        routed = 4 * b * s * h * ffn * k
    else:
        routed = 4 * b * s * latent * ffn * k
        routed += 4 * b * s * h * latent
    return routed + 4 * b * s * h * shared


@settings(max_examples=40, deadline=None)
@given(latent=st.integers(1, 4096))
def test_moe_flops_are_flop_utils(latent):
    m = load_preset(SUPER).with_(moe_latent=latent)
    lf = layer_flops(m)
    per_layer = (lf.experts + lf.shared + lf.latent_proj) / m.moe_layer_count
    assert per_layer == pytest.approx(_flop_utils_moe_layer_flops(1, 1, 4096, 2688, 5376, 22, latent), rel=1e-12)
    assert lf.router == 2.0 * 4096 * 512 * m.moe_layer_count  # the router reads the hidden state
    plain = layer_flops(m.with_(moe_latent=0))
    assert plain.experts + plain.shared == pytest.approx(
        _flop_utils_moe_layer_flops(1, 1, 4096, 2688, 5376, 22) * m.moe_layer_count, rel=1e-12)


def test_a_model_without_a_latent_is_unchanged():
    """moe_latent 0 is the hidden width: no projection, the experts' params, FLOPs and layout as before."""
    m = load_preset("nemotron-3-nano-30b-a3b")
    assert m.moe_latent == 0 and m.expert_width == m.hidden
    assert layer_flops(m).latent_proj == 0.0
    assert all(m.layer_params(i).latent_proj == 0 for i in range(m.layers))


def test_projections_are_replicated_over_tp_in_the_layout():
    """fc1_latent_proj / fc2_latent_proj are TELinear parallel_mode 'duplicated' (Megatron-LM moe_layer.py at
    d98e8a64d): counted with the norms and the router, whole on every TP rank; the experts at the latent width."""
    m = load_preset(SUPER)
    base = m.with_(moe_latent=0)
    lay, lay0 = param_layout(m, Training()), param_layout(base, Training())
    assert lay.cum_rep[-1] - lay0.cum_rep[-1] == 40 * 2 * 4096 * 1024
    assert lay.cum_tp[-1] == lay0.cum_tp[-1]  # attention and the shared expert as before
    assert lay.cum_exp[-1] / lay0.cum_exp[-1] == pytest.approx(1024 / 4096)


def _job(latent: int, gpus: int = 8, **strategy) -> dict:
    model = {"preset": SUPER, "moe_latent": latent, "mtp_layers": 0}  # no MTP module: the stack's layers alone
    return {"model": model, "method": "full", "data": {"tokens": 1e9}, "seq_len": 4096,
            "global_batch": {"sequences": 256}, "precision": "bf16",
            "hardware": {"accelerator": "h100-sxm-80gb", "count": gpus},
            "strategy": {"framework": "megatron-core", "tp": 1, "pp": 1, "ep": gpus, "micro_batch": 1,
                         "recompute": "full", "distributed_optimizer": True, **strategy}}


def _run(latent: int, **kw) -> dict:
    return evaluate(resolve_job(_job(latent, **kw), CAT), CAT)


def test_all_to_all_carries_the_latent_width():
    """The dispatch / combine all-to-all moves expert_width-wide tokens: at latent = hidden what the plain model
    moves; halving the latent takes it toward half (bandwidth-bound at 4,096-token micro-batches over 8 GPUs)."""
    full = _run(4096)["time"]["breakdown_s"]["ep_comm"]
    plain = evaluate(resolve_job(_job(0), CAT), CAT)
    assert plain["time"]["breakdown_s"]["ep_comm"] == pytest.approx(full, rel=1e-9)
    one, half = _run(1024)["time"]["breakdown_s"]["ep_comm"], _run(512)["time"]["breakdown_s"]["ep_comm"]
    assert 0.0 < half < one < full
    assert half / one == pytest.approx(0.5, abs=0.1)
    assert one / full == pytest.approx(0.25, abs=0.1)


def test_a_narrower_latent_costs_less_time_and_memory():
    wide, narrow = _run(2048), _run(1024)
    assert narrow["time"]["step_s"] < wide["time"]["step_s"]
    assert narrow["memory"]["per_gpu_gib"] < wide["memory"]["per_gpu_gib"]
    assert narrow["time"]["model_flops_per_step"] < wide["time"]["model_flops_per_step"]


@pytest.mark.parametrize("spec,key", [
    ({"preset": SUPER, "moe_latent": 4097}, "moe_latent"),
    ({"preset": SUPER, "hidden": 512, "heads": 4, "kv_heads": 2}, "moe_latent"),
    ({"preset": "llama-3.1-8b", "moe_latent": 512}, "moe_latent"),
    ({"preset": SUPER, "moe_latent": 512.0}, "moe_latent"),
])
def test_bad_inline_latent_names_the_key(spec, key):
    from trainsizer.errors import SpecError

    with pytest.raises(SpecError, match=key):
        arch_from_inline(spec)
