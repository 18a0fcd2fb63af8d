"""Chinese plan output has no English left except names, units, ids and quoted sources: every example
planned once, then its `trainsizer plan --lang zh` tables, its zh report (HTML and Markdown) checked word by
word. A failure lists the English words and where they came from, so the string can get its catalogue key."""

from __future__ import annotations

import html as html_mod
import re
from functools import cache

import pytest
import yaml
from rich.console import Console

from trainsizer.catalog import load_catalog
from trainsizer.render.build_view import print_build
from trainsizer.render.plan_view import print_plan
from trainsizer.render.report import render_html, render_markdown

from .test_examples import EXAMPLES, _plan

WORD = re.compile(r"[A-Za-z]{4,}")
# ids: option flags, snake_case keys, hyphenated or dotted catalog / preset ids, file names, env variables
IDS = re.compile(r"--[\w-]+|\b\w+(?:_\w+)+\b|\b[\w]+(?:[-.][\w]+)+\b|\b[A-Z][A-Z0-9_]{2,}\b")
# names and units that stay as written in Chinese (products, software, standards, units, acronyms)
NAMES = set("""
GiB TFLOP TFLOPS token tokens logits USD CNY kWh MFU HFU LoRA QLoRA ZeRO NVLink NVLS NCCL RCCL HCCL SHARP
GPUDirect RDMA InfiniBand RoCE Ethernet Slurm Kubernetes Kubeflow PyTorchJob PyTorch torchrun FSDP FSDP2 DeepSpeed
Megatron Core NeMo Transformer Engine Hugging Face Transformers PEFT bitsandbytes MindSpeed torch_npu Ascend
CUDA ROCm CANN busbw Young Daly Lustre GPFS BeeGFS WEKA VAST EXAScaler Storage Scale SuperPOD Fabric Manager
Tier OpenSM trainsizer accept plan json yaml schema Matplotlib Mermaid NVIDIA Intel Gaudi Habana composable_kernel
Volta Ampere Hopper Blackwell Spectrum Quantum OSFP QSFP AOCs NVSwitch IMEX delta sqrt full none auto adamw
selective rent either buy lora qlora pretrain bf16 fp16 fp8 nvidia Adam amdgpu SynapseAI
Thakur rank ranks wheel wheels Excel Markdown Trainer torchtune torchtitan cuDNN SDPA sdpa
Neoverse Grace Vera Kunpeng Xeon EPYC Platinum ConnectX SuperNIC BlueField
""".split())


# catalog fields that are names or quoted source data (English as the vendor or source writes them); the servers'
# NIC and CPU descriptions are not among them: they read in Chinese (plan/data/part_text.yaml)
NAME_FIELDS = ("name", "vendor", "arch", "form_factor", "market_note", "title",
               "medium", "generation", "scaleup_detail")


@cache
def _source_words() -> frozenset[str]:
    """Words of names and citations: catalog entries' names (servers, switches, parts, storage tiers, ...),
    source titles, and the acceptance platform table, whose thresholds cite their sources in English."""
    cat = load_catalog()
    text = []
    for group in ("accelerators", "servers", "networks", "switches", "storage_tiers", "parts", "sources"):
        for entry in (getattr(cat, group, None) or {}).values():
            d = entry.to_dict() if hasattr(entry, "to_dict") else vars(entry)
            text.extend(str(d.get(k) or "") for k in NAME_FIELDS)
    from importlib import resources
    text.append(resources.files("trainsizer.accept").joinpath("data/platforms.yaml").read_text(encoding="utf-8"))
    # the largest documented clusters a plan's scale note quotes (catalog/evidence/scale.yaml): source data
    text.append(resources.files("trainsizer.catalog").joinpath("evidence/scale.yaml").read_text(encoding="utf-8"))
    return frozenset(WORD.findall(" ".join(text)))


