"""The loss path's own caching-allocator segments (memory._loss_path_segments, item loss_path_segments; known-gaps 213):
memory_constants.yaml's per-loss_impl figures held to benchmarks/loss_segments.py's replay of the sequences read from
transformers, the estimate's item to the replay at the job's shape, and where the item is zero or capped."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.estimate.memory import CACHED_ONLY_ITEMS, GIB, LOSS_SEGMENT_KEYS, estimate_memory
from trainsizer.estimate.model_states import load_memory_constants
from trainsizer.scenario import resolve_job

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import caching_allocator as ca  # noqa: E402
import loss_segments as ls  # noqa: E402

CAT = load_catalog([])
VOCAB = 128256  # llama-3.1-8b


def _est(loss_impl: str = "upcast", micro_batch: int = 8, seq_len: int = 2048, memory_gib: float | None = None,
         **strategy):
    job = {"model": "llama-3.1-8b", "method": "lora", "data": {"tokens": 1e8}, "seq_len": seq_len,
           "global_batch": {"sequences": micro_batch}, "precision": "bf16",
           "hardware": {"accelerator": "h200-sxm-141gb", "count": 1},
           "lora": {"rank": 8, "targets": ["q_proj", "v_proj"]},
           "strategy": {"micro_batch": micro_batch, "recompute": "full", "framework": "hf", "loss_impl": loss_impl,
                        **strategy}}
    sc = resolve_job(job, CAT)
    system = sc.system if memory_gib is None else sc.system.__class__(**{**sc.system.__dict__,
                                                                         "memory_gib": memory_gib})
    return estimate_memory(sc.model, sc.training, system, sc.strategy, check=False)


@pytest.mark.parametrize("impl", sorted(LOSS_SEGMENT_KEYS))
def test_the_constants_are_the_replay(impl):
    lg = load_memory_constants()["logits"]
    key = LOSS_SEGMENT_KEYS[impl]
    idle = lg[f"{key}_segment_idle_bytes_per_element"]
    sliced = lg[f"{key}_segment_slice_bytes_per_element"]
    # 8 rows x 128,256 x 4 B over the 2 MiB rounding: the slice gradient is cut anew; 4 rows: it fits the shifted copy's
    assert ls.segment_bytes_per_element(impl, 8, 2048, VOCAB) == pytest.approx(idle + sliced, abs=0.01)
    assert ls.segment_bytes_per_element(impl, 4, 2048, VOCAB) == pytest.approx(idle, abs=0.01)
    # expandable segments: the freed ranges merge; at either shape, and the same over three steps as over one
    expandable = lg[f"{key}_segment_expandable_bytes_per_element"]
    for rows in (4, 8):
        assert ls.segment_bytes_per_element(impl, rows, 2048, VOCAB, expandable=True) == pytest.approx(expandable,
                                                                                                      abs=0.01)
        for exp in (False, True):
            one, three = ls.replay(impl, rows, 2048, VOCAB, exp), ls.replay(impl, rows, 2048, VOCAB, exp, steps=3)
            assert one == three


@settings(max_examples=12, deadline=None)
@given(impl=st.sampled_from(sorted(LOSS_SEGMENT_KEYS)), mb=st.integers(1, 8), seq=st.sampled_from([1024, 2048]))
def test_the_item_is_the_replay_at_the_jobs_shape(impl, mb, seq):
    item = _est(impl, mb, seq).items_bytes.get("loss_path_segments", 0.0)
    replayed = ls.segment_bytes_per_element(impl, mb, seq, VOCAB) * mb * seq * VOCAB
    assert item == pytest.approx(replayed, rel=0.01, abs=8 * 2**20)  # four segments, each rounded up to 2 MiB


def test_newer_transformers_cut_fewer_segments_than_older():
    old, new = (_est(i).items_bytes["loss_path_segments"] for i in ("upcast", "upcast-labels"))
    assert old == pytest.approx(3 * new)  # 6 B a logit element against 2
    # same tensors live at once: the allocated items agree
    assert _est("upcast").items_bytes["logits"] == _est("upcast-labels").items_bytes["logits"]


def test_expandable_segments_keep_the_16_bit_logits_range_alone_and_other_losses_none():
    plain, exp = _est(), _est(allocator_expandable_segments=True)
    assert exp.items_bytes["loss_path_segments"] == pytest.approx(plain.items_bytes["loss_path_segments"] / 3)
    assert _est("upcast-shift", allocator_expandable_segments=True).items_bytes.get("loss_path_segments", 0.0) == 0.0
    assert _est("fused").items_bytes.get("loss_path_segments", 0.0) == 0.0
    assert _est(live_at_rerun="loss").items_bytes.get("loss_path_segments", 0.0) == 0.0


def test_cached_only_and_never_past_the_card():
    assert "loss_path_segments" in CACHED_ONLY_ITEMS
    full = _est()
    seg = full.items_bytes["loss_path_segments"]
    rest = full.per_gpu_bytes - seg
    tight = _est(memory_gib=(rest + seg / 2) / GIB)  # a card with room for half of them
    assert tight.items_bytes["loss_path_segments"] == pytest.approx(seg / 2, rel=1e-6)
    assert tight.fits and tight.per_gpu_bytes == pytest.approx(rest + seg / 2, rel=1e-6)


def test_the_expandable_pool_merges_freed_neighbours_and_grows_its_free_end():
    mib = ca.MIB
    pool = ca.ExpandablePool()
    a, b = pool.malloc(4 * mib), pool.malloc(4 * mib)
    pool.release(a)
    pool.release(b)
    pool.malloc(8 * mib)  # the two freed neighbours, merged, hold it: nothing more mapped
    assert pool.peak_reserved == 8 * mib
    pool = ca.ExpandablePool()
    pool.malloc(4 * mib)
    pool.release(pool.malloc(2 * mib))
    pool.malloc(6 * mib)  # the free 2 MiB at the end grows by 4
    assert pool.peak_reserved == 10 * mib
    plain = ca.Pool()  # the segments' rules: no merging across segments, a new one cut
    x, y = plain.malloc(12 * mib), plain.malloc(12 * mib)
    plain.release(x)
    plain.release(y)
    plain.malloc(24 * mib)
    assert plain.peak_reserved == 48 * mib
