from __future__ import annotations

import numpy as np
import pytest

from trainsizer.errors import SpecError
from trainsizer.estimate import framework as fw
from trainsizer.estimate.inputs import FRAMEWORKS, Strategy, Training
from trainsizer.estimate.memory import MemoryOptions, estimate_memory, memory_per_gpu_bytes
from trainsizer.estimate.step_time import PERF_STYLES, estimate_time, step_time_arrays

from .test_perf_common import h100_cluster, llama8b


def test_every_framework_maps_to_a_memory_profile_and_a_perf_style() -> None:
    for name in FRAMEWORKS:
        styles = fw.perf_styles(name)
        for style in styles if isinstance(styles, tuple) else (styles,):
            assert style in PERF_STYLES
        assert fw.memory_profile(name) in (None, "hf", "megatron")
    assert fw.memory_profile("auto") is None and fw.memory_profile("deepspeed") == "hf"
    with pytest.raises(SpecError, match="did you mean|Did you mean"):
        fw.check_framework("megatorn")


def _pick(name, st, pretraining=False):
    r = fw.resolve(name, st, pretraining)
    return r["assumed"], r["memory_profile"], r["perf_style"]


def test_auto_rule() -> None:
    """auto picks today's stack: Megatron-Core for TP/PP/CP/EP or the distributed optimizer, torchtitan for
    FSDP with model parallelism (or FSDP pre-training), HF for data-parallel fine-tuning; and says why."""
    assert _pick("auto", Strategy(dp=8)) == ("hf", "hf", "hf")
    assert fw.resolve("auto", Strategy(dp=8))["reason"] == "auto_reason_data_parallel"
    for st in (Strategy(tp=2, dp=4), Strategy(pp=2, dp=4), Strategy(cp=2, dp=4), Strategy(dp=8, ep=2),
               Strategy(dp=8, distributed_optimizer=True)):
        assert _pick("auto", st) == ("megatron-core", "megatron", "megatron-core")
    for st in (Strategy(tp=2, dp=4, zero=3), Strategy(tp=8, pp=2, dp=4, zero=3)):
        assert _pick("auto", st) == ("torchtitan", "hf", "torchtitan")
    assert _pick("auto", Strategy(dp=8, zero=3)) == ("hf", "hf", "hf")
    assert _pick("auto", Strategy(dp=8, zero=3), pretraining=True) == ("torchtitan", "hf", "torchtitan")
    named = fw.resolve("deepspeed", Strategy(tp=2, dp=4))
    assert named["assumed"] == "deepspeed" and named["reason"] is None
    mask = fw.megatron_style(np.array([1, 2, 1, 2]), np.array([1, 1, 1, 1]), 1, 1,
                             np.array([False, False, True, False]), np.array([0, 0, 0, 3]))
    assert mask.tolist() == [False, True, True, False]


def test_strategy_framework_drives_both_estimators_and_keywords_override() -> None:
    m, tr, s = llama8b(), Training(seq_len=4096, global_batch_seqs=256), h100_cluster(8)
    st = Strategy(dp=8, zero=1)
    auto_mem = estimate_memory(m, tr, s, st)
    assert auto_mem.memory_profile == "hf"
    assert estimate_memory(m, tr, s, st.with_(framework="megatron")).memory_profile == "megatron"
    over = estimate_memory(m, tr, s, st.with_(framework="megatron"), MemoryOptions(framework="hf"))
    assert over.per_gpu_bytes == auto_mem.per_gpu_bytes
    hf = estimate_time(m, tr, s, st.with_(framework="hf"))
    assert estimate_time(m, tr, s, st).step_s == hf.step_s  # auto -> hf for a DP-only strategy
    mega = estimate_time(m, tr, s, st.with_(framework="megatron"))
    assert mega.step_s != hf.step_s  # the two styles differ (gradient bucket size)
    assert estimate_time(m, tr, s, st.with_(framework="hf"), framework_style="megatron").step_s == mega.step_s


def test_auto_in_a_batch_is_elementwise() -> None:
    """A strategy's answer under auto does not depend on its neighbours in the batch."""
    m, tr, s = llama8b(), Training(seq_len=4096, global_batch_seqs=256), h100_cluster(64)
    st = Strategy(tp=np.array([1, 8, 1, 2]), pp=np.array([1, 1, 1, 2]), dp=np.array([64, 8, 64, 16]),
                  zero=np.array([1, 0, 3, 1]), distributed_optimizer=np.array([0, 0, 0, 1]))
    auto = step_time_arrays(m, tr, s, st)["step_s"]
    mem_auto, _ = memory_per_gpu_bytes(m, tr, s, st)
    mega = np.array([False, True, False, True])
    titan = np.array([False, False, True, False])  # FSDP pre-training (Training's default method)
    for style, sel in (("megatron-core", mega), ("hf", ~mega & ~titan), ("torchtitan", titan)):
        one = step_time_arrays(m, tr, s, st.with_(framework=style))["step_s"]
        np.testing.assert_array_equal(auto[sel], one[sel])
        mem, _ = memory_per_gpu_bytes(m, tr, s, st.with_(framework=style))
        np.testing.assert_array_equal(mem_auto[sel], mem[sel])


def test_style_number_reads_the_value_the_step_time_style_holds() -> None:
    # the memory estimate reads DeepSpeed's reuse distance and reduce bucket through style_number; the step time
    # through PerfStyle: one copy in perf_constants.yaml, read to the same float by both
    ds = PERF_STYLES["deepspeed"]
    for key in ("zero3_max_reuse_distance_params", "grad_bucket_params"):
        assert fw.style_number("deepspeed", key) == getattr(ds, key) > 0.0
    with pytest.raises(KeyError):
        fw.style_number("fsdp", "zero3_max_reuse_distance_params")  # FSDP keeps every gathered unit: not set


def test_a_family_list_names_whole_families_the_same_way_everywhere():
    """A style's comma-separated family list (dense_expert_families, zero3_leaf_families, ...) matches a family by its
    whole name, read once (framework.family_listed) for the scalar readers and elementwise for the batch's styles
    (step_time._name_listed; docs/known-gaps.md 303 (f))."""
    from trainsizer.estimate.step_time import _name_listed

    assert fw.family_listed("mixtral", "llama4,mixtral")
    assert not fw.family_listed("llama", "llama4,mixtral")  # a prefix is not the family
    assert not fw.family_listed("mixtral", "")
    listed = np.array(["llama4,mixtral", "", "granitemoe", "mixtral"])
    assert _name_listed("mixtral", listed).tolist() == [fw.family_listed("mixtral", s) for s in listed]
    assert _name_listed("mixtral", listed).tolist() == [True, False, False, True]
