"""The device script for known-gaps 272 (e) (benchmarks/device/megatron_mask_loader.py): its CPU smoke run prints one
JSON line a layout and case, the mask's size only where the dataset returns it."""

from __future__ import annotations

import sys

import pytest

from .device_scripts import DEVICE_DIR, tiny_lines

pytest.importorskip("torch", reason="the device script's CPU smoke run needs PyTorch (the [dev] install has none)")

SCRIPT = DEVICE_DIR / "megatron_mask_loader.py"


def test_tiny_run_prints_a_line_a_layout_with_and_without_the_mask():
    rows = tiny_lines(SCRIPT)
    assert [(r["micro_batch"], r["seq"], r["mask"]) for r in rows] == [(2, 64, True), (2, 64, False),
                                                                         (1, 128, True), (1, 128, False)]
    for r in rows:
        assert set(r) == {"micro_batch", "seq", "mask", "ms", "mask_mb", "mask_mb_s", "device", "host"}
        assert r["ms"] > 0.0 and r["device"] == "cpu"
        assert r["mask_mb"] == pytest.approx(r["micro_batch"] * r["seq"] ** 2 / 1e6 if r["mask"] else 0.0, abs=1e-3)


def test_the_dataset_returns_megatrons_causal_mask_and_keys():
    sys.path.insert(0, str(SCRIPT.parent))
    import megatron_mask_loader as ml

    item = ml.GPTLikeDataset(8, mask=True)[0]
    assert set(item) == {"tokens", "labels", "attention_mask", "loss_mask", "position_ids"}
    mask = item["attention_mask"]
    assert mask.shape == (1, 8, 8) and mask.dtype.is_floating_point is False
    assert not mask[0, 3, :4].any() and mask[0, 3, 4:].all()  # True = masked: the future positions
    assert "attention_mask" not in ml.GPTLikeDataset(8, mask=False)[0]
    # the swiss-ai rows' layouts, full size: the 300M, the 3B at MBS 1 and 2, the 8B at TP 2
    assert ml.LAYOUTS == [(2, 4096), (1, 8192), (2, 8192), (4, 4096)]
