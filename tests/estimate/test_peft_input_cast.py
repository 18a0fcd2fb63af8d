"""HF PEFT's fp32 adapters cast each adapted linear's input to fp32 and the Trainer's autocast casts it back for lora_A
(perf_constants.yaml lora.peft_fp32_input_cast): charged under the hf style on plain LoRA in an eager layer, by its
counted bytes and kernels, again in a recomputed forward; not for QLoRA (bitsandbytes skips the cast under autocast),
not for NeMo AutoModel's adapters (the base dtype), not inside a compiled layer, not on a style without PEFT."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from trainsizer.estimate import compute, step_time
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.model_states import lora_adapted_widths

from .test_perf_common import h100_cluster, llama8b, step_and_layer_rates

ALL = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
TOKENS = 2 * 2048
LAYERS = 32  # llama8b


def _training(method: str = "lora", impl: str = "peft") -> Training:
    return Training(method=method, seq_len=2048, global_batch_seqs=2, lora_rank=16, lora_targets=ALL, lora_impl=impl)


def _run(training: Training, flag: bool = True, compiled: bool = False, recompute: str = "none") -> tuple:
    """(step seconds, the job's rates) of a one-GPU hf job with the style's peft_fp32_input_cast as `flag`."""
    style = dataclasses.replace(step_time.perf_style("hf"), peft_fp32_input_cast=flag)
    st = Strategy(dp=1, micro_batch=2, recompute=recompute, framework="hf", torch_compile=compiled)
    return step_and_layer_rates(llama8b(), training, h100_cluster(1), st, style)


def _cast_seconds(r, forwards: float) -> float:
    """The cast's counted bytes and kernels over every adapted linear of the layers, its forward run `forwards`
    times (twice under full recompute) and its backward once."""
    cast = load_constants().raw["lora"]["peft_fp32_input_cast"]
    w_in, _, _, _, n = lora_adapted_widths(llama8b(), _training())
    fwd = compute.stream_time(TOKENS * cast["fwd_in_elems"] * w_in * 2, r, kernels=n * cast["fwd_kernels"])
    bwd = compute.stream_time(TOKENS * cast["bwd_in_elems"] * w_in * 2, r, kernels=n * cast["bwd_kernels"])
    return LAYERS * (forwards * fwd + bwd)


def _upcast_excess(r, forwards: float) -> float:
    """The 16-bit -> fp32 half of the cast (one upcast of every adapter's input per forward, one of lora_A's input
    gradient per backward) at the H100's dynamic-cast copy rate (perf_constants.yaml dynamic_cast), beyond its stream."""
    w_in, _, _, _, _ = lora_adapted_widths(llama8b(), _training())
    n = LAYERS * TOKENS * w_in * (forwards + 1.0)
    rate = load_constants().dynamic_cast_elems_s("h100-sxm-80gb")
    return max(n / rate - n * 6.0 / r.hbm_bytes_s, 0.0)


def test_the_hf_style_runs_peft_and_the_others_do_not():
    assert step_time.perf_style("hf").peft_fp32_input_cast
    for name in ("torchtune", "torchtitan", "megatron-core"):
        assert not step_time.perf_style(name).peft_fp32_input_cast


@pytest.mark.parametrize("recompute,forwards", [("none", 1.0), ("full", 2.0)])
def test_hf_lora_pays_the_counted_cast_on_every_adapter_input(recompute, forwards):
    on, r = _run(_training(), recompute=recompute)
    off, _ = _run(_training(), flag=False, recompute=recompute)
    # to within the host's issue of the cast kernels, which the soft maximum over the layer takes in (step_time.
    # _adapter_host_s, _host_excess: a tenth of a percent here)
    assert on - off == pytest.approx(_cast_seconds(r, forwards) + _upcast_excess(r, forwards), rel=3e-3)
    # 8B, all seven linears, 4,096 tokens on an H100: tens of milliseconds, not a rounding error; the upcasts run below
    # the HBM stream there (their unvectorised copy: 1.21 elements per SM-cycle against 2.68 TB/s / 6 B)
    assert on - off > 0.02
    assert _upcast_excess(r, forwards) > 0.1 * _cast_seconds(r, forwards)


@pytest.mark.parametrize("case", ["qlora", "automodel", "compiled"])
def test_no_cast_where_the_adapters_or_the_layer_do_not_run_it(case):
    training = _training("qlora") if case == "qlora" else _training(impl="automodel" if case == "automodel" else "peft")
    compiled = case == "compiled"
    assert _run(training, compiled=compiled)[0] == _run(training, flag=False, compiled=compiled)[0]


def _copies(training: Training, name: str = "hf", impl: str = "flash", rec: int = 0) -> float:
    from trainsizer.estimate.memory import _peft_input_copies

    out = _peft_input_copies(llama8b(), training, np.array([name == "hf"]), impl, np.array([rec]))
    return float(np.asarray(out).reshape(-1)[0])


def test_memory_each_adapter_keeps_its_own_copy_of_its_input():
    """lora_A saves the bf16 copy autocast makes of PEFT's fp32 input, per adapter: q, k, v three copies of the normed
    input where one was shared (+2 h), gate and up two (+1 h), o one of the attention output beside the flash kernel's
    (+1 h); eager attention already kept a copy of o's input (benchmarks/memory_ground_truth.py measures both)."""
    h = llama8b().hidden
    assert _copies(_training()) == 2 * (2 * h + h + h)
    assert _copies(_training(), impl="eager") == 2 * (2 * h + h)
    assert _copies(Training(method="lora", seq_len=2048, global_batch_seqs=2, lora_rank=16,
                            lora_targets=("q_proj", "v_proj"))) == 2 * h


@pytest.mark.parametrize("case", ["qlora", "automodel", "torchtune", "full"])
def test_memory_no_copies_where_no_cast_runs(case):
    training = (_training("qlora") if case == "qlora" else _training(impl="automodel") if case == "automodel"
                else Training(seq_len=2048, global_batch_seqs=2) if case == "full" else _training())
    assert _copies(training, name="torchtune" if case == "torchtune" else "hf") == 0.0


def test_memory_copies_in_an_eager_layer_only():
    """Under torch.compile the partitioner decides what is saved: the copies are charged in an eager run only."""
    from trainsizer.estimate.memory import estimate_memory

    def layers(compiled: bool) -> float:
        st = Strategy(dp=1, micro_batch=2, recompute="none", framework="hf", torch_compile=compiled)
        return estimate_memory(llama8b(), _training(), h100_cluster(1), st, check=False).items_bytes[
            "layer_activations"]

    h = llama8b().hidden
    assert layers(False) - layers(True) == pytest.approx(TOKENS * LAYERS * 2 * (2 * h + h + h), rel=1e-9)
