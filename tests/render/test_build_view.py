"""The build-out's terminal tables (render/build_view.py)."""

from __future__ import annotations

import pytest

from trainsizer.render.build_view import _nvls_cell


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_nvls_cell_only_for_an_nvlink_domain(lang: str) -> None:
    nvlink = _nvls_cell({"tech": "nvlink", "nvls": True}, lang)
    assert "NVLS" in nvlink and nvlink != "—"
    assert "NVLS" in _nvls_cell({"tech": "nvlink-bridge", "nvls": False}, lang)
    # a switchless xGMI mesh or a PCIe host has no NVLink SHARP to say yes or no to
    assert _nvls_cell({"tech": "xgmi", "nvls": False}, lang) == "—"
    assert _nvls_cell({"tech": "pcie", "nvls": False}, lang) == "—"
