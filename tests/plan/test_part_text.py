"""The catalog's NIC, CPU, part and switch descriptions read in Chinese in a --lang zh bill of materials
(plan/buildout/part_text.py): every shipped one has its entry, vendor part names kept, an overlay's own shown as
written."""

from __future__ import annotations

import re

from trainsizer.catalog import load_catalog
from trainsizer.messages import tr
from trainsizer.plan.buildout.part_text import described
from trainsizer.plan.texts import as_msg


def test_every_shipped_server_description_reads_in_chinese_with_its_part_names():
    seen = 0
    for server in load_catalog().servers.values():
        for kind, text in (("nic", server.nics.model), ("cpu", server.cpu_model)):
            if not text:
                continue
            shown = described(kind, text)
            assert str(shown) == text, (server.id, kind)  # English: the catalog's own text
            zh = tr(shown, "zh")
            assert zh != text or not re.search(r"\b(per|typical|each|choice|or|one|via)\b", text), (server.id, text)
            # vendor / part names (ConnectX-7, EPYC 9575F, QSFP112, 8480+) are kept as written
            for name in re.findall(r"\b[A-Z][A-Za-z]*-?\d[\w+/.-]*", text):
                assert name in zh, (server.id, name, zh)
            seen += 1
    assert seen > 40


def test_every_shipped_part_and_switch_name_reads_in_chinese_with_its_part_numbers():
    cat = load_catalog()
    names = [("part", p.name) for p in cat.parts.values()] + [("switch", s.name) for s in cat.switches.values()]
    assert len(names) > 25
    for kind, text in names:
        zh = tr(described(kind, text), "zh")
        assert str(described(kind, text)) == text
        assert zh != text or not re.search(r"\b(cable|transceiver|side|rack|per|one|management|announced)\b", text), text
        for name in re.findall(r"\b[A-Z][A-Za-z]*-?\d[\w+/.-]*", text):  # MCP7Y00-N0xx, QM9700, SN2201
            assert name in zh, (text, name, zh)


def test_a_description_without_an_entry_is_shown_as_written():
    assert described("nic", "my own 800G NIC, two per GPU") == "my own 800G NIC, two per GPU"
    assert tr(described("nic", "my own 800G NIC, two per GPU"), "zh") == "my own 800G NIC, two per GPU"
    assert described("cpu", None) == ""


def test_a_plan_made_in_english_lists_its_nics_in_chinese(blocks):
    bom = blocks().bom
    nics = next(ln for ln in bom.lines if str(ln.item).startswith("NICs "))
    stored = as_msg(nics.item_msg)  # the plan JSON's message, read back
    assert tr(stored, "zh") == "网卡 8 × 400 Gb/s（ConnectX-7 VPI（NDR IB / 400GbE），经 4 个双端口 OSFP）"


def test_a_translated_description_survives_json_and_pickling():
    import pickle

    from trainsizer.messages import msg, storable, stored

    line = msg("bom_item_nics", count=8, gbps="400", model=described("nic", "ConnectX-7 (typical)"))
    for back in (stored(storable(line)), pickle.loads(pickle.dumps(line))):  # plan.json; the search's workers
        assert tr(back, "zh") == "网卡 8 × 400 Gb/s（ConnectX-7（典型配置））"
        assert str(back) == tr(back, "en") == "NICs 8 x 400 Gb/s (ConnectX-7 (typical))"
