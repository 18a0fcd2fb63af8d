"""PyTorch's unvectorised dtype-casting copy (perf_constants.yaml dynamic_cast): its per-SM rate is the two public
micro-benchmarks' (A100 bf16 -> fp32, pytorch PR #195542's control; H100 PCIe fp32 -> fp16, PR #137053's before), and
PEFT's 16-bit -> fp32 input copies pay it where it is below the HBM stream (H100 / H200), not where no rate is listed
(Blackwell: the stream) nor on QLoRA (no cast under autocast)."""

from __future__ import annotations

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.step_time import estimate_time
from trainsizer.scenario import resolve_job

# (elements, seconds, SMs, max boost GHz) as perf_constants.yaml dynamic_cast cites them
MEASURED = {"a100": (67_108_864, 362.46e-6, 108, 1.41), "h100-pcie": (134_217_728, 0.5526e-3, 114, 1.755)}


def test_the_per_sm_rate_is_the_two_measurements():
    k = load_constants()
    per_cycle = {part: n / s / (sms * ghz * 1e9) for part, (n, s, sms, ghz) in MEASURED.items()}
    for part, value in per_cycle.items():
        assert value == pytest.approx(k.raw["dynamic_cast"]["elems_per_sm_cycle"], rel=0.01), part
        sms, ghz = MEASURED[part][2:]
        assert k.raw["dynamic_cast"]["parts"][part] == {"sms": sms, "clock_ghz": ghz}
    assert k.dynamic_cast_elems_s("h200-sxm-141gb") == pytest.approx(1.21 * 132 * 1.98e9)
    assert k.dynamic_cast_elems_s("h100-pcie-80gb") == pytest.approx(1.21 * 114 * 1.755e9)
    assert k.dynamic_cast_elems_s("b200") is None and k.dynamic_cast_elems_s("mi300x") is None


def _step(accelerator: str, method: str = "lora", **strategy) -> float:
    job = {"model": "llama-3.1-8b", "method": method, "data": {"tokens": 1e8}, "seq_len": 2048,
           "global_batch": {"sequences": 2}, "hardware": {"accelerator": accelerator, "count": 1},
           "strategy": {"micro_batch": 2, "framework": "hf", "torch_compile": False, **strategy}}
    sc = resolve_job(job, load_catalog())
    return estimate_time(sc.model, sc.training, sc.system, sc.strategy).step_s


def test_peft_upcasts_pay_the_copy_rate_only_where_it_is_below_the_stream(monkeypatch):
    """Dropping the H200's entry from the table returns the upcasts to the HBM stream: the step shortens for plain
    LoRA (the job's default adapter targets: about 1% of an 8B step); QLoRA with 16-bit norms, whose Linear4bit skips
    the cast, does not move; QLoRA under PEFT's fp32 norms does (its linears' fp32 outputs: docs/known-gaps.md 243 (a))."""
    k = load_constants()
    cases = {"lora": ("lora", {}), "qlora": ("qlora", {"kbit_upcast": False}), "upcast": ("qlora", {"kbit_upcast": True})}
    with_rate = {key: _step("h200-sxm-141gb", m, **s) for key, (m, s) in cases.items()}
    parts = {key: v for key, v in k.raw["dynamic_cast"]["parts"].items() if key != "h200"}
    monkeypatch.setitem(k.raw["dynamic_cast"], "parts", parts)
    without = {key: _step("h200-sxm-141gb", m, **s) for key, (m, s) in cases.items()}
    assert with_rate["lora"] > without["lora"] * 1.005
    assert with_rate["qlora"] == pytest.approx(without["qlora"], rel=1e-12)
    assert with_rate["upcast"] > without["upcast"] * 1.005
