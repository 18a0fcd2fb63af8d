"""LoRA on an FP8 frozen base (NeMo fp8_params / Megatron-Core fp8_param_gather: te.fp8_model_init builds every TE
linear's weight as an FP8 tensor, frozen or not) and strategy.fp8_transpose_cache false (Megatron-Core
disable_parameter_transpose_cache: the FP8 weights' transposes re-made at each use, not kept)."""

from __future__ import annotations

import pytest

from trainsizer.errors import StrategyError
from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.memory import GIB, estimate_memory
from trainsizer.models import load_model

LLAMA = load_model("llama-2-70b")
LORA = Training(method="lora", precision="fp8", seq_len=8192, global_batch_seqs=8, lora_rank=16,
                lora_targets=("qkv_proj", "o_proj"))
MI325X = System(accelerator="mi325x", gpus=8, gpus_per_node=8, memory_gib=256.0,
                peak_tflops={"bf16": 1307.4, "fp8": 2614.9}, hbm_gb_s=6000.0, intra_node_gb_s=448.0,
                inter_node_gb_s=50.0)
ST = Strategy(dp=8, micro_batch=1, recompute="none", framework="megatron-core")


def base_gib(training: Training = LORA, **options) -> float:
    return estimate_memory(LLAMA, training, MI325X, ST.with_(**options)).items_bytes["base_weights_frozen"] / GIB


def test_fp8_frozen_base_without_transpose_cache_halves_the_gemm_weights():
    bf16 = base_gib(fp8_param_allgather=False)
    with_transpose = base_gib(fp8_param_allgather=True)
    without = base_gib(fp8_param_allgather=True, fp8_transpose_cache=False)
    assert with_transpose == pytest.approx(bf16)  # FP8 data + its FP8 transpose: 1 + 1 B, as 16-bit weights
    gemm_gib = (LLAMA.params_total - 2 * LLAMA.vocab * LLAMA.hidden) / GIB  # embedding and head stay 16-bit
    assert bf16 - without == pytest.approx(gemm_gib, rel=0.01)
    # no FP8 primary weights: nothing in FP8, nothing to transpose
    assert base_gib(fp8_param_allgather=False, fp8_transpose_cache=False) == pytest.approx(bf16)
    assert base_gib() == pytest.approx(with_transpose)  # megatron-core's FP8 default (fp8_param_gather)


def test_bf16_lora_is_unchanged():
    bf16 = Training(method="lora", precision="bf16", seq_len=8192, global_batch_seqs=8, lora_rank=16,
                    lora_targets=("qkv_proj", "o_proj"))
    assert base_gib(bf16, fp8_param_allgather=True, fp8_transpose_cache=False) == pytest.approx(base_gib(bf16))


def test_full_training_drops_the_cached_transpose():
    pre = Training(method="pretrain", precision="fp8", seq_len=8192, global_batch_seqs=64)
    st = Strategy(dp=8, micro_batch=1, recompute="full", distributed_optimizer=True, framework="megatron-core",
                  fp8_param_allgather=True)
    kept = estimate_memory(LLAMA, pre, MI325X, st).items_bytes["fp8_weight_cache"]
    dropped = estimate_memory(LLAMA, pre, MI325X, st.with_(fp8_transpose_cache=False)).items_bytes
    assert kept > 0 and dropped.get("fp8_weight_cache", 0.0) == 0.0


def test_refused_outside_megatron_core():
    with pytest.raises(StrategyError, match="fp8_transpose_cache_framework"):
        estimate_memory(LLAMA, LORA, MI325X, ST.with_(framework="hf", fp8_transpose_cache=False))


def test_blackwell_per_tensor_fp8_keeps_no_transpose():
    """cuBLASLt runs FP8 GEMMs in every layout on Blackwell (nvte_is_non_tn_fp8_gemm_supported), so under per-tensor
    scaling Transformer Engine makes no transpose of an FP8 weight; MXFP8 keeps its column-wise copy, and Hopper
    (TN-only FP8 GEMMs) its transpose. MLPerf v5.0 B200 / GB200 Llama 2 70B LoRA (fp8_params, delayed scaling)."""
    b200 = System(accelerator="b200", gpus=8, gpus_per_node=8, memory_gib=180.0,
                  peak_tflops={"bf16": 2250.0, "fp8": 4500.0}, hbm_gb_s=8000.0, intra_node_gb_s=900.0,
                  inter_node_gb_s=50.0)

    def gib(system: System, recipe: str) -> float:
        training = Training(method="lora", precision="fp8", seq_len=8192, global_batch_seqs=8, lora_rank=16,
                            lora_targets=("qkv_proj", "o_proj"), fp8_recipe=recipe)
        st = ST.with_(fp8_param_allgather=True)
        return estimate_memory(LLAMA, training, system, st).items_bytes["base_weights_frozen"] / GIB

    # 1 byte per GEMM weight on Blackwell under delayed / tensorwise, 2 with MXFP8 or on a TN-only part
    assert gib(b200, "delayed") == pytest.approx(0.5 * gib(b200, "mxfp8"), rel=0.02)
    assert gib(b200, "tensorwise") == pytest.approx(gib(b200, "delayed"))
    assert gib(MI325X, "delayed") == pytest.approx(gib(b200, "mxfp8"))
