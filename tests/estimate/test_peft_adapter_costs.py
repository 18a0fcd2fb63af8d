"""What PEFT's LoRA layers and bitsandbytes' 4-bit layers cost on the host in an eager HF step
(step_time._adapter_host_s, _nf4_kernels; PEFT's fp32 input casts on the GPU: test_peft_input_cast.py): every adapter
kernel and every kernel of bitsandbytes' double-quantised dequantisation is issued from Python one by
one, at the vendor's launch-bound op (host_sync.launch_bound_op_s), on top of a base layer's host time. A layer
compiled by torch.compile and CUDA graphs issue none of them from Python."""

from __future__ import annotations

import dataclasses

import pytest

from trainsizer.estimate import compute, step_time
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.host_sync import host_figure
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.model_states import lora_adapted_widths
from trainsizer.estimate.step_time import estimate_time, perf_style

from .test_perf_common import h100_cluster, llama8b

ALL = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
TOKENS = 2 * 2048


def _training(method: str = "lora", impl: str = "peft", targets=ALL, seq: int = 2048, batch: int = 2) -> Training:
    return Training(method=method, seq_len=seq, global_batch_seqs=batch, lora_rank=16, lora_targets=targets,
                    lora_impl=impl)


def _spy(name: str, training: Training, style, recompute: str = "none", compiled: bool = False,
         cuda_graphs: str | None = None, framework: str = "hf") -> tuple:
    """(what step_time.`name` returned for the job, the job's rates)."""
    seen = []
    real = getattr(step_time, name)

    def spy(x):
        v = real(x)
        seen.append((float(v), x.r))
        return v

    st = Strategy(dp=1, micro_batch=2, recompute=recompute, framework=framework, torch_compile=compiled,
                  cuda_graphs=cuda_graphs)
    setattr(step_time, name, spy)
    try:
        estimate_time(llama8b(), training, h100_cluster(1), st, framework_style=style)
    finally:
        setattr(step_time, name, real)
    return seen[0]


def _hf(**flags):
    return dataclasses.replace(perf_style("hf"), **flags)


def test_each_eager_adapter_kernel_costs_a_launch_bound_op_on_the_host():
    host, _ = _spy("_adapter_host_s", _training(), _hf(), recompute="full")
    n = lora_adapted_widths(llama8b(), _training())[4]
    lc = load_constants().raw["lora"]
    # PEFT's fp32 input casts among them (lora.peft_fp32_input_cast, plain LoRA under the hf style)
    fwd = lc["fwd_kernels"] + lc["peft_fp32_input_cast"]["fwd_kernels"]
    bwd = lc["bwd_kernels"] + lc["peft_fp32_input_cast"]["bwd_kernels"]
    op_s = host_figure("launch_bound_op_s", "nvidia")
    # full recompute runs the forward twice
    assert host == pytest.approx(op_s * n * (2 * fwd + bwd), rel=1e-9)


def test_a_compiled_layer_issues_no_adapter_kernel_from_python():
    host, _ = _spy("_adapter_host_s", _training(), _hf(), compiled=True)
    assert host == 0.0


@pytest.mark.parametrize("graphs", ["layer", "full_iteration"])
def test_cuda_graphs_capture_the_adapters(graphs):
    """Megatron-Core's per-layer graphs (NeMo MCORE_CUDA_GRAPH) hold the adapters inside the captured layer; its
    eager layers issue them (its fused kernels leave the adapters eager)."""
    eager, _ = _spy("_adapter_host_s", _training(), None, framework="megatron-core")
    host, _ = _spy("_adapter_host_s", _training(), None, cuda_graphs=graphs, framework="megatron-core")
    assert eager > 0.0 and host == 0.0


def test_bitsandbytes_double_quantisation_runs_three_kernels_a_dequantisation():
    nested, _ = _spy("_adapter_host_s", _training("qlora"), _hf(), recompute="full")
    single, _ = _spy("_adapter_host_s", _training("qlora"), _hf(bnb_nested_dequant=False), recompute="full")
    op_s = host_figure("launch_bound_op_s", "nvidia")
    per_use = compute.KERNELS["nf4_dequantise_nested"] - 1.0
    # dequantised in the forward, the recompute's forward and the backward, one per linear weight
    assert nested - single == pytest.approx(op_s * compute.KERNELS["nf4_dequantise"] * per_use * 3, rel=1e-9)


def test_a_short_sample_lora_step_is_host_bound_and_pays_for_every_adapter():
    """One 154-token sample a micro-batch (LLaMA-Factory's example LoRA run): the GPU finishes a layer before the
    host has issued it, so adapting five more linears adds about their host ops, 32 layers of them, not their GPU
    work."""
    st = Strategy(dp=1, micro_batch=1, recompute="full", framework="hf", torch_compile=False)

    def step(targets) -> float:
        tr = Training(method="lora", seq_len=2048, global_batch_seqs=1, lora_rank=8, lora_targets=targets,
                      sample_mean_tokens=154.0)
        return estimate_time(llama8b(), tr, h100_cluster(1), st).step_s

    qv, every = step(("q_proj", "v_proj")), step(ALL)
    lc = load_constants().raw["lora"]
    cast = lc["peft_fp32_input_cast"]
    per_linear = 2 * (lc["fwd_kernels"] + cast["fwd_kernels"]) + lc["bwd_kernels"] + cast["bwd_kernels"]
    added = 32 * 5 * per_linear * host_figure("launch_bound_op_s", "nvidia")
    assert every - qv == pytest.approx(added, rel=0.25)
