"""The plan's build-out: the cluster behind a recommended configuration.

One module per block of the plan (bom, node, network, storage, facility, software, risks, acceptance, phases,
rules_of_thumb), each a pure function of a `BuildInput` (inputs.py) returning a pydantic block model. Rules
(counts, ratios, distances, lead times) come from `trainsizer/plan/data/*.yaml`, each with a source id from the
catalog's source registry; parts and prices come from the catalog (`parts`, `switches`, `prices`).
`build_plan` (assemble.py) runs them all.
"""

from trainsizer.plan.buildout.assemble import BuildOut, build_blocks, build_plan
from trainsizer.plan.buildout.inputs import BuildInput, build_input

__all__ = ["BuildInput", "BuildOut", "build_blocks", "build_input", "build_plan"]