def english_words(text: str, job_text: str) -> list[str]:
    text = re.sub(r"`[^`]*`|\]\([^)]*\)", " ", text)   # code spans and link targets are names
    text = re.sub(r"\b(?:[A-Za-z0-9_.-]+/)+[A-Za-z0-9_.-]*", " ", text)  # file paths (catalog/evidence/scale.yaml)
    text = IDS.sub(" ", text)
    allowed = {w.lower() for w in NAMES | _source_words() | set(WORD.findall(job_text))}
    return sorted({w for w in WORD.findall(text) if w.lower() not in allowed})


def _visible_html(doc: str) -> str:
    """What a reader sees: no scripts, styles, SVG metadata or generated files shown verbatim (<pre>)."""
    doc = re.sub(r"<(script|style|metadata|pre|title)\b.*?</\1>", " ", doc, flags=re.S)
    return html_mod.unescape(re.sub(r"<[^>]+>", " ", doc))


def _cli(plan: dict) -> str:
    con = Console(record=True, width=240, file=open("/dev/null", "w"))  # noqa: SIM115 (closed with the console)
    print_plan(plan, "zh", console=con)
    if plan.get("build"):
        print_build(plan["build"], "zh", console=con)
    out = con.export_text()
    con.file.close()
    return out


@pytest.mark.parametrize("name", [p.stem for p in EXAMPLES])
def test_chinese_plan_report_and_tables_have_no_english_left(name):
    plan = _plan(name)
    job_text = next(p for p in EXAMPLES if p.stem == name).read_text(encoding="utf-8")
    job_text += " " + yaml.safe_dump(plan.get("job") or {})
    md, _ = render_markdown(plan, "zh")
    md = re.sub(r"```.*?```", " ", md, flags=re.S)
    found = {where: english_words(text, job_text) for where, text in (
        ("plan --lang zh", _cli(plan)), ("report.html", _visible_html(render_html(plan, "zh"))),
        ("report.md", md))}
    found = {k: v for k, v in found.items() if v}
    assert not found, f"English left in the Chinese output of {name}: {found}"


def test_the_check_finds_english():
    """The check can fail: an English sentence is found, names and ids are not."""
    assert {"cheapest", "wins"} <= set(english_words("方案：the cheapest plan wins", ""))
    assert english_words("h100-sxm-80gb x16 ib-ndr400 NVLink per_node", "") == []


@pytest.mark.parametrize("deadline_days", [0.1])
def test_a_job_nothing_satisfies_explains_itself_in_chinese(deadline_days):
    """What binds, by how much and what relaxing it buys (re-searched) is Chinese too."""
    plan = _plan("sft-70b-search", deadline_days=deadline_days)
    assert plan["binding"] and plan["recommended"] is None
    job_text = next(p for p in EXAMPLES if p.stem == "sft-70b-search").read_text(encoding="utf-8")
    found = {where: english_words(text, job_text) for where, text in (
        ("plan --lang zh", _cli(plan)), ("report.html", _visible_html(render_html(plan, "zh"))))}
    assert not {k: v for k, v in found.items() if v}, found


# a Han character followed by ASCII punctuation and a space: '方案: ', '成本 (' (the catalog's own prose aside)
# or a space between two Han characters ('决定因素 算力')
HAN_THEN_ASCII = re.compile(r"[\u4e00-\u9fff\uff09](?:[:;,] | \()|[\u4e00-\u9fff] +[\u4e00-\u9fff]")


@pytest.mark.parametrize("name", ["sft-70b-search", "sft-70b-16gpu"])
def test_chinese_plan_lines_use_full_width_punctuation(name):
    lines = [line for line in _cli(_plan(name)).splitlines() if line and line[0] not in "│┃┏┡└┗"]
    bad = [line for line in lines if HAN_THEN_ASCII.search(line)]
    assert not bad, f"ASCII punctuation after Chinese in `plan --lang zh` of {name}: {bad[:5]}"
