"""The build-out's terminal tables (render/build_view.py)."""

from __future__ import annotations

import pytest

from trainsizer.render.build_view import _nvls_cell, acceptance_rows


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_nvls_cell_only_for_an_nvlink_domain(lang: str) -> None:
    nvlink = _nvls_cell({"tech": "nvlink", "nvls": True}, lang)
    assert "NVLS" in nvlink and nvlink != "—"
    assert "NVLS" in _nvls_cell({"tech": "nvlink-bridge", "nvls": False}, lang)
    # a switchless xGMI mesh or a PCIe host has no NVLink SHARP to say yes or no to
    assert _nvls_cell({"tech": "xgmi", "nvls": False}, lang) == "—"
    assert _nvls_cell({"tech": "pcie", "nvls": False}, lang) == "—"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_scale_out_sentence_is_printed_whole_under_the_roll_out(lang: str) -> None:
    """The scale-out path is a sentence, not a source: it was cut at 80 characters into the Source column."""
    import json
    from pathlib import Path

    from rich.console import Console

    from trainsizer.plan.texts import localise
    from trainsizer.render.build_view import print_build

    fixtures = Path(__file__).parent / "report" / "fixtures"
    build = json.loads((fixtures / "plan_buildout_sft70b.json").read_text(encoding="utf-8"))["build"]
    if lang == "en":  # a rented cluster's sentence (the fixture's own is short)
        build["phases"]["scale_out"].update(recabling_msg=None, recabling=(
            "rented: ask the provider for the extra nodes on the same fabric (non-blocking placement, same rails)"))
    sentence = localise(build, lang, keep=False)["phases"]["scale_out"]["recabling"]
    con = Console(record=True, width=400)
    print_build(build, lang, console=con)
    assert " ".join(sentence.split()) in " ".join(con.export_text().split())


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_bom_totals_sit_under_total_as_money(lang: str) -> None:
    """The totals row reads low / typical / high in the Total column, in the plan's currency; it printed the
    low and typical under 'Unit price (typical)' and the high under 'Total (typical)'."""
    import json
    from pathlib import Path

    from trainsizer.plan.texts import localise
    from trainsizer.render.build_view import bom_table, rent_rows
    from trainsizer.render.numbers import money

    fixtures = Path(__file__).parent / "report" / "fixtures"
    bom = localise(json.loads((fixtures / "plan_buildout_sft70b.json").read_text(encoding="utf-8"))["build"]["bom"],
                   lang, keep=False)
    table = bom_table(bom, lang)
    cells = [list(c.cells) for c in table.columns]
    unit_price, total = cells[2][-1], cells[3][-1]
    tot, cur = bom["totals"], bom["currency"]
    assert unit_price == "" and total == " / ".join(money(tot[k], cur, lang) for k in ("low", "typical", "high"))
    priced = [i for i, ln in enumerate(bom["lines"]) if ln["total"]]
    assert priced and all(cells[3][i] == money(bom["lines"][i]["total"]["typical"], cur, lang) for i in priced)
    rows, bvr = rent_rows(bom, lang), bom.get("buy_vs_rent") or {}
    for (_, shown), key in zip(rows, ("rent_per_month", "rent_for_job"), strict=False):
        assert shown == ("—" if bvr.get(key) is None else money(bvr[key], cur, lang))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_acceptance_rows_are_labelled_in_the_readers_language(lang: str) -> None:
    """The CLI's acceptance table printed accept's JSON keys (gpu_memory_gib_min, busbw_intra_gb_s_min.all_reduce)
    in both languages; it writes the report's labels, values with their units, and a figure's own source."""
    import json
    from pathlib import Path

    from trainsizer.plan.texts import localise
    from trainsizer.render.build_view import acceptance_rows
    from trainsizer.render.report.i18n import t

    fixtures = Path(__file__).parent / "report" / "fixtures"
    acc = localise(json.loads((fixtures / "plan_buildout_sft70b.json").read_text(encoding="utf-8"))["build"]
                   ["acceptance"], lang, keep=False)
    rows = {name: (value, source) for name, value, source in acceptance_rows(acc, lang)}
    assert not any("_" in name for name in rows)  # no JSON key shows through
    assert rows[t("f.gpu_memory_gib_min", lang)][0].endswith(" GiB")
    busbw = t("f.busbw_intra_gb_s_min", lang) + t("paren", lang, text="all-reduce")
    assert rows[busbw][0].endswith(" GB/s")
    xids_value, xids_source = rows[t("f.critical_xids", lang)]
    assert xids_source.startswith("azure_nhc") and "azure_nhc" not in xids_value  # the list's source, beside it
    assert t("f.critical_xids_source", lang) not in rows


