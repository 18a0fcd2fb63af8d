"""Facts read from a plan the same way by every part of the report: the recommended option, an option's
label, the currency, the build-out blocks.

The plan is `trainsizer.plan.Plan` (docs/plan.schema.json) as a dict; a few older or hand-written shapes
(recommended as an index, blocks at the top level) are read too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainsizer.plan.texts import localise

BUILD_BLOCKS = ("bom", "network", "node", "storage", "facility", "software", "risks", "acceptance", "phases",
                "rules_of_thumb")


def as_dict(plan: Any, lang: str | None = None, *, keep: bool = False) -> dict[str, Any]:
    """A Plan (pydantic) or its JSON as a plain dict; with `lang`, its sentences in that language (from the
    catalogue messages the plan stores, `plan.texts`) and without the stored messages."""
    if hasattr(plan, "model_dump"):
        out = plan.model_dump(mode="json", by_alias=True)
    elif isinstance(plan, Mapping):
        out = dict(plan)
    else:
        raise TypeError(f"expected a Plan or a mapping, got {type(plan).__name__}")
    return out if lang is None else localise(out, lang, keep=keep)


def recommended(plan: Mapping) -> int | None:
    """Index of the recommended option in `options` (None when nothing satisfies the job)."""
    rec, options = plan.get("recommended"), plan.get("options") or []
    if isinstance(rec, bool) or rec is None:
        return None
    if isinstance(rec, int):
        return rec if 0 <= rec < len(options) else None
    if isinstance(rec, Mapping):
        ids = [o.get("id") for o in options]
        if rec.get("id") is not None and rec.get("id") in ids:
            return ids.index(rec["id"])
        return options.index(rec) if rec in options else None
    return None


def option_index(plan: Mapping, option_id: str) -> int | None:
    for i, o in enumerate(plan.get("options") or []):
        if o.get("id") == option_id:
            return i
    return None


def blocks(plan: Mapping) -> dict[str, Any]:
    """The build-out blocks of the recommended option: `plan.build` (or blocks at the top level)."""
    out = {k: plan[k] for k in BUILD_BLOCKS if plan.get(k) not in (None, {}, [])}
    build = plan.get("build")
    if isinstance(build, Mapping):
        out.update({k: v for k, v in build.items() if v not in (None, {}, [])})
    return out


def network_name(hw: Mapping) -> str:
    net = hw.get("network")
    if isinstance(net, Mapping):
        return str(net.get("id") or net.get("kind") or "")
    return str(net or "")


def option_number(o: Mapping, i: int) -> int:
    """The option's rank in the plan, as the CLI's options table numbers it (options past the top ones are kept
    for the Pareto front and keep their rank: 21, not 11); its place in the list where a plan has no rank."""
    rank = o.get("rank")
    return rank if isinstance(rank, int) and not isinstance(rank, bool) else i + 1


def option_label(o: Mapping) -> str:
    if o.get("id"):
        return str(o["id"])
    hw = o.get("hardware", {})
    return f"{hw.get('accelerator', '?')} x{hw.get('count', '?')}"


def procurement(plan: Mapping) -> str:
    goal = plan.get("goal") or ((plan.get("job") or {}).get("goal")) or {}
    return str(goal.get("procurement") or "rent")


def currency(plan: Mapping) -> str:
    goal = plan.get("goal") or {}
    if goal.get("currency"):
        return str(goal["currency"])
    for o in plan.get("options") or []:
        if (o.get("cost") or {}).get("currency"):
            return o["cost"]["currency"]
    return ""
