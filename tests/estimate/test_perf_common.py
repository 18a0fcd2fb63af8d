"""Shared builders for the performance-estimator tests (no tests here; imported by the test_perf* modules)."""

from __future__ import annotations

from trainsizer.estimate import step_time
from trainsizer.estimate.inputs import System
from trainsizer.models.arch import ModelArch


def gpt(layers=24, hidden=2048, heads=16, vocab=51200, seq=2048, ffn=None) -> ModelArch:
    return ModelArch(name="gpt", family="gpt", layers=layers, hidden=hidden, heads=heads, kv_heads=heads,
                     ffn=ffn or 4 * hidden, vocab=vocab, mlp="gelu", norm="layernorm", position="learned",
                     max_position=seq)


def llama8b() -> ModelArch:
    return ModelArch(name="llama-3.1-8b", family="llama", layers=32, hidden=4096, heads=32, kv_heads=8,
                     ffn=14336, vocab=128256, max_position=8192)


def mixtral() -> ModelArch:
    return ModelArch(name="mixtral-8x7b", family="mixtral", layers=32, hidden=4096, heads=32, kv_heads=8,
                     ffn=14336, vocab=32000, experts=8, experts_per_token=2, expert_ffn=14336)


def h100_cluster(gpus=64, inter_gb_s=50.0, intra_gb_s=450.0, nvls=True) -> System:
    return System(accelerator="h100-sxm", gpus=gpus, gpus_per_node=8, memory_gib=80,
                  peak_tflops={"bf16": 989.0, "fp16": 989.0, "fp8": 1979.0}, hbm_gb_s=3350.0,
                  intra_node_gb_s=intra_gb_s, scaleup_domain=8, nvls=nvls, inter_node_gb_s=inter_gb_s)


def b200_cluster(gpus=8, inter_gb_s=50.0) -> System:
    return System(accelerator="b200", gpus=gpus, gpus_per_node=8, memory_gib=180,
                  peak_tflops={"bf16": 2250.0, "fp16": 2250.0, "fp8": 4500.0, "fp4": 9000.0}, hbm_gb_s=7700.0,
                  intra_node_gb_s=900.0, scaleup_domain=8, inter_node_gb_s=inter_gb_s)


def a100_cluster(gpus=64, inter_gb_s=25.0) -> System:
    return System(accelerator="a100-sxm-80gb", gpus=gpus, gpus_per_node=8, memory_gib=80,
                  peak_tflops={"bf16": 312.0, "fp16": 312.0}, hbm_gb_s=2039.0, intra_node_gb_s=300.0,
                  scaleup_domain=8, inter_node_gb_s=inter_gb_s, tdp_w=400.0)


def step_and_layer_rates(model, training, cluster, strategy, style) -> tuple:
    """(step seconds, the rates `step_time._layer_time` was given) of one estimate under the perf style `style`."""
    seen = []
    real = step_time._layer_time

    def spy(x):
        seen.append(x.r)
        return real(x)

    step_time._layer_time = spy
    try:
        out = step_time.step_time_arrays(model, training, cluster, strategy, framework_style=style)
    finally:
        step_time._layer_time = real
    return float(out["step_s"]), seen[0]
