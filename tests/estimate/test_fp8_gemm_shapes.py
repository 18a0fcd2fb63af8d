"""The GEMM-level FP8 / BF16 check (benchmarks/fp8_gemm_shapes.py, benchmarks/data/fp8_gemm_shapes.csv): the
published table is read as Transformer Engine's guide states it, its shapes are the ones TE's benchmark derives, and
the estimate's kernel-only FP8 gain stays at or under the measured kernel-only gain (docs/known-gaps.md 96)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import fp8_gemm_shapes as fg  # noqa: E402
from trainsizer.catalog import load_catalog  # noqa: E402


@pytest.fixture(scope="module")
def data():
    return fg.rows()


def test_every_row_names_its_source_commit_and_a_catalog_part(data):
    ids = set(load_catalog().accelerators)
    assert len(data) == 22
    sources = ("gemm_profiling.rst 1609c890e", "FBGEMM PR 2546", "pytorch/ao PR 2185")
    for r in data:
        assert any(s in r["source"] for s in sources) and r["part"] in ids, r
        assert r["mode"] in ("autocast", "prequant", "fwd_bwd") and r["pass"] in ("fprop", "dgrad", "wgrad", "layer"), r
        assert float(r["bf16_ms"]) > 0 and any(r[c] for c in fg.RECIPES), r
        assert not (r["mode"] == "prequant" and r["fp8_delayed_ms"]), "TE runs DelayedScaling autocast only"


def test_shapes_are_te_benchmarks_and_give_its_flop_count(data):
    """The guide's forward table: ~6.39 TFLOP a layer's forward at 15,872 tokens, h 4,096, ffn 16,384; dgrad swaps K and
    N, wgrad puts the tokens on the contraction axis, each with the forward's FLOPs."""
    fwd = next(r for r in data if r["pass"] == "fprop" and r["op"] == "sum")
    assert sum(2 * m * k * n for m, k, n in fg.shapes(fwd)) / 1e12 == pytest.approx(6.39, abs=0.01)
    assert fg.shapes({**fwd, "op": "attn_out"}) == [(15872.0, 4096.0, 4096.0)]
    assert fg.shapes({**fwd, "pass": "dgrad", "op": "qkv"}) == [(15872.0, 12288.0, 4096.0)]
    assert fg.shapes({**fwd, "pass": "wgrad", "op": "mlp_down"}) == [(16384.0, 15872.0, 4096.0)]


def test_each_mode_times_what_its_benchmark_ran(data):
    """autocast adds the casts to the kernel-only time (none in bf16); a forward + backward row times three GEMMs of
    the forward's FLOPs each, plus the output gradient's cast."""
    gemms = fg.shapes(next(r for r in data if r["op"] == "sum"))
    fp8, bf16 = fg.part_rates("h200-nvl-141gb", "delayed"), fg.part_rates("h200-nvl-141gb", None)
    assert fg.model_ms(gemms, fp8, "autocast") > fg.model_ms(gemms, fp8, "prequant")
    assert fg.model_ms(gemms, bf16, "autocast") == fg.model_ms(gemms, bf16, "prequant")  # bf16: nothing to cast
    assert fg.model_ms(gemms, bf16, "fwd_bwd") == pytest.approx(3 * fg.model_ms(gemms, bf16, "prequant"), rel=0.02)
    assert fg.model_ms(gemms, fp8, "fwd_bwd") > 3 * fg.model_ms(gemms, fp8, "prequant")


def test_kernel_only_gain_does_not_exceed_the_measured_one(data):
    """Training adds work beside the FP8 kernels, never removes it: the estimate's FP8 / BF16 GEMM ratio on
    pre-quantized operands stays at or under TE's measured one, per layer, on Hopper and Blackwell."""
    prequant = [c for c in fg.per_layer(data) if c.row["mode"] == "prequant"]
    assert {c.row["part"] for c in prequant} == {"b300", "h200-nvl-141gb"}
    for c in prequant:
        assert c.model <= c.measured, (c.row["part"], c.column, c.model, c.measured)


