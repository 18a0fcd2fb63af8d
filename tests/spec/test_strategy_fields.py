"""StrategySpec's fields in one group each: the layout the search chooses, details of a stated layout, and the stack
options the search carries into every layout (spec.job LAYOUT_FIELDS / LAYOUT_DETAIL_FIELDS / STACK_OPTION_FIELDS)."""

from __future__ import annotations

import dataclasses

from trainsizer.estimate.inputs import Strategy
from trainsizer.spec import (
    LAYOUT_DETAIL_FIELDS,
    LAYOUT_FIELDS,
    STACK_OPTION_FIELDS,
    StrategySpec,
    stated_stack_options,
)


def test_every_strategy_field_is_in_one_group():
    groups = (LAYOUT_FIELDS, LAYOUT_DETAIL_FIELDS, STACK_OPTION_FIELDS, frozenset({"framework"}))
    assert frozenset().union(*groups) == frozenset(StrategySpec.model_fields)
    assert sum(len(g) for g in groups) == len(StrategySpec.model_fields)  # disjoint


def test_stack_options_are_the_estimates_strategy_fields_by_name():
    """The search sets them on its strategies by name (dataclasses.replace), as scenario._resolve_strategy does."""
    assert STACK_OPTION_FIELDS <= {f.name for f in dataclasses.fields(Strategy)}
    assert {"compile_loss", "moe_torch_grouped_mm", "attention_kernel", "activation_offload"} <= STACK_OPTION_FIELDS
    assert not {"tp", "zero", "recompute", "sequence_parallel", "pp_first_stage_layers"} & STACK_OPTION_FIELDS


def test_stated_options_are_the_stated_ones_in_field_order():
    spec = StrategySpec(framework="torchtitan", tp=2, moe_torch_grouped_mm=True, compile_loss=False)
    assert stated_stack_options(spec) == (("compile_loss", False), ("moe_torch_grouped_mm", True))
    assert stated_stack_options(StrategySpec(framework="hf")) == ()
    assert stated_stack_options(None) == ()
