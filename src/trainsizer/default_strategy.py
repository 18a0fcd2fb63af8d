"""A job with hardware but no strategy: the fastest strategy that fits that hardware (or, when that one leaves
less than the memory floor free, the fastest that does within the tie band: `search.engine.choose`), found by
the strategy search (`trainsizer.search.engine.search_option`, the same search `trainsizer plan` runs per hardware option),
and a note saying it was chosen. `trainsizer estimate`, `fit` and `check` use it; give `strategy:` (or
--tp/--pp/... flags) to evaluate your own instead."""

from __future__ import annotations

from dataclasses import replace

from trainsizer.errors import SpecError, StrategyError
from trainsizer.layout_text import layout_text, stack_options_text
from trainsizer.messages import msg
from trainsizer.scenario import Scenario
from trainsizer.spec import LAYOUT_FIELDS, STACK_OPTION_FIELDS, stated_stack_options


def names_framework_only(scenario: Scenario) -> bool:
    """Whether the job's strategy sets nothing but strategy.framework (the web form's framework choice, or
    --framework alone): a stack to search the layouts of, not a layout."""
    spec = scenario.job.strategy
    return spec is not None and not (spec.model_fields_set - {"framework"})


def names_no_layout(scenario: Scenario) -> bool:
    """Whether the job's strategy states its stack only (strategy.framework and stack options,
    spec.STACK_OPTION_FIELDS): searched among the layouts that stack runs, the options carried into each."""
    spec = scenario.job.strategy
    return spec is not None and not (spec.model_fields_set - STACK_OPTION_FIELDS - {"framework"})


def _defaults_note(scenario: Scenario) -> Scenario:
    """`scenario` with a note where its strategy states details of a layout (sequence_parallel, pipeline end stages,
    recompute_modules, ...; spec.LAYOUT_DETAIL_FIELDS) but no layout field: it is estimated at the defaults (no ZeRO,
    micro-batch 1), not searched as a stack alone is."""
    spec = scenario.job.strategy
    if spec is None or spec.model_fields_set & LAYOUT_FIELDS:
        return scenario
    options = ", ".join(sorted(spec.model_fields_set - {"framework"}))
    return replace(scenario, notes=(*scenario.notes, msg("note_strategy_no_layout", options=options,
                                                         strategy=layout_text(scenario.strategy))))


def _chosen_note(scenario: Scenario, framework: str, options: tuple, strategy: str, how: str) -> str:
    """What the search chose, for a job without a strategy, one naming its framework, or one stating stack options."""
    if options:
        return msg("note_default_strategy_stack", framework=framework, options=stack_options_text(options),
                   strategy=strategy, how=how)
    if names_framework_only(scenario):
        return msg("note_default_strategy_framework", framework=framework, strategy=strategy, how=how)
    return msg("note_default_strategy", strategy=strategy, how=how)


def with_default_strategy(scenario: Scenario) -> Scenario:
    """`scenario` itself when it has a strategy or no hardware (with a note where that strategy states no layout);
    else with the search's choice and a note. A strategy that names only its stack (the framework, stack options) is
    searched too, among the layouts that framework runs, the options carried into each."""
    if scenario.system is None:
        return scenario
    if scenario.strategy is not None and not names_no_layout(scenario):
        return _defaults_note(scenario)
    from trainsizer.search.candidates import HardwareOption
    from trainsizer.search.config import leaves_floor, load_config, names_lean_layout
    from trainsizer.search.engine import offload_reason, search_option

    system = scenario.system
    option = HardwareOption(accelerator=scenario.accelerator, server=None, per_node=system.gpus_per_node,
                            count=system.gpus, network=scenario.network, fabric=scenario.job.hardware.fabric)
    spec = scenario.job.strategy
    framework = spec.framework if spec is not None else "auto"
    options = stated_stack_options(spec)
    result = search_option(scenario.model, scenario.training, option, load_config(), framework, options=options)
    if result.refused_by_options and result.options_refusal is not None:  # the stated options hold on no layout
        raise StrategyError(*result.options_refusal)
    if result.strategy is None and result.invalid_refusal is not None:  # a job setting no layout runs
        raise StrategyError(*result.invalid_refusal)
    if result.strategy is None and not result.evaluated:  # no layout valid: the batch, not the memory
        raise SpecError("job: hardware", msg("job_no_strategy_valid", gpus=system.gpus,
                                             batch=scenario.training.global_batch_seqs))
    if result.strategy is None:
        least = result.min_mem_gib if result.min_mem_gib == result.min_mem_gib else result.lower_bound_gib
        raise SpecError("job: hardware", msg("job_no_strategy_fits", evaluated=result.evaluated,
                                             least=f"{least:.1f}", capacity=f"{system.memory_gib:.1f}"))
    strategy = result.strategy
    how = msg("note_default_strategy_how", evaluated=result.evaluated, feasible=result.feasible)
    if result.for_headroom:  # a slower strategy that keeps the memory floor free (search.engine.choose)
        how = msg("note_default_strategy_roomy", evaluated=result.evaluated, feasible=result.feasible,
                  floor=f"{load_config().memory_headroom_min:.0%}", cap=f"{system.memory_gib:.1f}",
                  slower=f"{result.step_s / result.fastest_step_s - 1.0:.1%}",
                  fast_used=f"{result.fastest_mem_gib:.1f}")
    notes = [_chosen_note(scenario, framework, options, layout_text(strategy), how)]
    if result.dropped_by_options and result.options_refusal is not None:
        notes.append(msg("note_stack_options_dropped", dropped=result.dropped_by_options,
                         evaluated=result.evaluated, reason=result.options_refusal[1]))
    cfg = load_config()
    if not leaves_floor(result.mem_gib, system.memory_gib, cfg.memory_headroom_min):
        # the fastest layout kept although it leaves less than the floor free (search.engine.choose: nothing that
        # clears it is within the tie band); the plan's risks flag it (plan.buildout.risks), the estimate says so
        free = system.memory_gib - result.mem_gib
        notes.append(msg("note_default_strategy_tight", free=f"{free:.1f}", cap=f"{system.memory_gib:.1f}",
                         share=f"{free / system.memory_gib:.1%}", floor=f"{cfg.memory_headroom_min:.0%}",
                         band=f"{cfg.tie_fraction:.0%}"))
    why = offload_reason(result, frozen_base=not scenario.training.trains_base_weights)
    if why:  # nothing fits on the GPUs alone: the states (or the least layout) against the capacity
        notes.append(msg(why[0], **why[1]))
    if result.lean_strategy is not None and names_lean_layout(result.mem_gib, result.lean_mem_gib):
        # the fastest layout fills memory the job does not need (no recompute, a large micro-batch): say what the
        # job needs at the least on this hardware, so 60 GiB for an 8B QLoRA does not read as its requirement
        notes.append(msg("note_default_strategy_lean", used=f"{result.mem_gib:.1f}", cap=f"{system.memory_gib:.1f}",
                         lean=f"{result.lean_mem_gib:.1f}", strategy=layout_text(result.lean_strategy),
                         slower=f"{result.lean_step_s / result.step_s - 1.0:.0%}"))
    return replace(scenario, strategy=strategy, notes=(*scenario.notes, *notes))

