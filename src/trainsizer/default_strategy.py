"""A job with hardware but no strategy: the fastest strategy that fits that hardware, found by the strategy
search (`trainsizer.search.engine.search_option`, the same search `trainsizer plan` runs per hardware option),
and a note saying it was chosen. `trainsizer estimate`, `fit` and `check` use it; give `strategy:` (or
--tp/--pp/... flags) to evaluate your own instead."""

from __future__ import annotations

from dataclasses import replace

from trainsizer.errors import SpecError
from trainsizer.messages import msg
from trainsizer.scenario import Scenario

SHOWN = ("tp", "pp", "vpp", "dp", "cp", "ep", "zero", "micro_batch", "recompute", "offload")


def with_default_strategy(scenario: Scenario) -> Scenario:
    """`scenario` itself when it has a strategy or no hardware; else with the search's choice and a note."""
    if scenario.strategy is not None or scenario.system is None:
        return scenario
    from trainsizer.search.candidates import HardwareOption
    from trainsizer.search.config import load_config
    from trainsizer.search.engine import search_option

    system = scenario.system
    option = HardwareOption(accelerator=scenario.accelerator, server=None, per_node=system.gpus_per_node,
                            count=system.gpus, network=scenario.network)
    result = search_option(scenario.model, scenario.training, option, load_config())
    if result.strategy is None:
        least = result.min_mem_gib if result.min_mem_gib == result.min_mem_gib else result.lower_bound_gib
        raise SpecError("job: hardware", msg("job_no_strategy_fits", evaluated=result.evaluated,
                                             least=f"{least:.1f}", capacity=f"{system.memory_gib:.1f}"))
    strategy = result.strategy
    shown = ", ".join(f"{k}={getattr(strategy, k)}" for k in SHOWN)
    note = msg("note_default_strategy", strategy=shown,
               how=msg("note_default_strategy_how", evaluated=result.evaluated, feasible=result.feasible))
    return replace(scenario, strategy=strategy, notes=(*scenario.notes, note))