def test_grouped_rows_are_deepgemm_s_h800_table():
    """DeepGEMM's README at 55ab91f: 4 grouped (contiguous) and 6 dense rows at 4,096+ rows, H800 SXM5, and the
    FP8 share of the dense peak they give (1,214-1,346 TFLOP/s grouped: 0.61-0.68 of 1,979)."""
    rs = fg.grouped_rows()
    assert len(rs) == 10 and {r["kernel"] for r in rs} == {"grouped_contiguous", "normal"}
    for r in rs:
        assert "DeepGEMM README.md at 55ab91f72f76e8a6db0e86282c3169a88d93df1b" in r["source"], r
        assert r["part"] in load_catalog().accelerators and int(r["m"]) >= 4096, r
    grouped = [fg.fp8_peak_share(r) for r in rs if r["kernel"] == "grouped_contiguous"]
    assert min(grouped) == pytest.approx(1214 / 1978.9, rel=1e-3) and max(grouped) == pytest.approx(1346 / 1978.9, rel=1e-3)


def test_the_model_does_not_over_credit_fp8_at_moe_expert_shapes():
    """docs/known-gaps.md 252 (b): at every grouped MoE shape of DeepGEMM's table the model's FP8 rate, per-tensor or
    block-scaled, stays under the measured block-scaled kernel's, so Grok-1's over-predicted FP8 gain is not the
    expert GEMMs' kernel rate; at Grok-1's own expert shapes the model's FP8 / BF16 GEMM time is below the rows'
    measured step ratio."""
    for r in fg.grouped_rows():
        if r["kernel"] == "grouped_contiguous":
            assert fg.fp8_peak_share(r, "blockwise") < fg.fp8_peak_share(r, "delayed") < fg.fp8_peak_share(r), r
    for _, tokens, etp, step in fg.GROK_EXPERTS:
        gemms = fg.expert_gemms(tokens, etp)
        ratio = fg.model_ms(gemms, fg.part_rates("h100-sxm-80gb", "delayed"), "fwd_bwd") / fg.model_ms(
            gemms, fg.part_rates("h100-sxm-80gb", None), "fwd_bwd")
        assert 0.55 < ratio < step - 0.1, (tokens, etp, ratio, step)


def test_h100_grouped_rows_are_torchao_s():
    """docs/known-gaps.md 342: torchao's H100 grouped GEMMs at Llama 4 Scout's expert shapes as its PRs print them, bf16
    torch._grouped_mm against fp8 rowwise torch._scaled_grouped_mm; PR 2490's group sizes from its offsets."""
    rs = fg.grouped_h100_rows()
    assert [r["source"][:20] for r in rs] == ["pytorch/ao PR 2490 (", "pytorch/ao PR 2756 (", "pytorch/ao PR 2756 ("]
    for r in rs:
        assert r["part"] in load_catalog().accelerators, r
        rows = fg.group_rows(r)
        assert len(rows) == int(r["groups"]) and sum(rows) == pytest.approx(float(r["total_m"])), r
    assert [round(fg.grouped_ratio(r)[0], 3) for r in rs] == [1.480, 1.540, 1.555]
    assert min(fg.group_rows(rs[0])) == 112 and max(fg.group_rows(rs[0])) == 1328


def test_model_tracks_the_h100_grouped_fp8_gain():
    """The estimate's FP8 / BF16 time at torchao's grouped shapes (112-1,328 rows a group, one launch each) is within
    -2 / +10% of the measured kernels': no sourced FP8 shortfall at expert shapes beyond the model's own (342)."""
    for r in fg.grouped_h100_rows():
        meas, model = fg.grouped_ratio(r)
        assert -0.02 < model / meas - 1.0 < 0.10, (r["total_m"], r["k"], meas, model)


def test_over_predicted_pairs_expert_gemms_sit_under_the_dense_kernels_gain():
    """The over-predicted MoE pairs' routed experts run 2,048-8,192 rows a GEMM, past the grouped table's largest group;
    there the model's kernel-only FP8 / BF16 ratio stays under the measured dense ratio on Hopper (TE's H200 per-layer
    prequant), so no shape term the sources support removes FP8 gain there (342)."""
    dense = min(c.measured for c in fg.per_layer(fg.rows()) if c.row["mode"] == "prequant"
                and c.row["part"].startswith("h"))
    for name, rows, h, f, etp in fg.MOE_EXPERTS:
        gemms = fg.expert_layer_gemms(rows, h, f, etp)
        ratio = fg.model_ms(gemms, fg.part_rates("h100-sxm-80gb", None), "prequant") / fg.model_ms(
            gemms, fg.part_rates("h100-sxm-80gb", "delayed"), "prequant")
        assert rows >= 2048 > max(max(fg.group_rows(r)) for r in fg.grouped_h100_rows()), name
        assert 1.6 < ratio < dense, (name, ratio, dense)
