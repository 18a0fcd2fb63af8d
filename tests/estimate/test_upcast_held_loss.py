"""LitGPT's loss under Lightning Fabric's true-half precision (loss_impl upcast-held): the 16-bit logits converted to
fp32 (HalfPrecision.convert_output), F.cross_entropy on the fp32 rows, whose log-softmax kernel for a vocabulary row
too wide for shared memory reads its input three times, and the backward's zero-filled NLL gradient, two-pass
log-softmax backward and cast back to 16 bits: 22 + 26 B per logit element against the fused count's 6 + 12
(perf_constants.yaml cross_entropy.upcast_held, step_time._fp32_loss_excess); HF's and torchtune's eager losses the
same (cross_entropy.upcast / upcast_shift). Checked against the H200 profile of benchmarks/device/h200_2026_12_04
(prof.jsonl, l1b_full_nogc_mb8_s2048: cunn_SoftMaxForward / Backward 7.9 / 8.4 ms over 2.1e9 fp32 logits, 16 B each
at ~4.2 TB/s)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from trainsizer.estimate import compute
from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.models.arch import ModelArch

MODEL = ModelArch(name="toy", family="llama", layers=8, hidden=2048, heads=16, kv_heads=16, ffn=8192, vocab=256000)
HBM_GB_S = 600.0
CARD = System(accelerator="a10g", gpus=1, gpus_per_node=1, memory_gib=24.0, peak_tflops={"bf16": 70.0},
              hbm_gb_s=HBM_GB_S, intra_node_gb_s=32.0)
SEQ, MB, STEP_MB = 512, 2, 3
TRAINING = Training(method="lora", seq_len=SEQ, global_batch_seqs=MB * STEP_MB, lora_rank=8,
                    lora_targets=("q_proj", "v_proj"), precision="bf16")


def _step(loss_impl: str, model: ModelArch = MODEL) -> float:
    st = Strategy(micro_batch=MB, recompute="none", framework="torchtune", loss_impl=loss_impl)
    return float(np.asarray(step_time_arrays(model, TRAINING, CARD, st)["step_s"]).reshape(-1)[0])


def test_the_counts_are_the_codes():
    assert compute.CE_BYTES["upcast_held"] == (6.0 + 16.0, 4.0 + 16.0 + 6.0)


def test_the_step_streams_the_fp32_passes_beyond_the_fused_count():
    extra = _step("upcast-held") - _step("compiled")  # compiled: the fused count
    logits = STEP_MB * MB * SEQ * MODEL.vocab
    rated = logits * (22.0 - 6.0 + 26.0 - 12.0) / (HBM_GB_S * 1e9)
    assert rated <= extra < 2.0 * rated  # at most the rated bandwidth, at least half of it


def test_it_grows_with_the_vocabulary():
    small = dataclasses.replace(MODEL, vocab=MODEL.vocab // 4)
    big_extra = _step("upcast-held") - _step("compiled")
    small_extra = _step("upcast-held", small) - _step("compiled", small)
    assert small_extra == pytest.approx(big_extra / 4.0, rel=1e-6)


def test_memory_is_not_moved_by_the_time_term():
    st = Strategy(micro_batch=MB, recompute="none", framework="torchtune", loss_impl="upcast-held")
    items = estimate_memory(MODEL, TRAINING, CARD, st, check=False).items_bytes
    # fp32 logits (held by the caller: live_at_rerun logits, their own item) + log-softmax
    assert items["logits"] + items["held_logits"] == pytest.approx(8.0 * MB * SEQ * MODEL.vocab, rel=0.01)
    assert items["held_logits"] == pytest.approx(4.0 * MB * SEQ * MODEL.vocab, rel=0.01)


def _step_fw(loss_impl: str, framework: str, **strategy) -> float:
    st = Strategy(micro_batch=MB, recompute="none", framework=framework, loss_impl=loss_impl, **strategy)
    return float(np.asarray(step_time_arrays(MODEL, TRAINING, CARD, st)["step_s"]).reshape(-1)[0])


def test_hf_and_torchtune_losses_run_the_same_fp32_kernels_eager():
    """transformers ForCausalLMLoss (logits.float(), F.cross_entropy) and torchtune's chunked loss (each chunk
    .float()) stream what upcast-held does; HF 4.46-4.47's shifted copy 8 + 12 B more; the fused count elsewhere."""
    logits = STEP_MB * MB * SEQ * MODEL.vocab
    held = _step_fw("upcast-held", "hf")
    assert _step_fw("auto", "hf") == pytest.approx(held)
    assert _step_fw("upcast", "torchtune") == pytest.approx(_step_fw("auto", "torchtune"))
    shift = _step_fw("upcast-shift", "hf") - held
    assert logits * (8.0 + 12.0) / (HBM_GB_S * 1e9) <= shift < 2.0 * logits * 20.0 / (HBM_GB_S * 1e9)
    assert _step_fw("auto", "hf") > _step_fw("compiled", "hf")  # a fused loss keeps the fused count


def test_a_compiled_model_computes_its_loss_fused():
    eager = _step_fw("auto", "hf") - _step_fw("compiled", "hf")
    compiled = _step_fw("auto", "hf", torch_compile=True) - _step_fw("compiled", "hf", torch_compile=True)
    assert compiled == pytest.approx(0.0, abs=1e-9)
    assert eager > 0.0
