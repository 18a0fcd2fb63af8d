"""strategy.nf4_decode: bitsandbytes' kDequantizeBlockwise decodes each NF4 code through dDequantizeNF4's branching tree
in every release from 0.39.0 to 0.47.x (tree) and through a lookup table from 0.48.0 (#1746, 2025-09-30; lut, the
default and the estimate before). The tree kernel is issue-bound at perf_constants.yaml nf4_tree_decode's values per
SM-cycle (counted from its SASS), which lies under the HBM stream on the A100 / Hopper parts and above it on the
GDDR parts. known-gaps 190."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.errors import TrainsizerError
from trainsizer.estimate.calibration import load_constants, rates
from trainsizer.estimate.step_time import estimate_time
from trainsizer.scenario import resolve_job

CAT = load_catalog()
K = load_constants()
DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data"
# the files whose rows state nf4_decode (QLoRA on bitsandbytes before 0.48.0)
STATED = ("heldout_2026l_finetune_litgpt.csv", "heldout_2026l_finetune_litgpt_a10g.csv",
          "heldout_2026l_finetune_litgpt_a100.csv", "heldout_2026k_swift_a100.csv", "heldout_2026o_fsdp_qlora.csv")


def _job(acc: str = "a100-sxm-40gb", method: str = "qlora", micro_batch: int = 1, seq: int = 512,
         **strategy) -> dict:
    lora = {"lora": {"rank": 8}} if "lora" in method else {}
    return {"model": "llama-2-7b", "method": method, **lora, "seq_len": seq, "precision": "bf16",
            "data": {"tokens": 1e8}, "global_batch": {"sequences": 8 * micro_batch},
            "hardware": {"accelerator": acc, "count": 1},
            "strategy": {"micro_batch": micro_batch, "recompute": "none", "framework": "hf", **strategy}}


def _step(job: dict) -> float:
    sc = resolve_job(job, CAT)
    return float(estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False).step_s)


def test_the_rate_is_the_kernels_alu_count():
    """515 ALU-pipe instructions a warp's 512 values, two clocks each on a partition's 16 lanes, four partitions."""
    assert K.raw["nf4_tree_decode"]["values_per_sm_cycle"] == pytest.approx(512 / (2 * 515 / 4), rel=0.005)
    assert K.nf4_tree_decode_values_s("a100-sxm-40gb") == pytest.approx(1.99 * 108 * 1.41e9)
    assert K.nf4_tree_decode_values_s("h100-sxm-80gb") == pytest.approx(1.99 * 132 * 1.98e9)
    for part in ("a10g", "rtx-4090", "rtx-3090", "b200", "mi300x"):
        assert K.nf4_tree_decode_values_s(part) is None, part


@pytest.mark.parametrize("acc", ["a100-sxm-40gb", "h100-sxm-80gb"])
def test_tree_over_stream_is_within_the_measured_slowdown(acc):
    """PR #1747 measured the tree kernel 1.36-2.07x slower than the table lookup on an A100 40GB and an H100: the
    counted rate against the estimate's stream of 0.5 + 2 B a value lands in that range (not fitted to it)."""
    system = resolve_job(_job(acc), CAT).system
    stream_s = 2.5 / rates(system, "bf16", K, None).hbm_bytes_s
    assert 1.36 <= (1.0 / K.nf4_tree_decode_values_s(acc)) / stream_s <= 2.1


def test_unset_is_the_lookup():
    assert _step(_job()) == _step(_job(nf4_decode="lut"))


@pytest.mark.parametrize("acc", ["a10g", "rtx-4090"])
def test_stream_bound_parts_do_not_move(acc):
    assert _step(_job(acc, nf4_decode="tree")) == _step(_job(acc))


def test_the_tree_slows_an_a100_qlora_step():
    assert _step(_job(nf4_decode="tree")) > 1.05 * _step(_job())


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(["a100-sxm-40gb", "a100-sxm-80gb", "h100-sxm-80gb", "a10g"]), st.integers(1, 8),
       st.sampled_from([256, 1024, 4096]))
def test_the_tree_never_speeds_a_step(acc, micro_batch, seq):
    lut = _step(_job(acc, micro_batch=micro_batch, seq=seq))
    assert _step(_job(acc, micro_batch=micro_batch, seq=seq, nf4_decode="tree")) >= lut


def test_refused_off_qlora_and_for_unknown_names():
    with pytest.raises(TrainsizerError, match="nf4_decode"):
        _step(_job(method="lora", nf4_decode="tree"))
    with pytest.raises(TrainsizerError, match="nf4_decode"):
        resolve_job(_job(nf4_decode="branchy"), CAT)


def test_rows_state_the_tree_where_their_bitsandbytes_had_it():
    """Every QLoRA row of these files ran bitsandbytes' NF4 (transformers / PEFT, or Lightning's BitsandbytesPrecision
    under LitGPT) before 0.48.0's release: each states tree; no other row states anything."""
    sys.path.insert(0, str(DATA.parent))
    import finetune_heldout as fh

    for name in STATED:
        for r in csv.DictReader((DATA / name).open(encoding="utf-8")):
            assert r["nf4_decode"] == ("tree" if r["method"] == "qlora" else ""), (name, r["id"])
            assert r["method"] != "qlora" or r["date"] < "2025-09-30", (name, r["id"])
            assert fh.job(r)["strategy"].get("nf4_decode") == (r["nf4_decode"] or None), (name, r["id"])
