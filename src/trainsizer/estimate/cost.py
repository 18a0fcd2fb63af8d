"""Money: renting GPU-hours, or buying hardware and paying for its power.

Amounts are in whatever currency the prices are in (the caller passes prices and names the currency).
- Rent: GPU-hours x price per GPU-hour (cloud list or contract price).
- Buy: capex amortised straight-line over `years` (share used by this job = job hours / (years x 8760 h x
  utilisation)) + energy x price per kWh (energy.py). Straight-line amortisation: standard TCO practice
  (e.g. SemiAnalysis / Epoch "cost of training" methodology).
"""

from __future__ import annotations

from dataclasses import dataclass

from trainsizer.errors import SpecError
from trainsizer.messages import msg

HOURS_PER_YEAR = 8760.0


@dataclass(frozen=True)
class Cost:
    total: float
    compute: float  # rent, or amortised capex
    energy: float
    mode: str
    currency: str = "USD"

    def to_dict(self) -> dict[str, float | str]:
        return {"mode": self.mode, "currency": self.currency, "total": self.total, "compute": self.compute,
                "energy": self.energy}


def rent_cost(gpu_hours: float, price_per_gpu_hour: float, currency: str = "USD") -> Cost:
    """Cloud rental: GPU-hours x price (energy is in the price)."""
    if price_per_gpu_hour < 0:
        raise SpecError("price.per_gpu_hour", msg("spec_ge", limit=0), value=price_per_gpu_hour)
    c = gpu_hours * price_per_gpu_hour
    return Cost(c, c, 0.0, "rent", currency)


def billed_gpu_hours(gpus: int, wall_hours: float, billed_gpus: int | None = None,
                     min_hours: float | None = None) -> float:
    """GPU-hours a rental bills: whole units of `billed_gpus` (a node, a superchip, a rack) for the job's wall
    hours or the shortest term `min_hours` (a monthly contract), whichever is longer: a 10-hour job on a node
    rented by the month pays the month. Without either it is gpus x wall hours (on-demand, per GPU-hour)."""
    unit = billed_gpus or 1
    return -(-gpus // unit) * unit * max(wall_hours, min_hours or 0.0)


def host_unit_gpus(gpus: int, per_host: int, unit: int | None) -> int:
    """GPUs a rental by units of `unit` GPUs taken on each host pays for: a unit never spans hosts, so a job of
    `per_host` GPUs a host rents ceil(per_host / unit) units on each (a GB200 tray's 2 superchips of 2 GPUs: a job of
    3 GPUs a tray rents both, 4 GPUs; an 8-GPU node on contract: 4 GPUs a node rent the node's 8). `gpus` not a
    multiple of `per_host` leaves its rest on one more host."""
    unit, per_host = unit or 1, max(1, min(per_host, gpus))
    full, rest = divmod(gpus, per_host)
    return (full * -(-per_host // unit) + -(-rest // unit)) * unit


def committed_terms(gpus: int, wall_hours: float, on_demand_gpu_hours: float, on_demand_rate: float,
                    term_rate: float, term_hours: float) -> tuple[int, float]:
    """(whole committed terms reserved, GPU-hours still rented on demand): the cheapest of all on demand, the whole
    terms the job fills with the rest of its hours on demand, and whole terms covering all of it. A reservation bills
    its whole term (`term_hours`, a 1-year contract 8,760 h) used or not, so an 11-month job reserves a year when
    2.35 x 12 < 2.95 x 11 per GPU, and a 13-month job reserves one year and rents its last month on demand."""
    options = [(0, on_demand_gpu_hours)]
    if term_hours > 0 and wall_hours > 0:
        whole = int(wall_hours // term_hours)
        if whole >= 1:
            options.append((whole, gpus * (wall_hours - whole * term_hours)))
        options.append((whole + (1 if wall_hours > whole * term_hours else 0), 0.0))
    return min(options, key=lambda o: (gpus * o[0] * term_hours * term_rate + o[1] * on_demand_rate, o[0]))


def buy_cost(wall_hours: float, capex: float, energy_kwh: float, price_per_kwh: float, *, years: float = 4.0,
             utilisation: float = 1.0, currency: str = "USD") -> Cost:
    """Ownership: capex x job hours / (years x 8760 x utilisation) + energy x price per kWh.

    `capex` is the whole cluster (servers, network, storage) the job occupies; `utilisation` the share of
    the amortisation period the cluster does paid work (1.0 = charge the job only for its own hours).
    """
    if years <= 0:
        raise SpecError("cost.years", msg("cost_years_positive"), value=years)
    if not 0 < utilisation <= 1:
        raise SpecError("cost.utilisation", msg("spec_in_unit_interval"), value=utilisation)
    amort = capex * wall_hours / (years * HOURS_PER_YEAR * utilisation)
    energy = energy_kwh * price_per_kwh
    return Cost(amort + energy, amort, energy, "buy", currency)
