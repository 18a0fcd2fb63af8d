"""benchmarks/moe_host_free.py: the Megatron MoE Blackwell rows with no host term, by die, model and EP
(docs/known-gaps.md 328 (a))."""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import accuracy_bands as ab  # noqa: E402
import moe_host_free as hf  # noqa: E402
from trainsizer.catalog import load_catalog  # noqa: E402


def _row(row_id: str, die: str = "sm100", model: str = "gpt-oss-120b", ep: int = 64, cp: int = 1,
         tokens: float = 16384.0, err: float = 0.2, miss: float = 2.0, attention: float = 2.0) -> hf.HostFree:
    return hf.HostFree(row_id, die, model, ep, cp, tokens, 4096, err, miss, attention)


def test_the_dies_are_the_blackwell_parts_silicon():
    assert [hf.die_of(p) for p in ("b200", "gb200", "b300", "gb300")] == ["sm100", "sm100", "sm103", "sm103"]
    assert hf.die_of("h100-sxm-80gb") == "h100-sxm-80gb"


def test_host_free_is_no_host_excess_beyond_floating_point_residue():
    assert hf.host_free({"host_s": 1.3e-15, "step_s": 6.58})
    assert hf.host_free({"host_s": 0.0, "step_s": 1.0})
    assert not hf.host_free({"host_s": 1e-4, "step_s": 6.58})


def test_the_attention_factor_carries_the_miss_on_the_attention_alone():
    assert hf.attention_factor(2.0, 2.0) == 2.0
    assert hf.attention_factor(2.0, -0.5) == 0.75
    assert math.isnan(hf.attention_factor(0.0, 1.0))


def test_the_miss_is_scaled_to_the_reference_tokens():
    assert _row("a", tokens=4096.0, miss=1.0).miss_ref_ms == 4.0
    assert _row("b", tokens=32768.0, miss=1.0).miss_ref_ms == 0.5


def test_gpt_oss_sizes_are_one_family_other_models_keep_their_name():
    assert hf.family("gpt-oss-120b") == hf.family("GptOssForCausalLM h2880 L24") == "gpt-oss"
    assert hf.family("qwen3-30b-a3b") == "qwen3-30b-a3b"


def test_the_summary_groups_by_family_die_ep_and_cp():
    rows = [_row("a", miss=2.0, err=0.15), _row("b", miss=3.0, err=0.25), _row("c", die="sm103", ep=16, miss=1.0),
            _row("d", ep=4, cp=2, tokens=4096.0, miss=1.0, attention=0.5),
            _row("e", model="qwen3-30b-a3b", ep=8, miss=-0.2, err=-0.02)]
    out = {key: rest for key, *rest in hf.summarise(rows)}
    assert set(out) == {"gpt-oss / sm100 / EP 64", "gpt-oss / sm103 / EP 16", "gpt-oss / sm100 / EP 4 CP 2",
                        "qwen3-30b-a3b / sm100 / EP 8"}
    n, med, miss, ref, factor = out["gpt-oss / sm100 / EP 64"]
    assert (n, round(med, 6), miss, ref, factor) == (2, 20.0, 2.5, 2.5, 2.25)
    assert out["gpt-oss / sm100 / EP 4 CP 2"][2:] == [1.0, 4.0, 3.0]


def test_a_real_jobs_attention_is_part_of_its_step():
    job = {"model": "gpt-oss-120b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 4096,
           "global_batch": {"sequences": 1280}, "precision": "bf16",
           "hardware": {"accelerator": "gb300", "count": 64, "network": "ib-xdr800"},
           "strategy": {"tp": 1, "pp": 1, "cp": 1, "ep": 64, "micro_batch": 4, "framework": "megatron-core",
                        "recompute": "none", "distributed_optimizer": True, "moe_dispatcher": "alltoall",
                        "cuda_graphs": "none"}}
    catalog = load_catalog()
    parts = ab.step_parts(ab.Row("perf_x", "mbridge_x_gb300_gpt_oss_120b", "tokens_per_s_per_gpu", 1.0, 1.2, job),
                          catalog)
    per_layer_ms = 1e3 * parts["step_s"] / (parts["micro_batches"] * parts["layers"])
    attention = hf.attention_ms_per_layer(job, catalog, parts)
    assert 0.05 * per_layer_ms < attention < 0.5 * per_layer_ms
