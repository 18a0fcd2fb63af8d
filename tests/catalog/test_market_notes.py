"""The accelerators' market notes read in the reader's language (trainsizer/data/market_notes.yaml)."""

from __future__ import annotations

import re

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.catalog.market_notes import market_note
from trainsizer.messages import tr

HAN = re.compile(r"[\u4e00-\u9fff]")


def test_every_shipped_market_note_has_its_chinese():
    """A note added to accelerators.yaml (or reworded there) without its entry would read in English on a
    Chinese page: the entry's `en` must equal the catalog's text."""
    notes = {a.id: a.market_note for a in load_catalog().accelerators.values() if a.market_note}
    assert len(notes) >= 10
    missing = {k: v for k, v in notes.items() if tr(market_note(v), "zh") == v}
    assert not missing, f"add these to trainsizer/data/market_notes.yaml: {missing}"
    for note in notes.values():
        zh = tr(market_note(note), "zh")
        assert HAN.search(zh) and "(" not in zh, zh
        assert tr(market_note(note), "en") == note


def test_an_overlay_note_without_an_entry_is_shown_as_written():
    assert market_note("our own note") == "our own note"


@pytest.mark.parametrize(("lang", "words"), [("en", "China SKU made for the Oct-2023 rule"),
                                             ("zh", "为 2023 年 10 月规则推出的中国特供型号")])
def test_a_china_market_job_notes_the_accelerator_in_the_readers_language(lang, words):
    from trainsizer.scenario import resolve_job

    job = {"model": "llama-3.1-8b", "method": "lora", "data": {"tokens": 1e8}, "seq_len": 2048,
           "global_batch": {"sequences": 16}, "constraints": {"market": "china"},
           "hardware": {"accelerator": "l20", "count": 1}}
    notes = [tr(n, lang) for n in resolve_job(job, load_catalog()).notes]
    assert any(words in n for n in notes), notes


def test_the_catalog_card_shows_the_note_in_chinese():
    from trainsizer.render.catalog_card import card_rows

    record = load_catalog().accelerator("l20").model_dump()
    rows = dict(card_rows(record, "zh"))
    assert rows["市场说明"] == "为 2023 年 10 月规则推出的中国特供型号。", rows
