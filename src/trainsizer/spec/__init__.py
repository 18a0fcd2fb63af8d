"""Job input: the pydantic models of a job file and their loader."""

from trainsizer.spec.job import (
    LAYOUT_DETAIL_FIELDS,
    LAYOUT_FIELDS,
    STACK_OPTION_FIELDS,
    Constraints,
    DataSpec,
    FabricSpec,
    GlobalBatch,
    Goal,
    HardwareSpec,
    Job,
    LoraSpec,
    NetworkSpec,
    StrategySpec,
    stated_stack_options,
)
from trainsizer.spec.load import load_job, read_mapping

__all__ = [
    "Constraints",
    "DataSpec",
    "FabricSpec",
    "GlobalBatch",
    "Goal",
    "HardwareSpec",
    "Job",
    "LoraSpec",
    "NetworkSpec",
    "StrategySpec",
    "LAYOUT_DETAIL_FIELDS",
    "LAYOUT_FIELDS",
    "STACK_OPTION_FIELDS",
    "load_job",
    "read_mapping",
    "stated_stack_options",
]
