"""One source per fact: the names the job file accepts are the names the estimators model."""

from __future__ import annotations

import dataclasses
import typing

from trainsizer import names
from trainsizer.estimate import inputs
from trainsizer.estimate.model_states import LORA_TARGET_NAMES, lora_targets
from trainsizer.models.arch import ModelArch
from trainsizer.models.inline import InlineModelSpec
from trainsizer.spec import job
from trainsizer.spec.job import LoraSpec


def test_job_enums_are_the_estimators_tuples():
    pairs = [(job.Method, inputs.METHODS), (job.Precision, inputs.PRECISIONS), (job.Optimizer, inputs.OPTIMIZERS),
             (job.Recompute, inputs.RECOMPUTE), (job.Offload, inputs.OFFLOAD), (job.Framework, inputs.FRAMEWORKS),
             (job.LossImpl, inputs.LOSS_IMPLS)]
    for literal, names_ in pairs:
        assert typing.get_args(literal) == names_


def test_the_job_file_fp8_recipes_are_the_ones_the_constants_describe():
    from trainsizer.estimate.calibration import load_constants

    assert typing.get_args(job.Fp8Recipe) == names.FP8_RECIPES
    assert set(names.FP8_RECIPES) - {"auto"} == set(load_constants().fp8_recipes)
    assert set(load_constants().raw["fp8"]["default_recipe"].values()) <= set(names.FP8_RECIPES)
    assert set(names.FP4_RECIPES) == set(load_constants().fp4_recipes) <= set(names.FP8_RECIPES)


def test_a_job_accepts_every_lora_target_the_estimators_model():
    assert LORA_TARGET_NAMES == names.LORA_TARGETS
    for name in names.LORA_TARGETS:
        if name != "all-linear":
            assert LoraSpec(targets=(name,)).targets == (name,)
    assert LoraSpec(targets=("all-linear",)).targets == names.LORA_LINEAR_TARGETS


def test_one_lora_default_for_the_job_file_and_the_estimators():
    assert LoraSpec().targets == names.LORA_DEFAULT_TARGETS
    unnamed = inputs.Training(method="lora", lora_rank=8)
    assert lora_targets(unnamed) == frozenset(names.LORA_DEFAULT_TARGETS)


def test_inline_model_keys_are_the_model_fields():
    """InlineModelSpec (job-file keys) and ModelArch (the estimators' model) name the same fields."""
    bookkeeping = {"source", "notes", "unknown_keys"}  # set by the loaders, not by a user
    arch = {f.name for f in dataclasses.fields(ModelArch)} - bookkeeping
    assert set(InlineModelSpec.model_fields) - {"preset"} == arch


def test_every_preset_written_inline_gives_back_the_same_model():
    """The keys accept every value ModelArch holds (types, literal options, lists): each shipped preset, written
    out field by field as an inline model, builds the same ModelArch."""
    from trainsizer.models.inline import arch_from_inline
    from trainsizer.models.shipped import load_preset, preset_names

    bookkeeping = {"source", "notes", "unknown_keys"}
    for name in preset_names():
        preset = load_preset(name)
        inline = {f.name: getattr(preset, f.name) for f in dataclasses.fields(ModelArch)
                  if f.name not in bookkeeping}
        inline["mlp_only_layers"] = list(inline["mlp_only_layers"])  # a YAML list in a job file
        rebuilt = arch_from_inline(inline)
        assert dataclasses.replace(rebuilt, source=preset.source, notes=preset.notes,
                                   unknown_keys=preset.unknown_keys) == preset, name
