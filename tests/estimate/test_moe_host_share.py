"""The per-expert host charge's share a held-out row wants (benchmarks/moe_host_share.py, a diagnostic: nothing
fitted): the bisection, the error of a rate and of a duration row at another prediction, and (slow) what
docs/known-gaps.md 131 reads from it on perf_hybrid: the H100 Nemotron 3 Nano rows, the only ones that recompute the
whole MoE block, want far less of the charge than the same model's B200 row."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import moe_host_share as mhs  # noqa: E402
from accuracy_bands import Row  # noqa: E402


def test_bisection_finds_the_share_where_the_error_crosses_zero():
    assert mhs.share_that_fits(lambda s: 0.3 - 0.2 * s) == pytest.approx(1.5, abs=2e-3)
    assert mhs.share_that_fits(lambda s: 0.05 * (1.0 - s) ** 3) == pytest.approx(1.0, abs=0.05)


def test_no_share_where_the_charge_alone_cannot_meet_the_row():
    assert math.isnan(mhs.share_that_fits(lambda s: -0.1 - s))  # too slow with no charge at all
    assert math.isnan(mhs.share_that_fits(lambda s: 0.5 - 0.01 * s))  # still too fast at the largest share


def test_a_faster_prediction_raises_a_rate_rows_error_and_a_duration_rows_alike():
    rate = Row("b", "r", "tokens_per_s_per_gpu", measured=100.0, predicted=100.0, job={})
    step = Row("b", "s", "step_time_s", measured=10.0, predicted=10.0, job={})
    assert mhs._err_with(rate, 1.2) == pytest.approx(0.2)
    assert mhs._err_with(step, 1.2) == pytest.approx(0.2)  # + = predicted too fast for both


def test_scaled_constants_scale_every_dispatcher_and_nothing_else():
    from trainsizer.estimate.calibration import load_constants

    k = load_constants()
    half = mhs.scaled(k, 0.5)
    assert half.moe_host_s_per_expert_kernel == {n: 0.5 * v for n, v in k.moe_host_s_per_expert_kernel.items()}
    assert half.host_s_per_layer_pass == k.host_s_per_layer_pass


def test_local_experts_buckets():
    assert [mhs.local_experts_bucket(e, ep) for e, ep in ((8, 1), (128, 8), (256, 8), (512, 8), (512, 64), (1, 4))] == [
        "<=8", "16", "32", ">=64", "<=8", "-"]


@pytest.mark.slow
def test_h100_nano_rows_want_far_less_of_the_charge_than_the_b200_row():
    import perf_hybrid as ph

    by_id = {r["id"]: r for r in ph.rows()}
    rows = [Row("perf_hybrid", rid, "tokens_per_sec_per_gpu", m, p, ph.job(by_id[rid]))
            for rid, system, m, p in ph.cases() if "nemotron3_nano" in rid and system in ("H100", "B200")]
    got = {row.row_id: share for row, share, _ in mhs.shares(rows)}
    h100 = [s for rid, s in got.items() if by_id[rid]["system"] == "H100"]
    b200 = [s for rid, s in got.items() if by_id[rid]["system"] == "B200"]
    assert len(h100) == 4 and len(b200) == 1
    assert max(h100) < 0.5 * b200[0]
    assert mhs.facts(rows[0])["moe_rerun"] in ("yes", "no")


def test_the_figure_a_row_is_charged_is_its_resolved_dispatchers():
    from trainsizer.estimate.calibration import load_constants

    k = load_constants().moe_host_s_per_expert_kernel

    def job(dispatcher: str, accelerator: str = "h100-sxm-80gb") -> Row:
        return Row("b", "r", "tokens_per_s_per_gpu", 1.0, 1.0, {
            "model": "qwen3-30b-a3b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 4096,
            "global_batch": {"sequences": 64}, "precision": "bf16",
            "hardware": {"accelerator": accelerator, "count": 16, "network": "ib-ndr400"},
            "strategy": {"tp": 1, "pp": 1, "ep": 8, "micro_batch": 1, "framework": "megatron-core",
                         "moe_dispatcher": dispatcher, "moe_a2a_overlap": True}})

    assert mhs.figure_s(job("alltoall")) == k["alltoall"]
    assert mhs.figure_s(job("flex")) == k["flex"]
    # auto: EP 8 inside one 8-GPU H100 node runs the alltoall dispatcher (step_time.moe_alltoall)
    assert mhs.figure_s(job("auto")) == k["alltoall"]
    assert mhs.facts(job("flex"))["a2a_overlap"] == "True flex"
