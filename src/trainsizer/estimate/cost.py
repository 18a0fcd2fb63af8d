"""Money: renting GPU-hours, or buying hardware and paying for its power.

- Rent: GPU-hours x $/GPU-hour (cloud list or contract price; the caller passes it).
- Buy: capex amortised straight-line over `years` (share used by this job = job hours / (years x 8760 h x
  utilisation)) + energy x $/kWh (energy.py). Straight-line amortisation: standard TCO practice
  (e.g. SemiAnalysis / Epoch "cost of training" methodology).
"""

from __future__ import annotations

from dataclasses import dataclass

from trainsizer.errors import SpecError

HOURS_PER_YEAR = 8760.0


@dataclass(frozen=True)
class Cost:
    total_usd: float
    compute_usd: float  # rent, or amortised capex
    energy_usd: float
    mode: str

    def to_dict(self) -> dict[str, float | str]:
        return {"mode": self.mode, "total_usd": self.total_usd, "compute_usd": self.compute_usd,
                "energy_usd": self.energy_usd}


def rent_cost(gpu_hours: float, usd_per_gpu_hour: float) -> Cost:
    """Cloud rental: GPU-hours x price (energy is in the price)."""
    if usd_per_gpu_hour < 0:
        raise SpecError("price.usd_per_gpu_hour", "must be >= 0", value=usd_per_gpu_hour)
    c = gpu_hours * usd_per_gpu_hour
    return Cost(c, c, 0.0, "rent")


def buy_cost(wall_hours: float, capex_usd: float, energy_kwh: float, usd_per_kwh: float, *, years: float = 4.0,
             utilisation: float = 1.0) -> Cost:
    """Ownership: capex x job hours / (years x 8760 x utilisation) + energy x $/kWh.

    `capex_usd` is the whole cluster (servers, network, storage) the job occupies; `utilisation` the share of
    the amortisation period the cluster does paid work (1.0 = charge the job only for its own hours).
    """
    if years <= 0:
        raise SpecError("cost.years", "amortisation period must be positive", value=years)
    if not 0 < utilisation <= 1:
        raise SpecError("cost.utilisation", "must be in (0, 1]", value=utilisation)
    amort = capex_usd * wall_hours / (years * HOURS_PER_YEAR * utilisation)
    energy = energy_kwh * usd_per_kwh
    return Cost(amort + energy, amort, energy, "buy")
