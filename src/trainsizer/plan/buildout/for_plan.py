"""Build-out blocks for one option of a plan: the recommended one, or the one `plan --option N` names
(`PlanOption.build` of that option and `Plan.build`)."""

from __future__ import annotations

from typing import Any

from trainsizer.errors import SpecError
from trainsizer.messages import msg


def check_option(option: int | None, ranked: int) -> None:
    """`--option N` must name a feasible option's rank (1 = recommended)."""
    if option is not None and not 1 <= option <= ranked:
        raise SpecError("--option", msg("plan_no_option_rank"), value=option,
                        allowed=f"1..{ranked}" if ranked else msg("plan_allowed_no_option"))


def option_build(scenario: Any, server_id: str | None, catalog: Any) -> dict[str, Any]:
    """The build-out blocks (bom, node, network, storage, facility, software, risks, acceptance, phases,
    rules_of_thumb) of an option's scenario (hardware and strategy set), as JSON-ready dicts."""
    from trainsizer.evaluate import evaluate
    from trainsizer.plan.buildout.assemble import build_plan

    return build_plan(scenario, catalog, evaluate(scenario, catalog), server_id)


def attach(plan: Any, priced: list[Any], ranked: list[Any], option: int | None, catalog: Any) -> Any:
    """Fill `build` of the chosen option and of the plan: option `option`, else the recommended one (none
    when nothing satisfies the job and no option is named)."""
    if option is None and plan.recommended is None:
        return plan
    rank_ = option or 1
    target = next(o for o in plan.options if o.rank == rank_)
    p = priced[ranked[rank_ - 1].index]
    server = p.result.option.server
    target.build = option_build(p.scenario, server.id if server is not None else None, catalog)
    plan.build = target.build
    return plan