def test_chinese_fabric_names_and_file_lists_use_chinese_punctuation() -> None:
    """'计算网络 (InfiniBand)' had ASCII brackets and 'slurm.conf, gres.conf' an English comma in a zh table."""
    import json
    from pathlib import Path

    from rich.console import Console

    from trainsizer.render.build_view import print_build

    fixtures = Path(__file__).parent / "report" / "fixtures"
    build = json.loads((fixtures / "plan_buildout_sft70b.json").read_text(encoding="utf-8"))["build"]
    con = Console(record=True, width=400)
    print_build(build, "zh", console=con)
    text = con.export_text()
    assert "（InfiniBand）" in text and " (InfiniBand)" not in text
    files = list(build["software"]["files"])
    assert len(files) > 1 and "、".join(files) in text


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_facility_power_is_labelled_by_its_unit(lang: str) -> None:
    """NVL72: 120 kW is the rack's, so the row must not read 'Node power'; brackets are the reader's."""
    from trainsizer.render.build_view import facility_rows
    from trainsizer.render.i18n import t

    f = {"node_kw_max": 120.0, "node_kw_typical": {"value": 90.0}, "rack_kw_budget": {"value": 132},
         "racks": 4, "node_racks": 2, "network_racks": 1, "storage_racks": 1, "cooling": {"value": "liquid"},
         "it_kw_max": 253.2, "it_kw_typical": 193.2, "pdus": 8, "ups_modules": 3, "ups_redundancy": {"value": "N+1"},
         "floor_m2": {"value": 10}, "annual_kwh": 2.2e6, "annual_energy_cost": {"typical": 1.9e5}, "currency": "USD"}
    assert facility_rows({**f, "power_unit": "rack"}, lang)[1][0] == t("b_rack_system_kw", lang)
    assert facility_rows(f, lang)[1][0] == t("b_node_kw", lang)
    cells = " ".join(f"{k} {v}" for k, v in facility_rows(f, lang))
    assert ("(" not in cells) == (lang == "zh")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_storage_rows_show_protection_and_raw_capacity(lang: str) -> None:
    """The storage table printed usable TB only: a buyer sizing drives needs the scheme and the raw TB too."""
    from trainsizer.render.build_view import storage_rows
    from trainsizer.render.i18n import t

    def block(kind: str, scheme: str, usable: float, raw: float) -> dict:
        fig = {"value": 1.0}
        return {"tier": "x", "kind": kind, "capacity_tb": {"value": usable}, "protection": {"value": scheme},
                "capacity_raw_tb": {"value": raw}, "checkpoint_gb": 1.0, "checkpoint_interval_min": fig,
                "write_gb_s_sync": fig, "write_gb_s_async_drain": fig, "loader_read_gb_s": fig, "restore_s": fig}

    pfs = dict(storage_rows(block("parallel_fs", "8+2", 40.0, 50.0), lang))
    assert pfs[t("b_capacity_raw_tb", lang)] == 50.0 and pfs[t("b_capacity_tb", lang)] == 40.0
    assert "8+2" in pfs[t("b_protection", lang)] and "80" in pfs[t("b_protection", lang)]
    nfs = dict(storage_rows(block("local_nvme", "6+2", 3.0, 4.0), lang))
    assert "RAID 6" in nfs[t("b_protection", lang)] and "75" in nfs[t("b_protection", lang)]
    own = dict(storage_rows(block("local_nvme", "none", 1.0, 1.0), lang))
    assert own[t("b_protection", lang)] == t("b_protection_none", lang)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_facility_rows_are_the_sites_own(lang: str) -> None:
    """A rented plan shows no rack budget, racks, PDUs or floor space of its own and labels its energy as what
    owning would draw; a workstation shows its wall circuit, not a rack budget of 0; a cluster its racks."""
    from trainsizer.render.build_view import facility_rows
    from trainsizer.render.i18n import t

    base = {"node_kw_max": 10.2, "node_kw_typical": {"value": 7.65}, "racks": 0, "node_racks": 0,
            "network_racks": 0, "storage_racks": 0, "cooling": {"value": "the provider's"}, "it_kw_max": 22.2,
            "it_kw_typical": 17.1, "pdus": 0, "ups_modules": 0, "ups_redundancy": {"value": "x", "rule": "optional"},
            "floor_m2": {"value": 0}, "annual_kwh": 1.9e5, "annual_energy_cost": {"typical": 1.6e4}, "currency": "USD"}
    rented = [k for k, _ in facility_rows({**base, "site": "rented", "rack_kw_budget": None}, lang)]
    for gone in ("b_rack_budget", "b_racks", "b_pdu_ups", "b_floor", "b_circuit_budget", "b_energy_year"):
        assert t(gone, lang) not in rented
    assert t("b_energy_year_owned", lang) in rented and t("b_site", lang) in rented
    ws = dict(facility_rows({**base, "site": "workstation", "rack_kw_budget": None,
                             "circuit_kw_budget": {"value": 3.7}}, lang))
    assert ws[t("b_circuit_budget", lang)] == 3.7 and ws[t("b_ups", lang)] == "optional"
    assert t("b_rack_budget", lang) not in ws and t("b_racks", lang) not in ws
    cluster = dict(facility_rows({**base, "site": "cluster", "rack_kw_budget": {"value": 40.8}, "racks": 3}, lang))
    assert cluster[t("b_rack_budget", lang)] == 40.8 and t("b_pdu_ups", lang) in cluster


