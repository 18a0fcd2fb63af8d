"""finetune_heldout_stated.csv: settings a finetune_heldout row's source fixes that finetune_heldout.csv has no column
for (benchmarks/finetune_heldout.py rows()). The LLaMA-Factory wiki's QLoRA rows (2024-04-15) ran bitsandbytes before
0.48.0, whose NF4 kernel decodes through a branching tree (known-gaps 190 (a), 210)."""

from __future__ import annotations

import csv

import pytest

import finetune_heldout as fh


def test_stated_settings_reach_the_rows_and_their_jobs():
    rows = {r["id"]: r for r in fh.rows()}
    lf = [rid for rid in rows if rid.startswith("lf_qlora")]
    assert len(lf) == 6
    for rid in lf:
        assert rows[rid]["nf4_decode"] == "tree"
        assert fh.job(rows[rid])["strategy"]["nf4_decode"] == "tree"
        assert rows[rid]["source"].startswith("LLaMA-Factory")  # the row's own source, not STATED's
    # a row STATED does not name keeps the job it had
    assert "nf4_decode" not in fh.job(rows["tt24.09_8b_qlora_4090"])["strategy"]


def test_every_stated_row_names_a_source_and_a_setting_the_main_file_lacks():
    stated = list(csv.DictReader(fh.STATED.open(encoding="utf-8")))
    main_columns = set(next(csv.reader(fh.DATA.open(encoding="utf-8"))))
    assert stated and all(r["source"].strip() for r in stated)
    assert not (set(stated[0]) - {"id", "source"}) & main_columns


def test_the_tree_decode_slows_the_lf_qlora_rows_most_where_the_weights_weigh_most():
    """The tree's excess is a cost a dequantisation (per weight, per micro-batch), so it weighs most at the shortest
    cutoff, where a micro-batch holds the fewest tokens: the 1K row's rate falls more than the 32K row's."""
    cat = fh.load_catalog()
    rows = {r["id"]: r for r in fh.rows()}

    def rate(rid: str, decode: str) -> float:
        return next(c.predicted for c in fh.row_cases(dict(rows[rid], nf4_decode=decode), cat) if c.metric == "tokens_s")

    drop = {rid: 1.0 - rate(rid, "tree") / rate(rid, "") for rid in ("lf_qlora_7b_1k", "lf_qlora_7b_32k")}
    assert drop["lf_qlora_7b_1k"] > drop["lf_qlora_7b_32k"] > 0.0


def test_a_stated_id_that_is_not_a_row_is_refused(tmp_path, monkeypatch):
    bad = tmp_path / "stated.csv"
    bad.write_text("id,nf4_decode,source\nno_such_row,tree,test\n", encoding="utf-8")
    monkeypatch.setattr(fh, "STATED", bad)
    with pytest.raises(ValueError, match="no_such_row"):
        fh.rows()


def test_a_stated_column_the_main_file_has_is_refused(tmp_path, monkeypatch):
    bad = tmp_path / "stated.csv"
    bad.write_text("id,micro_batch,source\nlf_qlora_7b_1k,2,test\n", encoding="utf-8")
    monkeypatch.setattr(fh, "STATED", bad)
    with pytest.raises(ValueError, match="micro_batch"):
        fh.rows()
