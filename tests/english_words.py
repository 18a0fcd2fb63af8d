"""English words left in Chinese (`--lang zh`) output: what a reader of the Chinese text would have to read
in English, after the names and units that stay as written are taken out.

Stays as written (never counted): words of the job-file schema (keys and allowed values: a user types them),
catalog ids and aliases, model preset names and Hugging Face model types, option names (`--tp`), anything in
quotes or backticks (a value the user gave, a command to run), file paths, snake_case / hyphenated / dotted
identifiers, words with digits, and the names, acronyms and units in `KEEP`. Everything else of four or more
ASCII letters is English prose, which the message catalogues should have translated.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Iterable
from functools import lru_cache

# names, acronyms and units that a Chinese text writes in Latin letters
KEEP = frozenset("""
GiB MiB TiB GB/s Gb/s TFLOP TFLOPS FLOPs FLOP tokens token logits USD CNY kWh PUE MFU HFU LoRA QLoRA ZeRO NVLink
NVLS NCCL RCCL HCCL InfiniBand RoCE PCIe HBM GDDR SXM OAM NVMe Slurm Kubernetes Kubeflow PyTorch PyTorchJob CUDA ROCm
CANN DeepSpeed FSDP FSDP2 PEFT Trainer Hugging Face Megatron Core NeMo Bridge torchtitan torchtune Transformer
Engine DDP Adafactor AdamW Adam Float8 MXFP8 NVIDIA Huawei Ascend Hopper Blackwell Ampere Gemma Llama Qwen
DeepSeek Mamba RWKV JSON YAML UTF GELU SwiGLU RMSNorm DualPipe FlashAttention Liger Apex cuDNN NVSHMEM DeepEP
SHARP GPUDirect RDMA Young Daly Chinchilla Korthikanti Narayanan trainsizer config preset presets true false RoPE YYYY DTensor torchao
HTML HTTP Markdown Excel SQLite CoreWeave transformers
""".split())

_WORD = re.compile(r"[A-Za-z]{4,}")
_STRIP = re.compile(
    r"`[^`\n]*`"                      # a command or field in backticks
    r"|'[^'\n]*(?:'|……|\.\.\.)|\"[^\"\n]*\""  # a quoted value the user gave (maybe cut short)
    r"|--[\w-]+"                      # option names
    r"|https?://\S+"                  # URLs
    r"|(?:[\w.~-]*/)+[\w.-]*"          # paths and URLs
    r"|\b\w*\d\w*\b"                  # words with digits (ids, units such as 80gb)
    r"|\b[A-Za-z0-9]+(?:[_.+-][A-Za-z0-9]+)+\b"  # snake_case, hyphen-ids, dotted.paths, optimizer+params
)


def _literal_words(annotation: object) -> set[str]:
    out: set[str] = set()
    if typing.get_origin(annotation) is typing.Literal:
        out |= {str(a) for a in typing.get_args(annotation)}
    for arg in typing.get_args(annotation):
        out |= _literal_words(arg)
    fields = getattr(annotation, "model_fields", None)
    if isinstance(annotation, type) and fields:
        for name, info in fields.items():
            out.add(name)
            out |= _literal_words(info.annotation)
    return out


def _command_names() -> set[str]:
    import click

    from trainsizer.cli import cli

    out: set[str] = set()

    def walk(group: click.Group) -> None:
        ctx = click.Context(group)
        for name in group.list_commands(ctx):
            out.add(name)
            sub = group.get_command(ctx, name)
            if isinstance(sub, click.Group):
                walk(sub)

    walk(cli)
    return out


@lru_cache(maxsize=1)
def names() -> frozenset[str]:
    """Every name a user writes or the catalog defines: stays as written in either language."""
    from trainsizer.catalog import load_catalog
    from trainsizer.catalog.loader import META_KEYS, SECTIONS
    from trainsizer.cli.catalog_cmd import KIND_NAMES
    from trainsizer.models import preset_names
    from trainsizer.models.hf_config import FAMILIES
    from trainsizer.models.inline import InlineModelSpec
    from trainsizer.spec.job import Job

    # keys and values of job files, inline models and catalog files; model families; catalog kinds
    words = _literal_words(Job) | _literal_words(InlineModelSpec) | set(KEEP) | set(FAMILIES) | set(KIND_NAMES)
    from trainsizer.accept.runner import CHECKS
    from trainsizer.accept.telemetry import TELEMETRY_KINDS

    words |= set(SECTIONS) | set(META_KEYS) | _command_names() | set(CHECKS) | set(TELEMETRY_KINDS)
    for model in SECTIONS.values():
        words |= _literal_words(model)
    cat = load_catalog()
    for section in ("accelerators", "servers", "networks", "switches", "storage_tiers"):
        for entry_id, rec in getattr(cat, section).items():
            words.add(entry_id)
            words |= set(getattr(rec, "aliases", ()) or ())
    words |= set(preset_names())
    return frozenset(w.lower() for w in words)


def english_words(text: str, also_names: Iterable[str] = (), prose: frozenset[str] = frozenset()) -> list[str]:
    """The English words in `text` that are not names (sorted, each once). `prose`: words of data shown as
    written (catalog notes and titles); a piece of one that a table cut at its edge ("ricing" of "Pricing")
    counts as it."""
    keep = names() | {w.lower() for w in also_names} | prose
    stripped = _STRIP.sub(" ", text)
    return sorted({w for w in _WORD.findall(stripped) if w.lower() not in keep and w not in keep
                   and not (prose and any(w in p for p in prose))})


def market_notes() -> frozenset[str]:
    """Words of the catalog's market notes (quoted from their sources; printed as notes by check/estimate)."""
    from trainsizer.catalog import load_catalog

    return frozenset(w for a in load_catalog().accelerators.values() for w in _WORD.findall(a.market_note or ""))


@lru_cache(maxsize=1)
def catalog_prose() -> frozenset[str]:
    """Words of the catalog's and the presets' own text (names, notes, source titles): data that quotes its
    sources, shown as written in either language (README, "Languages and numbers")."""
    from trainsizer.catalog import load_catalog
    from trainsizer.models import list_presets

    words: set[str] = set()

    def walk(value: object) -> None:
        if isinstance(value, str):
            words.update(_WORD.findall(value))
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list | tuple):
            for v in value:
                walk(v)

    walk(load_catalog().to_dict())
    walk([p.source for p in list_presets()])
    return frozenset(words)
