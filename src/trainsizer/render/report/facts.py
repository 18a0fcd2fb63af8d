"""Facts read from a plan the same way by every part of the report: the recommended option, an option's
label, the cost the job asked for (rent or buy), the currency."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def as_dict(plan: Any) -> dict[str, Any]:
    """A Plan (pydantic) or its JSON as a plain dict."""
    if hasattr(plan, "model_dump"):
        return plan.model_dump(mode="json")
    if isinstance(plan, Mapping):
        return dict(plan)
    raise TypeError(f"expected a Plan or a mapping, got {type(plan).__name__}")


def recommended(plan: Mapping) -> int | None:
    """Index of the recommended option (the plan gives an index, an option, or nothing when infeasible)."""
    rec, options = plan.get("recommended"), plan.get("options") or []
    if isinstance(rec, bool) or rec is None:
        return None
    if isinstance(rec, int):
        return rec if 0 <= rec < len(options) else None
    if isinstance(rec, Mapping):
        return options.index(rec) if rec in options else None
    return None


def network_name(hw: Mapping) -> str:
    net = hw.get("network")
    if isinstance(net, Mapping):
        return str(net.get("id") or net.get("kind") or "")
    return str(net or "")


def option_label(o: Mapping) -> str:
    hw = o.get("hardware", {})
    return f"{hw.get('accelerator', '?')} ×{hw.get('count', '?')}"


def pick_cost(o: Mapping, procurement: str) -> tuple[str, Mapping | None]:
    """The cost block the job asked for (rent or buy), else whichever the option has."""
    cost = o.get("cost") or {}
    order = ("buy", "rent") if procurement == "buy" else ("rent", "buy")
    for kind in order:
        if isinstance(cost.get(kind), Mapping):
            return kind, cost[kind]
    return "", None


def currency(plan: Mapping) -> str:
    for o in plan.get("options") or []:
        if (o.get("cost") or {}).get("currency"):
            return o["cost"]["currency"]
    return ((plan.get("job") or {}).get("goal") or {}).get("budget", {}).get("currency", "") if plan.get("job") else ""


def procurement(plan: Mapping) -> str:
    return str((((plan.get("job") or {}).get("goal")) or {}).get("procurement") or "rent")


def strategy_text(s: Mapping) -> str:
    parts = [f"{k.upper()}{s[k]}" for k in ("tp", "pp", "vpp", "dp", "cp", "ep") if s.get(k, 1) not in (None, 1)]
    if s.get("zero"):
        parts.append(f"ZeRO-{s['zero']}")
    for k in ("recompute", "offload"):
        if s.get(k) not in (None, "none"):
            parts.append(f"{k} {s[k]}")
    if s.get("micro_batch"):
        parts.append(f"mb{s['micro_batch']}")
    return " ".join(parts) or "DP1"
