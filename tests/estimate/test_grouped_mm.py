"""torch._grouped_mm's rate for the routed experts of a style that runs it (PerfStyle.moe_torch_grouped_mm: torchtitan):
the share of the dense GEMM rate derived from TorchAO's measured B200 table (benchmarks/grouped_mm.py,
benchmarks/data/grouped_mm_blackwell.csv; perf_constants.yaml gemm.grouped_mm_over_dense), applied to the routed
experts' GEMMs only, and only where the style runs the kernel."""

from __future__ import annotations

import dataclasses
import statistics
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import grouped_mm as gm  # noqa: E402
from trainsizer.estimate.calibration import load_constants  # noqa: E402
from trainsizer.estimate.inputs import Strategy, System, Training  # noqa: E402
from trainsizer.estimate.step_time import perf_style, step_time_arrays  # noqa: E402
from trainsizer.models.arch import ModelArch  # noqa: E402


@pytest.fixture(scope="module")
def data():
    return gm.rows()


def test_every_row_names_its_source_commit_build_and_part(data):
    assert len(data) == 19
    for r in data:
        assert r["source"].startswith("pytorch/ao torchao/prototype/moe_training/README.md"), r
        assert len(r["commit"]) == 40 and r["torch"][:4] in ("2.10", "2.11") and r["gpu"] == "b200", r
        assert float(r["us"]) > 0, r


@pytest.mark.parametrize("family", ["b200", "b300", "gb200", "gb300"])
def test_blackwell_share_is_the_derived_one(data, family):
    assert load_constants().grouped_mm_over_dense(family) == pytest.approx(gm.derived_constants(data)[family], abs=5e-4)


@pytest.mark.parametrize("part", ["h100-sxm", "h200-sxm", "a100-sxm-80gb", "mi300x"])
def test_parts_without_a_figure_keep_the_dense_rate(part):
    assert load_constants().grouped_mm_over_dense(part) == 1.0


def test_the_model_gives_torchaos_mean_mxfp8_speedup_over_the_tables_shapes(data):
    """The same share of the MXFP8 dense rate, with the recipe's casts, against TorchAO's measured MXFP8 / bf16
    grouped forward + backward (quantisation included) over its eight shapes: the mean within 5%."""
    pairs = gm.mxfp8_speedups(data)
    measured = statistics.mean(m for _, m, _ in pairs)
    model = statistics.mean(p for _, _, p in pairs)
    assert model == pytest.approx(measured, rel=0.05)


def _moe() -> ModelArch:
    return ModelArch(name="moe", family="llama4", layers=4, hidden=5120, heads=40, kv_heads=8, ffn=0, vocab=202048,
                     max_position=8192, experts=16, experts_per_token=1, expert_ffn=8192)


def _gb200() -> System:
    return System(accelerator="gb200", gpus=16, gpus_per_node=4, memory_gib=184,
                  peak_tflops={"bf16": 2500.0, "fp16": 2500.0, "fp8": 5000.0}, hbm_gb_s=8000.0,
                  intra_node_gb_s=900.0, scaleup_domain=72, inter_node_gb_s=50.0)


def _forward(system: System, grouped: bool, framework: str = "torchtitan") -> float:
    style = dataclasses.replace(perf_style(framework), moe_torch_grouped_mm=grouped)
    st = Strategy(dp=16, zero=3, ep=16, micro_batch=1, framework=framework)
    out = step_time_arrays(_moe(), Training(seq_len=8192, global_batch_seqs=16), system, st, framework_style=style)
    return float(np.asarray(out["forward_compute"]))


def test_the_routed_experts_alone_run_at_the_grouped_share_on_blackwell():
    """One expert a GPU, 8,192 tokens: the forward's routed-expert GEMMs (two 8,192 x 8,192 x 5,120 and one 8,192 x
    5,120 x 8,192 a layer, compute-bound) take 1 / 0.453 their dense time; nothing else moves."""
    system, k = _gb200(), load_constants()
    rate = 2500e12 * k.gemm_efficiency("gb200")
    dense_s = 4 * 3 * 2.0 * 8192 * 8192 * 5120 / rate
    added = _forward(system, True) - _forward(system, False)
    assert added == pytest.approx(dense_s * (1.0 / k.grouped_mm_over_dense("gb200") - 1.0), rel=0.03)


def test_the_style_sets_it_torchtitan_runs_grouped_mm_megatron_core_does_not():
    assert perf_style("torchtitan").moe_torch_grouped_mm
    assert not perf_style("megatron-core").moe_torch_grouped_mm


def test_hopper_is_unchanged():
    h100 = System(accelerator="h100-sxm", gpus=16, gpus_per_node=8, memory_gib=80,
                  peak_tflops={"bf16": 989.0, "fp16": 989.0, "fp8": 1979.0}, hbm_gb_s=3350.0, intra_node_gb_s=450.0,
                  inter_node_gb_s=50.0)
    assert _forward(h100, True) == _forward(h100, False)


def _forward_stated(framework: str, stated) -> float:
    st = Strategy(dp=16, zero=3 if framework == "torchtitan" else 1, ep=16, micro_batch=1, framework=framework,
                  moe_torch_grouped_mm=stated)
    out = step_time_arrays(_moe(), Training(seq_len=8192, global_batch_seqs=16), _gb200(), st)
    return float(np.asarray(out["forward_compute"]))


def test_a_stated_kernel_wins_over_the_style():
    """strategy.moe_torch_grouped_mm: false on torchtitan (TE's GroupedLinear there) is the dense rate; true on
    megatron-core is the grouped share; null keeps each style's."""
    assert _forward_stated("torchtitan", None) > _forward_stated("torchtitan", False)
    assert _forward_stated("torchtitan", None) == pytest.approx(_forward_stated("torchtitan", True))
    assert _forward_stated("megatron-core", True) > _forward_stated("megatron-core", None)
    assert _forward_stated("megatron-core", None) == pytest.approx(_forward_stated("megatron-core", False))
