"""bitsandbytes' optimizers (adamw8bit, paged_adamw, paged_adamw8bit): the device synchronise after every parameter's
update exposes the host's Python per tensor (step_time._bnb_tensor_sync_s), and the 32-bit paged optimizer keeps
fp32 states on a bf16 model (docs/known-gaps.md 162)."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.memory import estimate_memory, paged_bytes_moved
from trainsizer.estimate.step_time import module_param_tensors, step_time_arrays
from trainsizer.models import load_model

LLAMA2 = load_model("llama-2-7b")
A100 = System(accelerator="a100-sxm-80gb", gpus=1, gpus_per_node=1, memory_gib=80.0, peak_tflops={"bf16": 312.0},
              hbm_gb_s=2039.0, intra_node_gb_s=300.0)
FIGURE = float(load_constants().raw["optimizer"]["bnb_host_s_per_tensor"])


def _optimizer_s(optimizer: str, constants=None, method: str = "full", **kw) -> float:
    training = Training(method=method, seq_len=2048, global_batch_seqs=2, optimizer=optimizer,
                        lora_targets=("q_proj", "v_proj") if method == "lora" else (),
                        lora_rank=8 if method == "lora" else 0)
    strategy = Strategy(micro_batch=2, recompute="full", framework="torchtune", **kw)
    out = step_time_arrays(LLAMA2, training, A100, strategy, constants=constants)
    return float(out["optimizer"].reshape(-1)[0])


def _without_host_figure():
    k = copy.deepcopy(load_constants())
    k.raw["optimizer"]["bnb_host_s_per_tensor"] = 0.0
    return k


def test_transformers_modules_hold_nine_tensors_a_llama_layer():
    """q, k, v, o, gate, up, down and two RMSNorms a layer, the embedding, the untied head and the final norm: 291
    for Llama 2 7B (torchtune's and transformers' module layout); a tied 3B holds no head."""
    assert float(module_param_tensors(LLAMA2, LLAMA2.layers)) == 291.0
    tied = replace(LLAMA2, tied_embeddings=True)
    assert float(module_param_tensors(tied, tied.layers)) == 290.0


@settings(max_examples=20, deadline=None)
@given(st.integers(min_value=1, max_value=80))
def test_tensor_count_grows_by_a_layers_tensors(layers):
    assert float(module_param_tensors(LLAMA2, layers + 1) - module_param_tensors(LLAMA2, layers)) == 9.0


def test_each_trainable_tensor_of_a_bitsandbytes_step_pays_the_host_figure():
    """Full fine-tuning: 291 tensors; LoRA on q / v: A and B of 2 linears a layer, 128 tensors; torch's AdamW none."""
    k0 = _without_host_figure()
    full = _optimizer_s("adamw8bit") - _optimizer_s("adamw8bit", k0)
    assert full == pytest.approx(291 * FIGURE, rel=1e-6)
    lora = _optimizer_s("adamw8bit", method="lora") - _optimizer_s("adamw8bit", k0, method="lora")
    assert lora == pytest.approx(128 * FIGURE, rel=1e-6)
    paged = _optimizer_s("paged_adamw") - _optimizer_s("paged_adamw", k0)
    assert paged == pytest.approx(291 * FIGURE, rel=1e-6)
    assert _optimizer_s("adamw") == _optimizer_s("adamw", k0)


def test_flat_partitions_and_host_steps_are_not_charged():
    """ZeRO / FSDP hand the optimizer flat or sharded parameters (not counted); ZeRO-Offload steps on the host."""
    k0 = _without_host_figure()
    for kw in ({"zero": 3, "dp": 1}, {"offload": "optimizer"}):
        assert _optimizer_s("adamw8bit", **kw) == pytest.approx(_optimizer_s("adamw8bit", k0, **kw)), kw


def test_paged_adamw_keeps_fp32_states_on_a_bf16_model():
    """torchtune trains in bf16 without a master, yet bitsandbytes' 32-bit PagedAdamW allocates float32 states: 8 B a
    parameter in unified memory, all of it crossing PCIe each step on a 24 GB card (twice the bf16 AdamW moments)."""
    training = Training(method="full", seq_len=2048, global_batch_seqs=4, optimizer="paged_adamw")
    strategy = Strategy(micro_batch=4, recompute="full", framework="torchtune", optimizer_in_backward=True)
    card = replace(A100, accelerator="rtx-4090", memory_gib=24.0, pcie_gb_s=31.5)
    moved = float(paged_bytes_moved(LLAMA2, training, card, strategy))
    assert moved == pytest.approx(8.0 * LLAMA2.params_total, rel=1e-3)
    est = estimate_memory(LLAMA2, training, card, strategy, check=False)
    assert est.items_bytes["optimizer_states"] == 0
    assert est.host_bytes_per_node >= 8.0 * LLAMA2.params_total * 0.999
