"""A parallel layout as a person reads it, the one formatter of the CLI tables, the reports, the plan's JSON summary
and the default-strategy note: the degrees and codes, then each mode in words ("TP8 PP2 DP4 mb1, distributed
optimizer, full recompute" / "TP8 PP2 DP4 mb1，分布式优化器，完全重计算"). JSON keeps the strategy's own fields.

A `Msg` (or the codes alone, a plain str), so a stored plan's sentences read in either language. Sits beside
`messages` at the bottom of the layers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainsizer.messages import Msg, msg, tr
from trainsizer.names import FSDP_FRAMEWORKS

DEGREES = ("tp", "pp", "vpp", "dp", "cp", "ep")


def stack_options_text(options: Any) -> str:
    """'compile_loss false, moe_torch_grouped_mm true': stated stack options as a job file writes them."""
    def word(v: Any) -> str:
        return "null" if v is None else str(v).lower() if isinstance(v, bool) else str(v)
    return ", ".join(f"{k} {word(v)}" for k, v in options)


def _get(s: Any, key: str) -> Any:
    return s.get(key) if isinstance(s, Mapping) else getattr(s, key, None)


def layout_codes(s: Any) -> str:
    """'TP8 PP2 VPP2 DP4 CP2 EP8 ETP1 ZeRO-1 mb1': a degree of 1 left out, except DP; expert TP only where it is
    not TP (under EP). Megatron's distributed optimizer
    is a mode, in words (`_modes`): its code ("dist-opt") is not one a reader knows."""
    codes = [f"{k.upper()}{_get(s, k)}" for k in DEGREES if _get(s, k) not in (None, 1) or k == "dp"]
    if _get(s, "etp") not in (None, _get(s, "tp")) and (_get(s, "ep") or 1) > 1:
        codes.append(f"ETP{_get(s, 'etp')}")  # expert TP, written where it is not the TP degree
    if _get(s, "zero"):
        codes.append(f"ZeRO-{_get(s, 'zero')}")
    if _get(s, "micro_batch"):
        codes.append(f"mb{_get(s, 'micro_batch')}")
    return " ".join(c for c in codes if not c.endswith("None"))


def _modes(s: Any) -> list[Msg]:
    modes = [msg("layout_shard_group", n=_get(s, "shard_group"))] if _get(s, "shard_group") else []
    if _get(s, "distributed_optimizer"):
        modes.append(msg("layout_distributed_optimizer"))
    recompute = _get(s, "recompute") or "none"
    if recompute == "full" and _get(s, "recompute_method"):
        modes.append(msg("layout_recompute_partial", method=_get(s, "recompute_method"),
                         n=_get(s, "recompute_num_layers")))
    else:
        modes.append(msg(f"layout_recompute.{recompute}"))
    if _get(s, "offload") not in (None, "none"):
        modes.append(msg(f"layout_offload.{_get(s, 'offload')}"))
    first, last = _get(s, "pp_first_stage_layers"), _get(s, "pp_last_stage_layers")
    if _get(s, "device_map"):  # transformers' chain of cards, accelerate's split of every card (estimate.device_map)
        counts = _get(s, "pp_stage_layers") or ()
        modes.append(msg("layout_device_map", cards=_get(s, "pp"), counts=" / ".join(str(n) for n in counts))
                     if len(counts) > 1 else msg("layout_device_map_one"))
    elif first or last:
        # Megatron-Core's num_layers_in_first / last_pipeline_stage take whole chunks of vpp layers only
        # (TransformerConfig); other counts are written as a pipeline_model_parallel_layout
        vpp = int(_get(s, "vpp") or 1)
        key = "layout_end_stages_by_layout" if any(n and n % vpp for n in (first, last)) else "layout_end_stages"
        modes.append(msg(key, first=first or "-", last=last or "-"))
    if _get(s, "framework") in FSDP_FRAMEWORKS and _get(s, "zero") in (2, 3):
        modes.append(msg(f"layout_fsdp.{_get(s, 'zero')}"))
    return modes


def layout_text(s: Any) -> Msg | str:
    """The layout of strategy `s` (a Strategy, the plan's StrategyOut, or its JSON mapping) for people."""
    text: Msg | str = layout_codes(s)
    for mode in _modes(s):
        text = msg("layout_with_mode", layout=text, mode=mode)
    return text


def layout_in(s: Any, lang: str) -> str:
    """`layout_text(s)` written in `lang`."""
    return str(tr(layout_text(s), lang))
