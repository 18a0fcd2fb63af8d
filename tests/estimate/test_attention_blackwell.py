"""Blackwell attention constants come from NVIDIA's measured cuDNN SDPA (benchmarks/attention_blackwell.py,
benchmarks/data/cudnn_sdpa_blackwell.csv): the shipped figures are the derivation's, not tuned on training rows."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import attention_blackwell as ab  # noqa: E402
from trainsizer.estimate.calibration import load_constants  # noqa: E402


@pytest.fixture(scope="module")
def data():
    return ab.rows()


def test_every_row_names_its_source_commit_and_container(data):
    assert len(data) >= 100
    for r in data:
        assert r["source"].startswith("NVIDIA/cudnn-frontend benchmark/") and len(r["commit"]) == 40, r
        assert r["image"].startswith("nvcr.io/nvidia/pytorch:") and r["date"][:4] in ("2025", "2026"), r
        assert r["pass"] in ("fwd", "bwd") and float(r["tflops"]) > 0, r


@pytest.mark.parametrize("family", ["b200", "b300", "gb200", "gb300"])
def test_native_attention_share_is_the_derived_one(data, family):
    k = load_constants()
    assert k.flash_fraction(family, "native") == pytest.approx(ab.derived_constants(data)[family], abs=5e-4)


@pytest.mark.parametrize("family", ["b200", "b300", "gb200", "gb300"])
def test_native_length_scaling_is_the_measured_curve(data, family):
    """attention.native_length_scaling on Blackwell is cuDNN 9.13.1's curve (the release the rate is taken at) as
    measured on the part itself, or on its sibling die where it was not (ab.CURVE_PART)."""
    k = load_constants()
    lengths, fwd, bwd = k.native_length_scaling[family]
    m_lengths, m_fwd, m_bwd = ab.length_curve(data, ab.CURVE_PART[ab.BASE_CUDNN][family], ab.BASE_CUDNN)
    assert lengths == tuple(float(n) for n in m_lengths) and k.native_length_ref == ab.BASE_SEQ
    assert fwd == pytest.approx(m_fwd) and bwd == pytest.approx(m_bwd)
    # a later release (strategy.cudnn_release) reads its own curve, measured at that release
    lengths, fwd, bwd = k.native_length_release[ab.RELEASE_CUDNN[:4]][family]
    m_lengths, m_fwd, m_bwd = ab.length_curve(data, ab.CURVE_PART[ab.RELEASE_CUDNN][family], ab.RELEASE_CUDNN)
    assert lengths == tuple(float(n) for n in m_lengths)
    assert fwd == pytest.approx(m_fwd) and bwd == pytest.approx(m_bwd)


def test_softmax_share_is_the_derived_one(data):
    assert load_constants().softmax_share_fwd == pytest.approx(ab.derived_constants(data)["softmax_share_fwd"],
                                                                abs=5e-4)


def test_share_inverts_the_model_ratio(data):
    """s from a pair, put back into the model's forward / backward split, gives that pair's time ratio."""
    k = load_constants()
    _, _, big_r, s = ab.share_of_pair(data, "9.17.0", "128", 8192)
    bf = ab.bwd_flops_ratio(data, "9.17.0", "128")
    b = bf * ab.tflops(data, "gb200", "9.17.0", 8192, "fwd", "128") / ab.tflops(data, "gb200", "9.17.0", 8192,
                                                                               "bwd", "128")
    assert (1.0 + b) / (1.0 + b - s) == pytest.approx(big_r, rel=1e-12)
    assert 1.05 < big_r < 1.15 and 0.3 < s < 0.45
    # the backward / forward time the model assumes (3.1) is what cuDNN measures on Blackwell at 8K
    assert b == pytest.approx(k.flash_bwd_over_fwd, rel=0.1)


def test_grace_parts_run_attention_at_their_sustained_matmul_rates():
    """In a step, attention runs among the GEMMs at the power limit: GB300's base rate over GB200's is its sustained
    GEMM share over GB200's (both from the measured matmul rates, 2,174 / 1,822), with the SFU gain on top."""
    k = load_constants()
    attention = k.flash_fraction("gb300", "native") / k.flash_fraction("gb200", "native")
    assert attention == pytest.approx(k.gemm_efficiency("gb300") / k.gemm_efficiency("gb200"), rel=0.005)
    assert attention == pytest.approx(ab.MAMF_BF16["gb300"] / ab.MAMF_BF16["gb200"], rel=0.005)


def test_cudnn_rates_are_single_kernels_at_the_maximum_clock(data):
    """cuDNN's benchmark times one kernel between profiler set-ups: GB300 / B200 at one release sits at the parts'
    clock x SMs ratio times the SFU gain, well below their sustained matmul ratio times it."""
    k = load_constants()
    fwd_m, bwd_over = k.attention_sfu("gb300")
    burst, sustained = ab.burst_and_sustained((1.0 + k.flash_bwd_over_fwd) / (fwd_m + fwd_m * bwd_over))
    t = {g: 1.0 / ab.tflops(data, g, ab.BASE_CUDNN, ab.BASE_SEQ, "fwd", "128")
         + 2.5 / ab.tflops(data, g, ab.BASE_CUDNN, ab.BASE_SEQ, "bwd", "128") for g in ("b200", "gb300")}
    measured = t["b200"] / t["gb300"]
    assert abs(measured - burst) < 0.05 < sustained - measured


def test_a_missing_or_doubled_row_is_an_error(data):
    with pytest.raises(ValueError, match="0 rows"):
        ab.tflops(data, "b200", "9.99.0", 8192, "fwd", "128")
    with pytest.raises(ValueError, match="2 rows"):
        ab.tflops(data + data[:1], data[0]["gpu"], data[0]["cudnn"], int(data[0]["seq_len"]), data[0]["pass"],
                  data[0]["q_heads"], data[0]["data_type"])
