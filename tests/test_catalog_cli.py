"""`trainsizer catalog`: KIND in singular or plural, prices shown by id or by accelerator, readable cards."""

from __future__ import annotations

import json

import pytest

from conftest import EXAMPLES
from trainsizer.catalog import load_catalog


@pytest.mark.parametrize("kind", ["accelerator", "accelerators", "Accelerators", "gpu"])
def test_list_and_show_take_either_form(run_cli, kind):
    code, out, _ = run_cli("catalog", "list", kind, "--json")
    assert code == 0 and any(r["id"] == "h100-sxm-80gb" for r in json.loads(out))
    code, out, _ = run_cli("catalog", "show", kind, "h100-sxm-80gb", "--json")
    assert code == 0 and json.loads(out)["id"] == "h100-sxm-80gb"


def test_card_names_each_source_with_title_url_and_date(run_cli):
    code, out, _ = run_cli("catalog", "show", "accelerator", "h100-sxm-80gb")
    assert code == 0
    src = load_catalog().sources[load_catalog().accelerator("h100-sxm-80gb").sources[0]]
    flat = " ".join(out.split())
    assert src.title.split()[0] in flat and (src.date or "") in flat
    assert "['" not in out and "{'" not in out  # no Python reprs


def test_prices_of_one_accelerator(run_cli):
    code, out, _ = run_cli("catalog", "show", "prices", "h100-sxm-80gb", "--json")
    records = json.loads(out)
    assert code == 0 and records and all(r["subject"] == "h100-sxm-80gb" and "age" in r for r in records)
    price_id = records[0]["id"]
    code, out, _ = run_cli("catalog", "show", "price", price_id, "--json")
    assert code == 0 and json.loads(out)["id"] == price_id


def test_ambiguous_name_lists_entries_not_aliases(run_cli):
    cat = load_catalog()
    code, _, err = run_cli("catalog", "show", "accelerator", "h100")
    assert code == 2 and "ambiguous accelerator" in err
    aliases = [a for acc in cat.accelerators.values() for a in acc.aliases if a.startswith("h100")]
    assert aliases and not any(a in err for a in aliases)


def test_every_card_field_has_a_label_in_both_languages():
    """`catalog show` labels each field from render/data/i18n.yaml (`card_<field>`), never the raw key."""
    from trainsizer.render.catalog_card import PROVENANCE
    from trainsizer.render.i18n import LANGS, _table

    cat = load_catalog()
    records = [r.to_dict() for table in (cat.accelerators, cat.servers, cat.networks, cat.switches,
                                         cat.storage_tiers) for r in table.values()]
    records += [cat.price_record(pid).to_dict() for pid in cat.prices]
    fields = {k for r in records for k in r if k not in PROVENANCE}
    missing = sorted(f"card_{k} ({lang})" for k in fields for lang in LANGS
                     if not (_table().get(f"card_{k}") or {}).get(lang))
    assert not missing, f"add to src/trainsizer/render/data/i18n.yaml: {', '.join(missing)}"


def test_card_in_chinese_has_chinese_labels_and_years_as_written(run_cli):
    code, out, _ = run_cli("--lang", "zh", "catalog", "show", "accelerator", "h100-sxm-80gb")
    assert code == 0
    assert "显存带宽" in out and "memory_bw_tb_s" not in out
    assert "2022" in out and "2,022" not in out


@pytest.mark.parametrize(("lang", "said"), [("en", ("older than a year", "the mean of low and high", "15,312")),
                                            ("zh", ("超过一年", "取低值与高值的平均", "15,312"))])
def test_a_price_card_shows_its_age_and_the_figure_used(run_cli, lang, said):
    """`catalog show prices gaudi3`: a 2024 price carries the one-year warning `estimate` gives it, and a
    range without a central figure shows the mean the estimates use."""
    code, out, err = run_cli("--lang", lang, "catalog", "show", "prices", "gaudi3")
    assert code == 0, err
    flat = "".join(out.replace("│", " ").split())  # the table wraps long cells
    assert all("".join(s.split()) in flat for s in said), out


def test_a_cards_english_notes_are_labelled_as_quoted_in_chinese(run_cli):
    """The catalog's notes are its recorded English prose: a Chinese card says so in the label."""
    code, out, err = run_cli("--lang", "zh", "catalog", "show", "server", "gb200-nvl72")
    assert code == 0, err
    assert "备注（目录原文）：18 compute trays" in out.replace("\n", " "), out


def test_a_chinese_card_says_the_catalogs_enumerations_in_chinese():
    """The words the catalog records as codes (memory unit and how GiB was derived, scale-up tech, network and
    storage kind, price unit and term, management role, a range's low / high) read in Chinese on a zh card;
    the English of each is only where the catalog records prose, and those rows say it is quoted."""
    import re

    from trainsizer.render.catalog_card import card_rows

    cat = load_catalog()
    records = [r.to_dict() for table in (cat.accelerators, cat.servers, cat.networks, cat.switches,
                                         cat.storage_tiers) for r in table.values()]
    records += [cat.price_record(pid).to_dict() for pid in cat.prices]
    codes = {"memory_label_unit", "memory_gib_basis", "scaleup_tech", "kind", "unit", "term", "role", "confidence"}
    names = ("InfiniBand", "NFS", "AWS EFA", "NVLink", "HCCS", "Infinity Fabric（xGMI）")  # proper names
    left = set()
    for r in records:
        for key in codes & set(r):
            value = next(iter(dict(card_rows({key: r[key]}, "zh")).values()), "")
            if value and not re.search(r"[\u4e00-\u9fff]", value) and value not in names:
                left.add((key, value))
    assert not left, sorted(left)
    shown = dict(card_rows(cat.storage_tiers[next(iter(cat.storage_tiers))].to_dict(), "zh"))
    assert not any(re.search(r"\blow \d|\bhigh \d", v) for v in shown.values()), shown



@pytest.mark.parametrize(("lang", "said"), [("en", ("h100-sxm-80gb (80 GB, SXM / NVLink)", "h100-pcie-80gb (80 GB, PCIe",
                                                     "h100-nvl-94gb (94 GB, PCIe", "compares them all")),
                                            ("zh", ("h100-sxm-80gb（80 GB，SXM / NVLink）", "比较全部"))])
def test_an_ambiguous_accelerator_says_what_tells_the_choices_apart(run_cli, lang, said):
    """`--accelerator h100` is one of three parts: the error names each with its memory and form (SXM / NVLink or
    PCIe), and says a plan without an accelerator compares them; no default is picked (each differs in memory,
    interconnect and price)."""
    code, _, err = run_cli("--lang", lang, "estimate", str(next(p for p in EXAMPLES if p.name == "sft-70b-16gpu.yaml")), "--accelerator",
                           "h100")
    flat = " ".join(err.split())
    assert code == 2 and all(s in flat for s in said), err
