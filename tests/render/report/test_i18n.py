from __future__ import annotations

import re
import string
from pathlib import Path

import pytest
import yaml

from trainsizer.catalogues import load
from trainsizer.render.report.i18n import CLI_PATH, LANGS, PATH, catalogue, shared_labels

from .conftest import large_plan, load_buildout, load_fixture

PKG = Path(__file__).resolve().parents[3] / "src" / "trainsizer" / "render" / "report"


def _placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def test_every_message_has_both_languages_with_the_same_placeholders():
    for key, entry in catalogue().items():
        assert set(entry) == set(LANGS), key
        assert all(isinstance(entry[lang], str) and entry[lang].strip() for lang in LANGS), key
        assert _placeholders(entry["en"]) == _placeholders(entry["zh"]), key


def test_chinese_messages_are_translated():
    """A zh entry identical to en is allowed only for names (CUDA, NCCL, MFU...), not for sentences."""
    for key, entry in catalogue().items():
        if entry["zh"] == entry["en"] and " " in entry["en"].strip():
            assert not re.search(r"[a-z]{4,} [a-z]{4,}", entry["en"]), key


def test_every_key_the_code_and_templates_use_exists():
    used: set[str] = set()
    for path in [*PKG.glob("*.py"), *PKG.glob("templates/*")]:
        text = path.read_text(encoding="utf-8")
        used |= set(re.findall(r"""\bt\(\s*["']([a-z_.0-9]+)["']""", text))
    used = {k for k in used if not k.endswith(".")}
    assert used, "the scan found no keys: the pattern is broken"
    missing = sorted(k for k in used if k not in catalogue())
    assert not missing


def _keys(node, out: set[str]) -> set[str]:
    if isinstance(node, dict):
        for k, v in node.items():
            out.add(k)
            _keys(v, out)
    elif isinstance(node, list):
        for v in node:
            _keys(v, out)
    return out


def test_every_build_out_field_has_a_label():
    plans = [load_fixture(), large_plan(), load_buildout("sft70b"), load_buildout("405b")]
    blocks = ("bom", "node", "network", "storage", "facility", "software", "risks", "phases", "rules_of_thumb",
              "acceptance")
    fields: set[str] = set()
    for plan in plans:
        for block in blocks:
            _keys(plan.get(block) or (plan.get("build") or {}).get(block), fields)
    ignored = {"low", "high", "mid", "typical", "value", "schema_version", "bf16", "fp8", "all_reduce", "all_gather",
               "reduce_scatter", "critical_xids", "critical_xids_source", "platform", "files", "slurm.conf",
               "gres.conf", "topology.conf"} | {k for k in fields if k.isupper()}   # file names, env variables
    missing = sorted(k for k in fields - ignored if f"f.{k}" not in catalogue())
    assert not missing


def test_no_message_is_defined_twice():
    """YAML keeps the last of two equal keys silently; a second definition would hide the first."""
    text = (PKG / "data" / "i18n.yaml").read_text(encoding="utf-8")
    keys = [line.split(":", 1)[0] for line in text.splitlines() if line and not line.startswith(("#", " "))]
    assert len(keys) == len(set(keys)) == len(load(PATH))


def test_phase_and_risk_names_come_from_the_cli_labels_only():
    """Every phase and risk id the plan can emit is named in the report by the CLI's own label, and the report's
    file does not copy it (a copy would drift from the CLI's wording)."""
    src = PKG.parents[1]
    data = yaml.safe_load((src / "plan" / "data" / "phases.yaml").read_text(encoding="utf-8"))
    phases = data["phases"] + data["rent_phases"]
    risks = re.findall(r'Risk\(id="([a-z_]+)"', (src / "plan" / "buildout" / "risks.py").read_text(encoding="utf-8"))
    assert phases and len(risks) >= 10, "the scan found no ids: the pattern is broken"
    cli = load(CLI_PATH)
    for prefix, ids in (("b_phase_", [p["id"] for p in phases]), ("b_risk_", risks)):
        for i in ids:
            assert catalogue()[f"v.{i}"] == cli[f"{prefix}{i}"], i
    assert not set(shared_labels()) & set(load(PATH)), "copied into render/report/data/i18n.yaml"
    assert not any(k.endswith("_fix") for k in shared_labels())


def test_every_software_family_and_vendor_has_a_label():
    """The software block names the accelerator family and vendor by their labels ('Blackwell', '华为'), not
    the stack file's keys ('blackwell', 'huawei'): families from the report's labels, vendors from the catalog
    (accelerators.yaml `vendors`, the one place vendor names are kept)."""
    from trainsizer.catalog import load_catalog
    from trainsizer.render.report.blocks import cell
    from trainsizer.render.report.fmt import Fmt

    stacks = load("plan/data/software.yaml")["stacks"]["value"]
    assert not sorted(n for n in stacks if f"v.{n}" not in catalogue())
    vendors = {str(s["vendor"]) for s in stacks.values()}
    assert vendors <= set(load_catalog().vendors)
    assert cell("vendor", "huawei", Fmt("zh"), "") == "华为" and cell("vendor", "nvidia", Fmt("en"), "") == "NVIDIA"


def test_an_environment_variable_keeps_its_name():
    from trainsizer.render.report.i18n import field_label

    assert field_label("NCCL_NVLS_ENABLE", "zh") == "NCCL_NVLS_ENABLE"
    assert field_label("nodes_per_rack", "zh") != "nodes_per_rack"


@pytest.mark.parametrize("code", ["node_local", "nfs", "parallel_fs", "object", "nvlink", "nvlink-bridge", "pcie",
                                  "xgmi", "hccs", "roce"])
def test_storage_kinds_and_scale_up_techs_are_named_not_coded(code):
    """The storage block's kind and the scale-up domain's technology read as words ('并行文件系统', 'PCIe'),
    not the catalog's codes ('parallel_fs', 'pcie')."""
    from trainsizer.render.report.blocks import cell
    from trainsizer.render.report.fmt import Fmt

    for lang in ("en", "zh"):
        assert cell("kind", code, Fmt(lang), "") != code
