"""A training node's host RAM need, GiB: the one definition the plan's node block, the ranking's host-RAM price
(evaluate.host_ram_block) and the search's host verdict (search.engine) read (docs/known-gaps.md 43 (w)).

need = OS reserve + per GPU (process + pinned buffers) + async checkpoint staging (the node's share of one checkpoint:
PyTorch DCP async_save stages the state dict in host memory before writing it) + the node's dataset shard in page
cache + the optimizer / parameter states the layout offloads (MemoryEstimate.host_bytes_per_node). The constants and
their sources are in estimate/data/host_memory.yaml.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import yaml

from trainsizer.errors import unknown_name
from trainsizer.estimate.memory import GIB
from trainsizer.sourced_rule import Rule


@cache
def _rules() -> dict[str, Rule]:
    text = resources.files("trainsizer.estimate").joinpath("data/host_memory.yaml").read_text(encoding="utf-8")
    return {k: Rule(k, float(v["value"]), str(v["source"]), str(v.get("note", "")))
            for k, v in (yaml.safe_load(text) or {}).items()}


def rule(name: str) -> Rule:
    """One host-memory constant; a missing one is a data bug named precisely."""
    rules = _rules()
    if name not in rules:
        raise unknown_name("estimate/data/host_memory.yaml", "rule", name, list(rules))
    return rules[name]


def all_rules() -> list[Rule]:
    return list(_rules().values())


def value(name: str) -> float:
    return rule(name).value


def checkpoint_bytes(reliability: Any, model: Any, training: Any) -> float:
    """Bytes of one full training checkpoint, at the bytes / parameter the goodput model uses
    (estimate.reliability.failure_figures); a LoRA / QLoRA job saves its adapters only."""
    from trainsizer.estimate.model_states import lora_trainable_params
    from trainsizer.estimate.reliability import failure_figures

    bpp = failure_figures(reliability).checkpoint_bytes_per_param
    if not training.trains_base_weights:
        return bpp * lora_trainable_params(model, training)
    return bpp * float(model.params_total)


def dataset_stored_bytes(tokens_per_epoch: float) -> float:
    """Bytes of one tokenised epoch as stored (token ids)."""
    return tokens_per_epoch * value("stored_bytes_per_token")


def need_parts(per_node: int, nodes: int, checkpoint_b: float, tokens_per_epoch: float,
               offloaded_gib: float = 0.0) -> dict[str, float]:
    """A node's host RAM need by part, GiB (the node block's ram_breakdown_gib); `offloaded_gib`: the states the
    layout keeps in host RAM a node (0 without offload)."""
    nodes = max(1, nodes)
    return {
        "os_reserved": value("os_reserved_gib"),
        "training_processes": per_node * value("process_host_gib_per_gpu"),
        "pinned_buffers": per_node * value("pinned_buffer_gib_per_gpu"),
        "async_checkpoint_staging": checkpoint_b / nodes / GIB,
        "offloaded_states": offloaded_gib,
        "dataset_page_cache": dataset_stored_bytes(tokens_per_epoch) / nodes / GIB
        * value("page_cache_fraction_of_dataset_shard"),
    }


def base_need_gib(per_node: int, nodes: int, checkpoint_b: float, tokens_per_epoch: float) -> float:
    """A node's host RAM need without offloaded states, GiB."""
    return sum(need_parts(per_node, nodes, checkpoint_b, tokens_per_epoch).values())
