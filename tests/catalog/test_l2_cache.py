"""The accelerators' L2 sizes (catalog accelerators.yaml l2_cache, records.L2Cache; docs/known-gaps.md 145)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from trainsizer.catalog import load_catalog
from trainsizer.catalog.records import L2Cache
from trainsizer.messages import msg


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


@pytest.mark.parametrize("acc, mib", [
    ("v100-sxm-32gb", 6), ("a100-sxm-80gb", 40), ("a10g", 6), ("rtx-3090", 6), ("h100-sxm-80gb", 50),
    ("h200-sxm-141gb", 50), ("l40s", 96), ("rtx-6000-ada", 96), ("rtx-4090", 72), ("b200", 126), ("mi300x", 32),
])
def test_sizes_from_the_whitepapers(cat, acc, mib):
    assert cat.accelerator(acc).l2_cache.size_mib == mib


def test_infinity_cache_is_another_level(cat):
    """MI300X: 4 MB of L2 per XCD x 8; the 256 MB Infinity Cache is memory-side, kept apart (CDNA 3 whitepaper)."""
    mi = cat.accelerator("mi300x").l2_cache
    assert (mi.size_mib, mi.memory_side_mib) == (32, 256)
    nvidia = [a.l2_cache for a in cat.accelerators.values() if a.l2_cache and a.vendor == "nvidia"]
    assert nvidia and all(c.memory_side_mib is None for c in nvidia)


def test_every_entry_sourced_and_dated(cat):
    entries = {a.id: a.l2_cache for a in cat.accelerators.values() if a.l2_cache}
    assert len(entries) >= 20
    for acc, c in entries.items():
        assert c.sources and all(s in cat.sources for s in c.sources), acc
        assert c.date, acc
        assert set(c.sources) <= cat.accelerator(acc).source_ids()


def test_disagreement_said_in_the_data(cat):
    b200 = cat.accelerator("b200").l2_cache
    assert len(b200.sources) == 2 and "disagree" in b200.note


def test_unsourced_entry_refused_with_a_clear_message():
    with pytest.raises(ValidationError) as err:
        L2Cache(size_mib=50, sources=(), date="2026-12-05")
    assert msg("rec_l2_cache_unsourced", allowed="sources: [a source id], date").split(":")[0] in str(err.value)
    with pytest.raises(ValidationError):
        L2Cache(size_mib=0, sources=("nv_h100_wp",), date="2026-12-05")


def test_overlay_replaces_the_entry_whole(tmp_path):
    """An overlay's l2_cache brings its own sources: the old entry's sources and note do not carry over."""
    path = tmp_path / "l2.yaml"
    path.write_text("""
sources:
  my_device_query: {title: our deviceQuery on the delivered part, date: '2026-12'}
accelerators:
  h100-sxm-80gb:
    l2_cache: {size_mib: 60, sources: [my_device_query], date: '2026-12-05'}
""", encoding="utf-8")
    l2 = load_catalog([path]).accelerator("h100-sxm-80gb").l2_cache
    assert (l2.size_mib, l2.sources, l2.note) == (60, ("my_device_query",), None)
    bad = tmp_path / "bad.yaml"
    bad.write_text("accelerators:\n  h100-sxm-80gb:\n    l2_cache: {size_mib: 60, sources: [], date: '2026-12-05'}\n",
                   encoding="utf-8")
    with pytest.raises(Exception, match="l2_cache"):
        load_catalog([bad])
