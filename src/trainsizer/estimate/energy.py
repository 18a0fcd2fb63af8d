"""Energy of a training run.

- GPU draw = TDP x (idle_fraction + (1 - idle_fraction) x utilisation): board power rises roughly linearly
  with tensor-core activity between idle and TDP (Patel et al. 2024 "Characterizing Power Management
  Opportunities for LLMs in the Cloud": training draws near TDP; idle ~ 0.2-0.3 TDP).
- Node overhead (CPUs, NICs, fans, memory) = `node_overhead_fraction` of GPU power (DGX H100: 10.2 kW
  max for 8 x 700 W GPUs -> ~0.8 of GPU TDP at max; sustained lower).
- Facility: x PUE (Patterson et al. 2021 "Carbon emissions and large neural network training": PUE 1.1-1.6).
- kWh = GPUs x per-GPU facility power x hours / 1000.

The defaults (idle fraction, node overhead) live in `data/energy_constants.yaml` with their sources; PUE where
the job's catalog gives none is the built-in catalog's facility `pue` figure (`default_pue`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from trainsizer.errors import SpecError
from trainsizer.messages import msg


@lru_cache(maxsize=1)
def load_energy_constants() -> dict[str, Any]:
    """The shipped energy constants (cached; yaml is imported here so `import trainsizer.estimate` stays light)."""
    import yaml

    text = resources.files("trainsizer.estimate").joinpath("data/energy_constants.yaml").read_text()
    return yaml.safe_load(text)


def default_pue() -> float:
    """PUE where the job's catalog gives none: the built-in catalog's facility `pue` figure, its typical value
    (facility.yaml, with its sources), so the fallback is that figure and not a copy of it."""
    from trainsizer.catalog.catalog import load_catalog

    return float(load_catalog().facility.pue.mid)


@dataclass(frozen=True)
class Energy:
    kwh: float
    avg_power_kw: float  # facility power while training
    gpu_power_w: float  # per GPU board power assumed

    def to_dict(self) -> dict[str, float]:
        return {"kwh": self.kwh, "avg_power_kw": self.avg_power_kw, "gpu_power_w": self.gpu_power_w}


def gpu_power_w(tdp_w: float, utilisation: float, idle_fraction: float | None = None) -> float:
    """Board power at a given compute utilisation (0..1, e.g. MFU/0.6 clipped, or 1 for 'busy')."""
    if idle_fraction is None:
        idle_fraction = float(load_energy_constants()["idle_fraction"])
    u = min(max(utilisation, 0.0), 1.0)
    return tdp_w * (idle_fraction + (1.0 - idle_fraction) * u)


def energy(gpus: int, wall_hours: float, tdp_w: float, *, utilisation: float = 0.9, pue: float | None = None,
           node_overhead_fraction: float | None = None, idle_fraction: float | None = None) -> Energy:
    """Facility energy (kWh) of `gpus` GPUs running for `wall_hours`; None takes the shipped constant."""
    k = load_energy_constants()
    pue = default_pue() if pue is None else pue
    if node_overhead_fraction is None:
        node_overhead_fraction = float(k["node_overhead_fraction"])
    if pue < 1.0:
        raise SpecError("energy.pue", msg("energy_pue_at_least_1"), value=pue)
    if tdp_w <= 0:
        raise SpecError("system.tdp_w", msg("spec_gt", limit=0), value=tdp_w)
    g = gpu_power_w(tdp_w, utilisation, idle_fraction)
    per_gpu_facility_w = g * (1.0 + node_overhead_fraction) * pue
    kw = gpus * per_gpu_facility_w / 1000.0
    return Energy(kw * wall_hours, kw, g)
