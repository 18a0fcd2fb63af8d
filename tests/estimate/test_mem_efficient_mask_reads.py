"""SDPA's memory-efficient kernels read the explicit mask's tile at every (query block, key block) of every head, once
in the forward (again under full recompute) and once in the backward; two heads' reads of a tile are a batch element's
whole mask (s^2 x bytes) apart (the kernels' grids), so past the part's measured L2 resident set every head reads it
from DRAM, inside it only the first (step_time._mask_read_time; docs/known-gaps.md 216 (g))."""

from __future__ import annotations

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.estimate import step_time
from trainsizer.evaluate import evaluate
from trainsizer.scenario import resolve_job

CAT = load_catalog([])
HEADS = 32


def _job(accelerator: str, seq: int, mask: bool = True, precision: str = "bf16") -> dict:
    model = {"name": "probe-mask", "layers": 8, "hidden": 4096, "heads": HEADS, "kv_heads": 8, "ffn": 14336,
             "vocab": 32000, "mlp": "swiglu", "norm": "rmsnorm", "position": "rope", "tied_embeddings": False,
             "max_position": 131072}
    return {"model": model, "method": "full", "data": {"tokens": 1e8}, "seq_len": seq,
            "global_batch": {"sequences": 2}, "precision": precision, "explicit_attention_mask": mask,
            "hardware": {"accelerator": accelerator, "count": 1},
            "strategy": {"micro_batch": 2, "recompute": "full", "framework": "hf"}}


def _step_s(accelerator: str, seq: int, **kw) -> float:
    return evaluate(resolve_job(_job(accelerator, seq, **kw), CAT), CAT)["time"]["step_s"]


def _mask_s(accelerator: str, seq: int, monkeypatch, **kw) -> float:
    """The step's seconds with the mask reads less the same without them."""
    with monkeypatch.context() as m:
        full = _step_s(accelerator, seq, **kw)
        m.setattr(step_time, "_mask_read_time", lambda x: 0.0)
        return full - _step_s(accelerator, seq, **kw)


def test_an_unmasked_step_reads_no_mask(monkeypatch):
    assert _mask_s("h100-sxm-80gb", 8192, monkeypatch, mask=False) == 0.0


def test_every_head_reads_the_mask_from_dram_past_the_l2_and_only_the_first_inside_it(monkeypatch):
    """H100 (39.5 MiB measured resident): 8,192^2 x 2 B = 128 MiB past it, 2,048^2 x 2 B = 8 MiB inside it."""
    ratio = _mask_s("h100-sxm-80gb", 8192, monkeypatch) / _mask_s("h100-sxm-80gb", 2048, monkeypatch)
    assert ratio == pytest.approx(HEADS * 16, rel=1e-6)


def test_a_part_without_a_measured_l2_set_reads_it_for_every_head_at_any_length(monkeypatch):
    ratio = _mask_s("rtx-pro-6000", 8192, monkeypatch) / _mask_s("rtx-pro-6000", 2048, monkeypatch)
    assert ratio == pytest.approx(16, rel=1e-6)


def test_an_fp32_mask_is_read_at_four_bytes(monkeypatch):
    bf16 = _mask_s("h100-sxm-80gb", 8192, monkeypatch)
    fp32 = _mask_s("h100-sxm-80gb", 8192, monkeypatch, precision="fp32")
    assert fp32 == pytest.approx(2 * bf16, rel=1e-6)


def test_the_reads_cost_what_their_bytes_take_at_the_hbm_rate(monkeypatch):
    """8 layers x 2 sequences x 32 heads x 8,192^2 x 2 B x 3 passes (forward, its recompute, backward)."""
    from trainsizer.estimate.calibration import rates

    system = resolve_job(_job("h100-sxm-80gb", 8192), CAT).system
    nbytes = 8 * 2 * HEADS * 8192.0**2 * 2 * 3
    assert _mask_s("h100-sxm-80gb", 8192, monkeypatch) == pytest.approx(nbytes / rates(system, "bf16").hbm_bytes_s,
                                                                      rel=1e-6)
