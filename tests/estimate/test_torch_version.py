"""strategy.torch_version: the PyTorch release a job runs (docs/known-gaps.md 311 (a)). From 2.9 F.rms_norm is one
fused kernel forward and backward (framework.TORCH_RELEASE_FACTS), so a style whose RMSNorm is nn.RMSNorm (torchtitan)
charges an eager run's norms as a fused norm kernel, in the step time and in what the layer saves; unset or an older
release, as before; compiled runs, other styles and a named norm_kernel are not moved."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as hs

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError
from trainsizer.estimate.batch import evaluate_batch
from trainsizer.estimate.framework import (
    AUTO_CHOICES,
    TORCH_RELEASE_FACTS,
    rms_norm_fused_by_release,
    style_option,
    torch_has,
)
from trainsizer.estimate.inputs import FRAMEWORKS, Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import estimate_time
from trainsizer.scenario import resolve_job
from trainsizer.spec import StrategySpec

from .test_batch import GPUS, _grid, _one
from .test_perf_common import h100_cluster, llama8b

# torchtitan's Llama 3 8B on 8 H100, FSDP, no activation checkpointing: the norms' bytes show in time and memory
JOB = {"model": "llama-3.1-8b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 8192,
       "global_batch": {"sequences": 8}, "hardware": {"accelerator": "h100-sxm-80gb", "count": 8}}
FSDP = {"zero": 3, "micro_batch": 1, "recompute": "none", "framework": "torchtitan", "torch_compile": False}


def _run(**strategy) -> tuple[float, float]:
    sc = resolve_job({**JOB, "strategy": {**FSDP, **strategy}}, load_catalog())
    parts = (sc.model, sc.training, sc.system, sc.strategy)
    return estimate_time(*parts).step_s, estimate_memory(*parts).per_gpu_bytes


@pytest.mark.parametrize(("written", "line"), [("2.9", "2.9"), ("2.9.1", "2.9"), ("v2.9.0", "2.9"),
                                               ("2.9.0.dev20250815+cu128", "2.9"), ("2.14.0+cu130", "2.14"),
                                               ("2.10.0a0+b558c98", "2.10"), ("2.8.0rc4", "2.8"), (None, None)])
def test_a_version_is_read_as_its_release_line(written, line):
    assert StrategySpec(torch_version=written).torch_version == line


@pytest.mark.parametrize("bad", [2.9, 2, "two", "2", "2.x", "torch 2.9"])
def test_what_is_not_a_version_is_refused_with_the_forms_allowed(bad):
    with pytest.raises(SpecError, match="torch_version") as err:
        resolve_job({**JOB, "strategy": {**FSDP, "torch_version": bad}}, load_catalog())
    assert "2.9.0.dev20250815+cu128" in str(err.value) and "quote" in str(err.value)


@given(hs.integers(0, 3), hs.integers(0, 30))
def test_a_fact_holds_from_its_release_on_and_never_unstated(major, minor):
    line = f"{major}.{minor}"
    first = tuple(int(n) for n in TORCH_RELEASE_FACTS["fused_rms_norm"].split("."))
    assert torch_has("fused_rms_norm", line) == ((major, minor) >= first)
    assert not torch_has("fused_rms_norm", None)


def test_only_torchtitan_runs_nn_rmsnorm():
    """torchtitan's norms are nn.RMSNorm from 3b39d7ab0 (PR 985); HF's LlamaRMSNorm and torchtune's RMSNorm are op
    by op, Megatron-Core's Transformer Engine's; every other style leaves the flag off."""
    assert [n for n in FRAMEWORKS if n != "auto" and style_option(n, "rms_norm_functional")] == ["torchtitan"]
    picked = rms_norm_fused_by_release("auto", np.arange(len(AUTO_CHOICES)), "2.9")
    assert picked.tolist() == [c == "torchtitan" for c in AUTO_CHOICES]


def test_from_29_an_eager_torchtitan_run_charges_the_fused_norm():
    """The step and the peak as with norm_kernel fused: faster and smaller than the op-by-op norms; unset and 2.8
    are the estimate as before to the byte."""
    before, fused = _run(), _run(norm_kernel="fused")
    assert _run(torch_version="2.8") == before
    assert _run(torch_version="2.9") == fused == _run(torch_version="2.14.0+cu130")
    assert fused[0] < before[0] and fused[1] < before[1]


def test_what_the_release_does_not_move():
    """A named norm kernel wins; a compiled run's norms are Inductor's either way; HF's RMSNorm is op by op."""
    assert _run(torch_version="2.9", norm_kernel="eager") == _run(norm_kernel="eager")
    assert _run(torch_version="2.9", torch_compile=True) == _run(torch_compile=True)
    assert _run(torch_version="2.9", framework="hf") == _run(framework="hf")


def test_auto_batch_agrees_with_the_scalar_estimators():
    """Under framework auto the strategies that resolve to torchtitan take the fused norm and the others do not
    (the style's norm kernel an array in the batch): the batch equals the scalar estimate strategy by strategy."""
    model, system = llama8b(), h100_cluster(GPUS)
    training = Training(method="pretrain", seq_len=4096, global_batch_seqs=256)
    st = dataclasses.replace(_grid(80, seed=11, moe=False).with_(framework="auto"), torch_version="2.9")
    out = evaluate_batch(model, training, system, st, chunk=23, threads=2)
    old = evaluate_batch(model, training, system, dataclasses.replace(st, torch_version=None), chunk=23, threads=2)
    moved = out["valid"] & (out["step_s"] != old["step_s"])
    assert moved.any() and (out["valid"] & ~moved).any()  # both kinds in the batch
    for i in np.flatnonzero(out["valid"])[:40]:
        one = dataclasses.replace(_one(st, i), torch_version="2.9")
        assert out["step_s"][i] == pytest.approx(estimate_time(model, training, system, one).step_s, rel=1e-12)
        assert out["mem_bytes"][i] == pytest.approx(estimate_memory(model, training, system, one).per_gpu_bytes,
                                                    rel=1e-12)