@pytest.mark.parametrize(("lang", "shown"), [("en", "$2.95 (per GPU-hour)"), ("zh", "US$2.95（每卡时）")])
def test_a_bom_unit_price_says_what_it_is_a_price_of(lang: str, shown: str) -> None:
    """A rented line's 681 at $2.95 left the reader to guess hours or nodes: the unit price names its unit as
    the report's Unit column does."""
    from trainsizer.render.build_view import bom_table

    bom = {"currency": "USD", "totals": {"low": 1.0, "typical": 2.0, "high": 3.0}, "lines": [
        {"item": "rented", "quantity": 681.2, "unit": "per_gpu_hour", "total": {"typical": 2010.0},
         "unit_price": {"low": 1.85, "typical": 2.95, "high": 6.88, "converted": None}, "note": ""},
        {"item": "cable", "quantity": 3.0, "unit": "per_unit", "total": {"typical": 30.0},
         "unit_price": {"low": 10.0, "typical": 10.0, "high": 10.0, "converted": None}, "note": ""}]}
    prices = list(bom_table(bom, lang).columns[2].cells)
    assert prices[0] == shown and prices[1] in ("$10.00", "US$10.00"), prices


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_scale_up_rate_names_the_host_staged_rate_where_peer_to_peer_is_off(lang: str) -> None:
    """'126 GB/s' alone for 8 RTX 5090 read as a fast link; the estimate times 20 GB/s a direction through host memory."""
    from trainsizer.render.build_view import _scaleup_rate

    geforce = {"gb_s_per_gpu_bidir": 126.0, "host_staged_gb_s_per_dir": 20.0}
    assert "126 GB/s" in _scaleup_rate(geforce, lang) and "20 GB/s" in _scaleup_rate(geforce, lang)
    assert _scaleup_rate({"gb_s_per_gpu_bidir": 900.0, "host_staged_gb_s_per_dir": None}, lang) == "900 GB/s"
    assert _scaleup_rate({"gb_s_per_gpu_bidir": 900.0}, lang) == "900 GB/s"   # a plan saved before the field


@pytest.mark.parametrize("lang, per_node", [("en", "per node"), ("zh", "每节点")])
def test_the_acceptance_checkpoint_size_says_it_is_each_nodes_share(lang, per_node):
    """A 70B SFT on 4 nodes listed 'Checkpoint size 246.9 GB' in its acceptance thresholds beside the storage block's
    'Checkpoint (GB) 988': the threshold is the share each node writes (acceptance._storage)."""
    from .report.conftest import load_buildout

    acc = load_buildout()["build"]["acceptance"]
    rows = {str(r[1]): str(r[0]) for r in acceptance_rows(acc, lang)}
    label = next(k for v, k in rows.items() if v.startswith(f"{acc['checkpoint_size_gb']:.1f}"))
    assert per_node in label
