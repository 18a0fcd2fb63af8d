"""The device script for known-gaps 222 (a) (benchmarks/device/primerl_moe_parts.py): its CPU smoke run prints the
environment line, then every part of prime-rl's MoE layer at both routings, each part's seconds a step from its
milliseconds and calls, and a grouped forward that agrees with a per-expert loop."""

from __future__ import annotations

import pytest

from .device_scripts import DEVICE_DIR, tiny_lines

pytest.importorskip("torch", reason="the device script's CPU smoke run needs PyTorch (the [dev] install has none)")

SCRIPT = DEVICE_DIR / "primerl_moe_parts.py"
PARTS = {"gather fwd", "gather bwd scatter_add", "combine fwd scatter_add", "combine bwd gather",
         "ep permute fwd index", "ep permute bwd index_put accumulate", "moe fwd+bwd"} | {
    f"{w} {p}" for w in ("w1", "w2") for p in ("grouped fwd", "grouped dgrad", "grouped wgrad", "plain mm fwd")}


def test_tiny_run_prints_every_part_at_both_routings_with_its_seconds_a_step():
    head, *lines = tiny_lines(SCRIPT)
    assert head["device"] == "cpu" and head["torch"] and head["experts"] * head["ffn"] > 0
    for kind in ("balanced", "random"):
        assert {x["part"] for x in lines if x["routing"] == kind} == PARTS
    for x in lines:
        assert x["ms"] > 0 and x["per_step_s"] == pytest.approx(x["ms"] * x["calls_a_step"] / 1e3, abs=1e-3)
    calls = {x["part"]: x["calls_a_step"] for x in lines}
    # 48 layers x 2 micro-batches; w1 stands for w1 and w3; forwards run twice (the checkpointed re-run)
    assert calls["w1 grouped fwd"] == 384 and calls["w2 grouped fwd"] == 192 and calls["w2 grouped wgrad"] == 96
    assert calls["gather fwd"] == 192 and calls["gather bwd scatter_add"] == 96
    # bf16 rows of width 32 against an fp32 per-expert loop: the grouped kernel computes the same product
    assert all(x["check_max_abs_err"] < 0.5 for x in lines if x["part"] == "moe fwd+bwd")
    assert all(x["tflops"] > 0 for x in lines if "grouped" in x["part"] or "plain" in x["part"])
