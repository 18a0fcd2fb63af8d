"""Job input: the pydantic models of a job file and their loader."""

from trainsizer.spec.job import (
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
    "load_job",
    "read_mapping",
]
